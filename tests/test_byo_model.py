"""Bring your own model: `--model package.module:factory` with the worked example in
examples/byo_model.py (a plain torch module wrapped in about 20 lines), run on Sudoku; a model
without what a strategy needs, and bad import specs, are one-line errors before any decoding."""
import json

import pytest

from bench.cli import main
from conftest import ROOT, run_cli


def test_a_wrapped_torch_module_runs_through_bench_run(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "examples"))   # as PYTHONPATH=examples would
    proc = run_cli("run", "--tasks", "sudoku", "--model", "byo_model:make_model", "--strategies", "topk:k=3,eb",
                 "--limit", 3, "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    summaries = [json.loads(p.read_text()) for p in (tmp_path / "sudoku").glob("*[0-9a-f].json")]
    assert len(summaries) == 2
    for summary in summaries:
        assert summary["config"]["task_options"]["model"] == "byo_model:make_model"
        assert summary["config"]["model_id"].startswith("tiny-") and summary["model"]["n_params"] > 0
        assert summary["n_samples"] == 3
    assert "model tiny-" in proc.stderr


@pytest.mark.parametrize("model,strategy,message", [
    ("byo_model:make_model_without_hidden", "mi", "strategy mi needs hidden states, and the model tiny-"),
    ("byo_model:make_model_without_hidden", "learned", "strategy learned needs hidden states"),
    ("byo_model:make_model", "mi", "MI estimator"),   # hidden states, but no estimator trained for it
    ("byo_model:no_such_factory", "topk", "byo_model has no attribute 'no_such_factory'"),
    ("no_such_module:make", "topk", "cannot import no_such_module"),
    ("byo_model:TinyDenoiser", "topk", "the factory raised TypeError"),
    ("not a spec:x y", "topk", "no such file, and not an import spec"),
])
def test_what_a_model_lacks_is_one_line_before_decoding(tmp_path, monkeypatch, capsys, model, strategy, message):
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    code = main(["run", "--tasks", "sudoku", "--model", model, "--strategies", strategy, "--limit", "2",
                 "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1
    assert not list(tmp_path.rglob("*.jsonl"))   # nothing was decoded
