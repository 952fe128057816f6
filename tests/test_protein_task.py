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


def esm_esmc(d_model, n_heads, n_layers):
    """esm's own ESMC module (the class published weights are saved from)."""
    from esm.models.esmc import ESMC
    from esm.tokenization import get_esmc_model_tokenizers
    return ESMC(d_model=d_model, n_heads=n_heads, n_layers=n_layers, tokenizer=get_esmc_model_tokenizers(),
                use_flash_attn=False)


@pytest.fixture
def tiny_published(monkeypatch):
    """Register a tiny 'published' ESM-C: esm's ESMC module, its weights a plain state dict like esmc_300m's."""
    monkeypatch.setitem(protein_model.PUBLISHED, "esmc_tiny",
                        (64, 4, 2, "EvolutionaryScale/esmc-tiny", "data/weights/esmc_tiny_v0.pth"))
    torch.manual_seed(1)
    return esm_esmc(**TINY)


def test_the_network_computes_what_esms_esmc_computes_bit_for_bit(tiny_published):
    ours = build_esmc(**TINY).eval()
    ours.load_state_dict(tiny_published.state_dict())    # strict: the same module names
    tokens, residue = encode(["MKV" * 20, "ACDEFGHIKLMNPQRSTVWY" * 2])
    tokens = tokens.masked_fill(residue & (torch.arange(tokens.shape[1]) % 3 == 0), protein_model.MASK_ID)
    with torch.inference_mode():
        expected = tiny_published.eval()(sequence_tokens=tokens)
        logits, hidden = ours(tokens)
    assert torch.equal(logits, expected.sequence_logits) and torch.equal(torch.stack(hidden), expected.hidden_states)


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
        result = decode(model, eval_set.tokens, eval_set.masked, parse_strategy("topk:k=12"), 1.0, seed=seed)
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


def test_the_written_out_token_ids_are_those_of_esms_tokenizer_and_importing_the_task_imports_no_esm():
    import subprocess
    import sys

    from esm.tokenization import get_esmc_model_tokenizers
    tokens = get_esmc_model_tokenizers()
    assert (tokens.mask_token_id, tokens.pad_token_id, tokens.cls_token_id, tokens.eos_token_id) == (
        protein_model.MASK_ID, protein_model.PAD_ID, protein_model.BOS_ID, protein_model.EOS_ID)
    assert [tokens.convert_tokens_to_ids(aa) for aa in "ACDEFGHIKLMNPQRSTVWY"] == protein_model.AA_IDS.tolist()
    code = "import sys; import tasks.protein.task; print('esm' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=__import__("conftest").ROOT)
    assert result.stdout.strip() == "False"


def test_a_vocabulary_numbered_otherwise_is_a_one_line_error():
    from esm.utils.constants.esm3 import SEQUENCE_VOCAB
    protein_model.check_token_ids(SEQUENCE_VOCAB)
    swapped = list(SEQUENCE_VOCAB)
    swapped[4], swapped[5] = swapped[5], swapped[4]            # L and A trade ids
    with pytest.raises(BenchError, match="esm==3.2.1") as err:
        protein_model.check_token_ids(swapped)
    assert "\n" not in str(err.value)
