"""`--model hf:PATH`: any Hugging Face masked LM in a local folder, read through a task's symbols.
Tiny random BERT and ESM checkpoints made here stand for AntiBERTy, ESM-2 or DPLM on a user's disk:
their logits are the network's own at the task's values, and they decode the protein and the
antibody task through the real CLI."""
import json
import sys
from pathlib import Path

import pytest
import torch

from bench.errors import BenchError
from bench.hf import load_hf_model
from bench.models import load_model
from conftest import needs_antibody_extra, run_cli
from tasks.antibody.task import AntibodyTask

transformers = pytest.importorskip("transformers")
ROOT = Path(__file__).resolve().parent.parent
AMINO = list("ACDEFGHIKLMNPQRSTVWY")


def tiny_bert(folder):
    """A random 1-layer BERT with AntiBERTy's vocabulary layout, and its tokenizer's vocab.txt."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + AMINO
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=512, pad_token_id=0)
    transformers.BertForMaskedLM(config).save_pretrained(folder)
    transformers.BertTokenizer(vocab_file=str(folder / "vocab.txt"), do_lower_case=False).save_pretrained(folder)
    return folder


def tiny_esm(folder):
    """A random 1-layer ESM-2-shaped masked LM with ESM's vocabulary and tokenizer."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["<cls>", "<pad>", "<eos>", "<unk>"] + list("LAGVSERTIDPKQNFYMHWCXBUZO") + [".", "-", "<null_1>", "<mask>"]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    torch.manual_seed(0)
    config = transformers.EsmConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                    intermediate_size=32, max_position_embeddings=1026, pad_token_id=1,
                                    mask_token_id=32, position_embedding_type="rotary", token_dropout=False)
    transformers.EsmForMaskedLM(config).save_pretrained(folder)
    transformers.EsmTokenizer(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {"bert": tiny_bert(root / "bert"), "esm": tiny_esm(root / "esm")}


@pytest.mark.parametrize("kind", ["bert", "esm"])
def test_logits_are_the_network_s_own_at_the_task_s_values(checkpoints, kind):
    task = AntibodyTask()
    model = load_hf_model(checkpoints[kind], task.symbols())
    eval_set = task.eval_set(limit=3)
    out = model(eval_set.tokens, eval_set.masked)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(checkpoints[kind]))
    network = transformers.AutoModelForMaskedLM.from_pretrained(str(checkpoints[kind])).eval()
    roles = {0: tokenizer.pad_token, 2: tokenizer.cls_token, 3: tokenizer.sep_token or tokenizer.eos_token,
             4: tokenizer.mask_token, **{5 + i: a for i, a in enumerate(AMINO)}}
    ids = torch.tensor([[tokenizer.convert_tokens_to_ids(roles[int(t)]) for t in row] for row in eval_set.tokens])
    with torch.no_grad():
        direct = network(input_ids=ids, attention_mask=(ids != tokenizer.pad_token_id).long()).logits
    values = [tokenizer.convert_tokens_to_ids(a) for a in AMINO]
    assert out.logits.shape == (3, eval_set.tokens.shape[1], 20) and out.hidden.shape[:2] == eval_set.tokens.shape
    assert torch.allclose(out.logits, direct[..., values], atol=1e-5)
    assert model.checkpoint_id.startswith("hf-") and model.n_params > 0


def test_a_folder_without_a_model_or_a_vocabulary_without_the_values_is_one_line(tmp_path, checkpoints):
    with pytest.raises(BenchError, match="no folder with a config.json"):
        load_hf_model(tmp_path, AntibodyTask().symbols())
    with pytest.raises(BenchError, match="has no token for 'Z'"):
        load_hf_model(checkpoints["bert"], {**AntibodyTask().symbols(), 30: "Z"})


def test_the_model_spec_dispatches_and_is_kept_for_the_run_config(checkpoints):
    task = AntibodyTask()
    model = load_model(task, f"hf:{checkpoints['bert']}")
    assert task.model_spec == f"hf:{checkpoints['bert']}" and model.vocab_size == 20


