"""Sapiens as the antibody task's second model: the fairseq RoBERTa checkpoints renamed onto
transformers' RobertaForMaskedLM (tasks/antibody/sapiens.py) give the logits of fairseq's own
forward pass, written here from the architecture in plain torch (``fairseq_logits``).

Tolerance: 1e-4 absolute on the logits (float32; the two computations differ only in the order
of their floating-point operations, about 1e-6 apart). The real weights' test needs them in the
cache (`python -m bench data sapiens`) and skips without them, except where
UNMASK_BENCH_REQUIRE_ANTIBODY is set; the tests on tiny random fairseq-shaped checkpoints always run.
"""
import argparse
import os

import pytest
import torch
import torch.nn.functional as F

from bench.errors import BenchError
from bench.hf import load_hf_model
from conftest import needs_antibody_extra
from tasks.antibody.sapiens import (
    CHECKPOINTS,
    PREFIX,
    converted_folder,
    hf_state_dict,
    load_sapiens,
    read_checkpoint,
    read_dictionary,
    sapiens_dir,
)
from tasks.antibody.task import CLS_ID, LIGHT_CLS_ID, MASK_ID, PAD_ID, SEP_ID, VALUE_IDS, AntibodyTask

TOLERANCE = 1e-4
LETTERS = "ACDEFGHIKLMNPQRSTVWY"
HEAVY = "EVQLVESGGGLVQPGGSLRLSCAASGFTFSSYAMSWVRQAPGKGLEWVSAISGSGGSTYYADSVKGRFTISRDNSKNTLYLQMNSLRAEDTAVYYCAK"
LIGHT = "DIQMTQSPSSLSASVGDRVTITCRASQSISSYLNWYQQKPGKAPKLLIYAASSLQSGVPSRFSGSGSGTDFTLTISSLQPEDFATYYCQQSYSTP"


