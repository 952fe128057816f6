import pytest
import torch

from bench.decode import decode
from bench.errors import BenchError
from bench.registry import parse_strategy
from tasks.protein import model as protein_model
from tasks.protein.encoding import decode_sequences, encode
from tasks.protein.model import build_esmc, load_protein_model, save_protein_checkpoint
from tasks.protein.task import ProteinTask

TINY = {"d_model": 64, "n_heads": 4, "n_layers": 2}


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("protein") / "tiny.pt"
    save_protein_checkpoint(path, build_esmc(**TINY), TINY, {"note": "tiny"})
    return path


def test_encoding_round_trip():
    seqs = ["ACDEFGHIKLMNPQRSTVWY", "MKV"]
    tokens, residue = encode(seqs)
    assert tokens.shape == (2, 22) and residue.sum().item() == 23
    assert tokens[0, 0].item() == protein_model.BOS_ID and tokens[1, 4].item() == protein_model.EOS_ID
    assert decode_sequences(tokens, residue) == seqs


def test_model_gives_amino_acid_logits_and_hidden_states(tiny_checkpoint):
    model = load_protein_model(tiny_checkpoint)
    tokens, residue = encode(["MKVLA" * 12, "ACD" * 20])
    out = model(tokens, residue)
    assert out.logits.shape == (2, tokens.shape[1], 20) and out.hidden.shape == (2, tokens.shape[1], 64)
    assert model.meta == {"note": "tiny"}


@pytest.fixture
def tiny_published(monkeypatch):
    """Register a tiny 'published' ESM-C whose weights are a plain state dict, like esmc_300m's."""
    monkeypatch.setitem(protein_model.PUBLISHED, "esmc_tiny",
                        (64, 4, 2, "EvolutionaryScale/esmc-tiny", "data/weights/esmc_tiny_v0.pth"))
    torch.manual_seed(1)
    return build_esmc(**TINY)


def test_published_weights_load_from_a_local_folder(tmp_path, monkeypatch, tiny_published):
    torch.save(tiny_published.state_dict(), tmp_path / "esmc_tiny_v0.pth")
    monkeypatch.setenv("UNMASK_BENCH_ESMC_DIR", str(tmp_path))
    model = load_protein_model("esmc_tiny")
    tokens, residue = encode(["MKV" * 20])
    expected = tiny_published.eval()(sequence_tokens=tokens.masked_fill(residue, 32)).sequence_logits
    assert torch.allclose(model(tokens, residue).logits, expected[..., protein_model.AA_IDS])


def test_published_weights_load_from_the_hugging_face_cache(tmp_path, monkeypatch, tiny_published):
    snapshot = tmp_path / "models--EvolutionaryScale--esmc-tiny" / "snapshots" / "abc123"
    (snapshot / "data" / "weights").mkdir(parents=True)
    torch.save(tiny_published.state_dict(), snapshot / "data" / "weights" / "esmc_tiny_v0.pth")
    (tmp_path / "models--EvolutionaryScale--esmc-tiny" / "refs").mkdir()
    (tmp_path / "models--EvolutionaryScale--esmc-tiny" / "refs" / "main").write_text("abc123")
    monkeypatch.delenv("UNMASK_BENCH_ESMC_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert load_protein_model("esmc_tiny").n_params == sum(p.numel() for p in tiny_published.parameters())


def test_missing_published_weights_say_how_to_provide_them(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv("UNMASK_BENCH_ESMC_DIR", raising=False)
    with pytest.raises(BenchError, match="UNMASK_BENCH_ESMC_DIR") as err:
        load_protein_model("esmc_300m")
    assert "\n" not in str(err.value)


def test_generation_is_deterministic_under_a_seed(tiny_checkpoint):
    task = ProteinTask(model=str(tiny_checkpoint))
    model = task.load_model()
    eval_set = task.eval_set(limit=6, seed=0)
    assert eval_set.masked.any(1).all() and not (eval_set.masked & (eval_set.tokens != 1)).any()

    def generate(seed):
        result = decode(model, eval_set.tokens, eval_set.masked, parse_strategy("topk:k=12"), 1.0, seed)
        return task.records(result.tokens, result.passes, torch.arange(6), eval_set)

    first, again, other = generate(0), generate(0), generate(1)
    assert first == again and first != other
    assert all(set(r["sequence"]) <= set("ACDEFGHIKLMNPQRSTVWY") for r in first)
    assert [r["passes"] for r in first] == [-(-r["length"] // 12) for r in first]


def test_lengths_follow_the_reference_and_the_seed():
    task = ProteinTask()
    lengths = task.eval_set(seed=0).masked.sum(1)
    assert len(lengths) == 500 and 50 <= lengths.min() and lengths.max() <= 100
    assert set(lengths.tolist()) <= {len(s) for s in task.load_reference().sequences}
    assert not torch.equal(lengths, task.eval_set(seed=1).masked.sum(1))


def test_the_written_out_token_ids_are_esms_and_importing_the_task_imports_no_esm():
    import subprocess
    import sys
    tokens = protein_model.tokenizer()   # checks the ids written in tasks/protein/model.py
    assert tokens.mask_token_id == protein_model.MASK_ID and tokens.pad_token_id == protein_model.PAD_ID
    code = "import sys; import tasks.protein.task; print('esm' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=__import__("conftest").ROOT)
    assert result.stdout.strip() == "False"