@needs_antibody_extra
def test_a_tiny_bert_decodes_the_antibody_task_through_the_cli(checkpoints, tmp_path):
    proc = run_cli("run", "--tasks", "antibody", "--model", f"hf:{checkpoints['bert']}", "--strategies",
               "topk:k=40,eb:gamma=1", "--limit", "2", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    summaries = [json.loads(p.read_text()) for p in tmp_path.rglob("*.json")]
    assert len(summaries) == 2
    for summary in summaries:
        assert summary["config"]["task_options"]["model"] == f"hf:{checkpoints['bert']}"
        assert summary["model"]["id"].startswith("hf-") and summary["n_samples"] == 2


def test_a_tiny_esm_decodes_protein_inputs_into_amino_acids(checkpoints):
    """The protein task's ESM ids through an ESM-2-shaped checkpoint's own vocabulary (scoring the
    sequences needs the judge, which the protein task's tests cover)."""
    from bench.decode import decode
    from bench.registry import parse_strategy
    from tasks.protein.task import ProteinTask
    task = ProteinTask()
    model = load_model(task, f"hf:{checkpoints['esm']}")
    eval_set = task.eval_set(limit=2)
    result = decode(model, eval_set.tokens, eval_set.masked, parse_strategy("topk:k=40"))
    written = result.tokens[eval_set.masked]
    assert bool(torch.isin(written, model.value_tokens).all()) and int(result.passes.max()) > 1
    assert torch.equal(result.tokens[~eval_set.masked], eval_set.tokens[~eval_set.masked])


def test_more_rows_than_one_call_takes_give_the_same_outputs(checkpoints, monkeypatch):
    """Exact MI by probing asks for thousands of rows: they run MAX_ROWS at a time, with the
    outputs of one call."""
    import bench.hf
    task = AntibodyTask()
    model = load_hf_model(checkpoints["bert"], task.symbols())
    eval_set = task.eval_set(limit=5)
    whole = model(eval_set.tokens, eval_set.masked)
    monkeypatch.setattr(bench.hf, "MAX_ROWS", 2)
    parts = model(eval_set.tokens, eval_set.masked)
    assert torch.allclose(whole.logits, parts.logits, atol=1e-5)
    assert torch.allclose(whole.hidden, parts.hidden, atol=1e-5)


@needs_antibody_extra
def test_the_antibody_helpers_contexts_come_from_the_right_source(checkpoints):
    """MI contexts of each split (a tiny BERT stands in for AntiBERTy): one width, the mask inside
    the region only, train from the helper species, ood with the region's residues permuted."""
    from tasks.antibody.germlines import HELPER_SPECIES
    from tasks.antibody.helpers import WIDTH, mi_contexts, truth_tokens
    task = AntibodyTask()
    model = load_hf_model(checkpoints["bert"], task.symbols())
    for split in ("train", "heldout", "ood"):
        tokens, masked = mi_contexts(model, split, 20, torch.Generator().manual_seed(0))
        assert tokens.shape == masked.shape == (20, WIDTH) and bool(masked.any(1).all())
        assert bool((tokens[:, 0] == 2).all()) and not bool(masked[:, :2].any())   # [CLS] and IMGT 1 given
    from tasks.antibody.germlines import domains
    helpers = domains("helpers")
    assert {d.species for d in helpers} == set(HELPER_SPECIES)
    x0, region = truth_tokens(helpers[:3])
    assert x0.shape[1] == WIDTH and bool((x0[region] >= 5).all())


def test_a_missing_extra_is_named_by_list_and_stops_a_run_before_any_work(monkeypatch, capsys):
    """Without the antibody extra, `bench list` names the install and `bench run` stops in one
    line (a --model folder needs no AntiBERTy); the other tasks do not need it."""
    import importlib.util

    from bench.commands.list_command import print_tasks
    from bench.run.checks import make_tasks
    from tasks.antibody.germlines import germline_table
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *rest: None if name in ("anarci", "antiberty") else real(name, *rest))
    print_tasks()
    assert "needs: pip install -e '.[antibody]' (not installed: anarci, antiberty)" in capsys.readouterr().out
    with pytest.raises(BenchError, match=r"^task antibody needs anarci, antiberty, not installed: pip install"):
        make_tasks("hmm,antibody", None, None)
    with pytest.raises(BenchError, match=r"^task antibody needs anarci, not installed"):
        make_tasks("antibody", None, "hf:some/folder")
    assert [task.name for task in make_tasks("hmm,sudoku", None, None)] == ["hmm", "sudoku"]
    monkeypatch.setitem(sys.modules, "anarci", None)
    monkeypatch.setitem(sys.modules, "anarci.germlines", None)
    with pytest.raises(BenchError, match=r"ANARCI's germline genes: pip install -e '\.\[antibody\]'"):
        germline_table()