def fairseq_logits(state, tokens, heads, pad=1):
    """[B, T, vocab] logits of fairseq's RoBERTa (TransformerSentenceEncoder + RobertaLMHead) for
    fairseq token ids: learned positions counted from the padding index + 1 (padding keeps the
    padding index), LayerNorm on the embeddings' sum, padding zeroed, post-LN layers whose
    attention ignores padded keys, and the LM head over the tied token embeddings."""
    def norm(x, name):
        return F.layer_norm(x, x.shape[-1:], state[f"{name}.weight"], state[f"{name}.bias"], eps=1e-5)

    def linear(x, name):
        return F.linear(x, state[f"{name}.weight"], state[f"{name}.bias"])

    padding = tokens.eq(pad)
    kept = (~padding).long()
    positions = torch.cumsum(kept, 1) * kept + pad
    x = state[f"{PREFIX}embed_tokens.weight"][tokens] + state[f"{PREFIX}embed_positions.weight"][positions]
    x = norm(x, f"{PREFIX}emb_layer_norm") * kept.unsqueeze(-1)
    batch, length, width = x.shape
    n_layers = 1 + max(int(k.split(".")[3]) for k in state if k.startswith(f"{PREFIX}layers."))
    for i in range(n_layers):
        layer = f"{PREFIX}layers.{i}."

        def split(t):
            return t.view(batch, length, heads, width // heads).transpose(1, 2)
        q = split(linear(x, layer + "self_attn.q_proj") * (width // heads) ** -0.5)
        k, v = split(linear(x, layer + "self_attn.k_proj")), split(linear(x, layer + "self_attn.v_proj"))
        weights = (q @ k.transpose(-1, -2)).masked_fill(padding[:, None, None, :], float("-inf")).softmax(-1)
        attended = (weights @ v).transpose(1, 2).reshape(batch, length, width)
        x = norm(x + linear(attended, layer + "self_attn.out_proj"), layer + "self_attn_layer_norm")
        x = norm(x + linear(F.gelu(linear(x, layer + "fc1")), layer + "fc2"), layer + "final_layer_norm")
    head = norm(F.gelu(linear(x, "decoder.lm_head.dense")), "decoder.lm_head.layer_norm")
    return F.linear(head, state["decoder.lm_head.weight"]) + state["decoder.lm_head.bias"]


def tiny_state(seed, layers=2, width=16, ffn=32, positions=64, vocab=25):
    """A random fairseq RoBERTa state dict of the checkpoints' layout (LM head tied)."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape):
        return torch.randn(*shape, generator=g) * 0.5
    state = {f"{PREFIX}embed_tokens.weight": r(vocab, width), f"{PREFIX}embed_positions.weight": r(positions, width),
             f"{PREFIX}emb_layer_norm.weight": 1 + r(width), f"{PREFIX}emb_layer_norm.bias": r(width)}
    for i in range(layers):
        layer = f"{PREFIX}layers.{i}."
        for name, (out, inp) in {"self_attn.q_proj": (width, width), "self_attn.k_proj": (width, width),
                                 "self_attn.v_proj": (width, width), "self_attn.out_proj": (width, width),
                                 "fc1": (ffn, width), "fc2": (width, ffn)}.items():
            state[f"{layer}{name}.weight"], state[f"{layer}{name}.bias"] = r(out, inp), r(out)
        for name in ("self_attn_layer_norm", "final_layer_norm"):
            state[f"{layer}{name}.weight"], state[f"{layer}{name}.bias"] = 1 + r(width), r(width)
    state.update({"decoder.lm_head.weight": state[f"{PREFIX}embed_tokens.weight"], "decoder.lm_head.bias": r(vocab),
                  "decoder.lm_head.dense.weight": r(width, width), "decoder.lm_head.dense.bias": r(width),
                  "decoder.lm_head.layer_norm.weight": 1 + r(width), "decoder.lm_head.layer_norm.bias": r(width)})
    return state


def write_checkpoints(folder, heads=4):
    """A tiny heavy and light checkpoint (different weights) and dict.txt in ``folder``."""
    args = argparse.Namespace(encoder_attention_heads=heads, activation_fn="gelu", arch="roberta_small")
    states = {chain: tiny_state(seed) for seed, chain in enumerate(CHECKPOINTS)}
    for chain, name in CHECKPOINTS.items():
        torch.save({"args": args, "model": states[chain], "optimizer_history": []}, folder / name)
    (folder / "dict.txt").write_text("".join(f"{a} 1\n" for a in LETTERS))
    return states


def task_rows(sequences, starts):
    """Task-id rows <cls> residues <eos> then padding, a few residues of each masked."""
    width = max(map(len, sequences)) + 2
    tokens = torch.full((len(sequences), width), PAD_ID)
    masked = torch.zeros_like(tokens, dtype=torch.bool)
    for row, (seq, start) in enumerate(zip(sequences, starts)):
        tokens[row, 0], tokens[row, len(seq) + 1] = start, SEP_ID
        tokens[row, 1:len(seq) + 1] = VALUE_IDS[[LETTERS.index(a) for a in seq]]
        masked[row, 1 + row:len(seq) + 1:3] = True
    return tokens.masked_fill(masked, MASK_ID), masked


def reference(state, model, tokens, masked, heads):
    """fairseq's logits of the task rows, at the model's value ids, padding set to zero."""
    ids = model.id_table[tokens].masked_fill(masked, model.mask_id)
    logits = fairseq_logits(state, ids, heads)[..., model.model_values]
    return logits * (tokens != PAD_ID).unsqueeze(-1)


def sapiens_symbols():
    return AntibodyTask(model="sapiens").symbols()


def test_the_key_map_gives_fairseq_s_logits_on_a_tiny_random_checkpoint(tmp_path):
    states = write_checkpoints(tmp_path)
    sequences = [LETTERS * 2, LETTERS[::-1], "MKV" * 11]
    tokens, masked = task_rows(sequences, [CLS_ID] * 3)
    for chain in CHECKPOINTS:
        model = load_hf_model(converted_folder(chain, tmp_path), sapiens_symbols())
        logits = model(tokens, masked).logits * (tokens != PAD_ID).unsqueeze(-1)
        assert float((logits - reference(states[chain], model, tokens, masked, 4)).abs().max()) < TOLERANCE
        assert logits.abs().max() > 1    # random weights: the comparison is not of zeros


def test_each_row_goes_to_its_chain_s_network_in_the_rows_order(tmp_path):
    states = write_checkpoints(tmp_path)
    model = load_sapiens(sapiens_symbols(), CLS_ID, LIGHT_CLS_ID, source=tmp_path)
    starts = [LIGHT_CLS_ID, CLS_ID, CLS_ID, LIGHT_CLS_ID]
    tokens, masked = task_rows([LETTERS, "MKV" * 9, LETTERS[5:], "W" * 12], starts)
    out = model(tokens, masked)
    light, heavy = model.starts[LIGHT_CLS_ID], model.starts[CLS_ID]
    for rows, chain, network in (([0, 3], "light", light), ([1, 2], "heavy", heavy)):
        expected = reference(states[chain], network, tokens[rows], masked[rows], 4)
        got = out.logits[rows] * (tokens[rows] != PAD_ID).unsqueeze(-1)
        assert float((got - expected).abs().max()) < TOLERANCE
    assert model.n_params == sum(v.numel() for state in states.values() for k, v in state.items()
                                 if k != "decoder.lm_head.weight")   # tied: counted once
    with pytest.raises(BenchError, match="names no chain"):
        model(tokens.index_fill(1, torch.tensor([0]), SEP_ID), masked)


def test_a_checkpoint_that_is_not_a_fairseq_roberta_is_one_line(tmp_path):
    state = tiny_state(0)
    with pytest.raises(BenchError, match="untied"):
        hf_state_dict({**state, "decoder.lm_head.weight": state["decoder.lm_head.weight"] + 1})
    with pytest.raises(BenchError, match="lacks decoder.lm_head.bias"):
        hf_state_dict({k: v for k, v in state.items() if k != "decoder.lm_head.bias"})
    (tmp_path / "junk.pt").write_bytes(b"not a pickle")
    with pytest.raises(BenchError, match="not a fairseq checkpoint") as err:
        read_checkpoint(tmp_path / "junk.pt")
    assert "\n" not in str(err.value)
    with pytest.raises(BenchError, match="bench data sapiens"):
        converted_folder("heavy", tmp_path)


def real_weights():
    """The fetched Sapiens folder, or a skip (a failure where UNMASK_BENCH_REQUIRE_ANTIBODY is set)."""
    folder = sapiens_dir()
    if not all((folder / name).is_file() for name in (*CHECKPOINTS.values(), "dict.txt")):
        if os.environ.get("UNMASK_BENCH_REQUIRE_ANTIBODY"):
            pytest.fail(f"no Sapiens weights in {folder}: python -m bench data sapiens")
        pytest.skip("Sapiens' weights are not in the cache: python -m bench data sapiens")
    return folder


def test_sapiens_converted_gives_fairseq_s_logits_on_human_chains():
    folder = real_weights()
    assert read_dictionary(folder / "dict.txt") == ["<s>", "<pad>", "</s>", "<unk>", *LETTERS, "<mask>"]
    model = load_sapiens(sapiens_symbols(), CLS_ID, LIGHT_CLS_ID)
    tokens, masked = task_rows([HEAVY, LIGHT, HEAVY[:60], LIGHT[10:]], [CLS_ID, LIGHT_CLS_ID, CLS_ID, LIGHT_CLS_ID])
    out = model(tokens, masked)
    for rows, chain, start in (([0, 2], "heavy", CLS_ID), ([1, 3], "light", LIGHT_CLS_ID)):
        args, state = read_checkpoint(folder / CHECKPOINTS[chain])
        expected = reference(state, model.starts[start], tokens[rows], masked[rows], args.encoder_attention_heads)
        got = out.logits[rows] * (tokens[rows] != PAD_ID).unsqueeze(-1)
        assert float((got - expected).abs().max()) < TOLERANCE
    # the model is Sapiens, not noise: a sixth of a human VH masked, nearly all of it comes back
    guess = VALUE_IDS[out.logits[0].argmax(-1)]
    truth = task_rows([HEAVY], [CLS_ID])[0][0]
    truth[1:len(HEAVY) + 1] = VALUE_IDS[[LETTERS.index(a) for a in HEAVY]]
    assert float((guess[masked[0]] == truth[masked[0]]).float().mean()) > 0.8
    assert model.n_params == 568_857 + 566_809    # heavy + light, fairseq's count (LM head tied)


@needs_antibody_extra
def test_sapiens_reads_the_human_domains_with_light_chains_marked():
    task = AntibodyTask(model="sapiens")
    eval_set = task.eval_set()
    chosen = eval_set.extras["domains"]
    assert {d.species for d in chosen} == {"human"} and len(chosen) == 60
    assert len(AntibodyTask(data="validation", model="sapiens").eval_set().extras["domains"]) == 70
    starts = eval_set.tokens[:, 0].tolist()
    assert starts == [CLS_ID if d.chain == "H" else LIGHT_CLS_ID for d in chosen]
    assert task.missing() == [] and "sapiens==1.0.5" in task.config()["model"]
    assert AntibodyTask().eval_set(limit=8).tokens[:, 0].eq(CLS_ID).all()   # AntiBERTy's rows unchanged


@needs_antibody_extra
def test_sapiens_helpers_read_its_own_folder_and_chain_starts():
    from tasks.antibody.helpers import mi_contexts, order_examples
    task, base = AntibodyTask(model="sapiens"), AntibodyTask()
    assert task.weights_dir == base.weights_dir / "sapiens" and task.helper_flags() == " --model sapiens"
    assert base.helper_flags() == "" and base.mi_probe == 2 and task.mi_probe == 8
    assert task.order_training["init_gamma"] != base.order_training["init_gamma"]
    x0, start, region = order_examples(chain_starts=True)
    assert set(x0[:, 0].tolist()) == {CLS_ID, LIGHT_CLS_ID} and order_examples()[0][:, 0].eq(CLS_ID).all()

    class Frozen:   # mi_contexts' visited states need a model: one that always predicts alanine
        value_tokens = VALUE_IDS

        def __call__(self, tokens, masked):
            logits = torch.full((*tokens.shape, len(VALUE_IDS)), -9.0)
            logits[..., 0] = 9.0
            return type("Out", (), {"logits": logits, "hidden": None})()
    tokens, masked = mi_contexts(Frozen(), "heldout", 4, torch.Generator().manual_seed(0), ("human",), True)
    assert tokens.shape[0] == 4 and masked.any(1).all()
    assert set(tokens[:, 0].tolist()) <= {CLS_ID, LIGHT_CLS_ID}


def test_sapiens_tiers_run_every_human_domain_and_every_family():
    from bench.presets import plan
    from bench.registry import parse_strategy
    test, = plan("default", "antibody", model="sapiens", out="elsewhere")
    validation, = plan("validation", "antibody", model="sapiens", out="elsewhere_v")
    antiberty, = plan("default", "antibody")
    assert test.limit == 60 and validation.limit == 70 and antiberty.limit == 48   # every human domain
    assert validation.data == "validation" and test.specs == validation.specs
    families = {parse_strategy(spec).name for spec in test.specs}
    assert {"mi", "mi_eb", "learned", "dus", "remdm", "rcr", "dplm", "klass", "pc_sampler", "factor_rule",
            "p2", "prophet", "saber", "credit"} <= families
    assert plan("default", "antibody", model="hf:/some/folder")[0].specs == antiberty.specs   # no tiers of its own
