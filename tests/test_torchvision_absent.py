"""Issue 52: a torchvision that cannot be imported (PyPI's build beside this torch; `esm` asks for it,
so a re-install brings it back) breaks nothing: transformers' models load as if it were absent."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_broken_torchvision_does_not_break_transformers_models(tmp_path):
    broken = tmp_path / "site" / "torchvision"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise RuntimeError("operator torchvision::nms does not exist")\n')
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from bench.hf import check_torchvision; check_torchvision(); "
            "from transformers import RobertaConfig, RobertaForMaskedLM; "
            "RobertaForMaskedLM(RobertaConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1, "
            "num_attention_heads=2, intermediate_size=16)); print('loaded')")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "site")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "loaded" in proc.stdout, proc.stderr[-2000:]
