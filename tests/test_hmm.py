"""The exact task: exact inference against enumeration, KL through the decode loop, the oracle's
exact MI against probing, and one-line errors for malformed parameter files."""
import itertools
import json

import pytest
import torch

from bench.decode import decode
from bench.errors import BenchError
from bench.registry import load_plugins, parse_strategy
from conftest import run_cli
from strategies.mi.exact import exact_mi, symmetric
from tasks.hmm import chain
from tasks.hmm.chain import DEFAULT_HMM
from tasks.hmm.model import ExactHMMModel
from tasks.hmm.task import HMMTask

load_plugins()


@pytest.fixture(scope="module")
def tiny():
    """A 5-position chain small enough to enumerate (3 states, 3 values: 243 sequences)."""
    hmm = chain.draw_hmm(3, n_states=3, n_values=3, length=5, stay=0.8, emit_concentration=0.5)
    every = torch.tensor(list(itertools.product(range(3), repeat=5)))
    return hmm, every, chain.log_likelihood(hmm, every).exp()


def conditional(every, probs, revealed_values):
    """Enumerated p(x | revealed) as weights over ``every``."""
    keep = torch.ones(len(every), dtype=torch.bool)
    for position, value in revealed_values.items():
        keep &= every[:, position] == value
    weights = probs * keep
    return weights / weights.sum()


def test_forward_algorithm_normalises_and_conditionals_match_enumeration(tiny):
    hmm, every, probs = tiny
    assert abs(probs.sum().item() - 1) < 1e-12
    weights = conditional(every, probs, {1: 2, 3: 0})
    values = torch.tensor([[0, 2, 0, 0, 0]])
    revealed = torch.tensor([[False, True, False, True, False]])
    log_probs = chain.value_log_probs(hmm, chain.state_posteriors(hmm, values, revealed))[0]
    for position in (0, 2, 4):
        marginal = torch.zeros(3, dtype=torch.float64).index_add_(0, every[:, position], weights)
        assert torch.allclose(log_probs[position].exp(), marginal, atol=1e-12)


def test_pair_mi_matches_enumeration(tiny):
    hmm, every, probs = tiny
    weights = conditional(every, probs, {1: 2, 3: 0})
    values = torch.tensor([[0, 2, 0, 0, 0]])
    revealed = torch.tensor([[False, True, False, True, False]])
    mi = chain.pair_mi(hmm, values, revealed)[0]
    for i, j in [(0, 2), (0, 4), (2, 4)]:
        joint = torch.zeros(3, 3, dtype=torch.float64)
        joint.index_put_((every[:, i], every[:, j]), weights, accumulate=True)
        outer = joint.sum(1, keepdim=True) * joint.sum(0, keepdim=True)
        exact = (joint * (joint / outer).log()).nansum().item()
        assert abs(mi[i, j].item() - exact) < 1e-7 and mi[i, j] == mi[j, i]
    assert (mi[1] == 0).all() and (mi[:, 3] == 0).all() and (mi.diagonal() == 0).all()


def test_exact_mi_equals_probing_the_exact_model():
    hmm = chain.load_hmm(DEFAULT_HMM)
    model = ExactHMMModel(hmm, "test")
    values, _ = chain.sample(hmm, 3, torch.Generator().manual_seed(1))
    masked = torch.rand(values.shape, generator=torch.Generator().manual_seed(2)) < 0.6
    tokens = (values + 1).masked_fill(masked, 0)
    probed = symmetric(exact_mi(model, tokens, masked).double())
    assert torch.allclose(model.pair_mi(tokens, masked).double(), probed, atol=2e-5)
    assert (probed - probed.transpose(1, 2)).abs().max() < 2e-5   # an exact model's two directions agree


def sample_exact(hmm, spec, n, seed=0):
    """(exact model, bound strategy, DecodeResult) of ``n`` fully masked sequences of ``hmm``."""
    model = ExactHMMModel(hmm, "test")
    strategy = parse_strategy(spec)
    strategy.bind(None, model)
    tokens = torch.zeros(n, hmm.length, dtype=torch.long)
    return model, strategy, decode(model, tokens, tokens == 0, strategy, 1.0, seed=seed)


def decode_exact(hmm, spec, n, seed=0):
    _, _, result = sample_exact(hmm, spec, n, seed)
    return result, result.log_q - chain.log_likelihood(hmm, result.tokens - 1)


def test_sequential_decoding_on_the_exact_model_has_zero_kl():
    """Sequential decoding of exact conditionals is ancestral sampling: log q = log p per sample."""
    hmm = chain.load_hmm(DEFAULT_HMM)
    result, log_ratio = decode_exact(hmm, "sequential", 64)
    assert (result.passes == hmm.length).all()
    assert log_ratio.abs().max() < 1e-5   # float32 logits: 64 log-probabilities summed


def test_all_at_once_kl_matches_enumeration(tiny):
    """One pass revealing everything samples the product of marginals; the decode loop's log q is
    its log-probability and the sample mean of log q - log p estimates the exact KL."""
    hmm, every, probs = tiny
    start = torch.zeros(1, 5, dtype=torch.long)
    marginals = chain.value_log_probs(hmm, chain.state_posteriors(hmm, start, start.bool()))[0]   # [5, 3]
    log_q_every = marginals[torch.arange(5), every].sum(1)
    exact_kl = (log_q_every.exp() * (log_q_every - probs.log())).sum().item()
    result, log_ratio = decode_exact(hmm, "topk:k=5", 4000)
    assert (result.passes == 1).all()
    assert torch.allclose(result.log_q, marginals[torch.arange(5), result.tokens - 1].sum(1), atol=1e-5)
    half_width = 4 * log_ratio.std().item() / len(log_ratio) ** 0.5
    assert exact_kl > 5 * half_width / 4 and abs(log_ratio.mean().item() - exact_kl) < half_width


def test_parallel_decoding_visibly_hurts_and_the_oracle_reads_exact_mi():
    hmm = chain.load_hmm(DEFAULT_HMM)
    _, topk = decode_exact(hmm, "topk:k=8", 300)
    assert topk.mean() > 10 * 1.96 * topk.std() / len(topk) ** 0.5     # the design condition
    symmetric_run, _ = decode_exact(hmm, "mi_oracle:gamma=2", 20)
    directed_run, _ = decode_exact(hmm, "mi_oracle:gamma=2,target=directed", 20)
    assert torch.equal(symmetric_run.tokens, directed_run.tokens)        # exact MI: one direction
    assert (symmetric_run.aux_passes == 0).all()                         # read, not probed


def test_records_carry_log_q_and_kl(tmp_path):
    proc = run_cli("run", "--tasks", "hmm", "--strategies", "sequential,topk:k=16", "--limit", 30,
                   "--verify", 0, "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    summaries = {json.loads(p.read_text())["config"]["strategy_spec"].split(":")[0]: json.loads(p.read_text())
                 for p in (tmp_path / "hmm").glob("*.json")}
    kl = {name: next(m for m in s["metrics"] if m["name"] == "kl_nats") for name, s in summaries.items()}
    assert abs(kl["sequential"]["value"]) < 1e-5 and kl["topk"]["ci_low"] > 1
    assert kl["topk"]["per_input"] == {"statistic": "mean_difference", "fields": ["log_q", "log_p"]}


def write(tmp_path, **changes):
    raw = json.loads(DEFAULT_HMM.read_text())
    raw.update(changes)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(raw))
    return path


@pytest.mark.parametrize("changes,message", [
    ({"trans": [[1.0, 0.0], [0.0, 1.0]]}, "disagree; need [K], [K, K], [K, V]"),
    ({"init": [-0.5, 0.5, 0.25, 0.25, 0.25, 0.25]}, "init has a negative or non-finite entry"),
    ({"init": [0.2] * 6}, "a row of init sums to 1.2"),
    ({"length": "long"}, "length must be an integer"),
    ({"emit": [0.5, 0.5]}, "emit must be a non-empty 2-d array"),
    ({"emit": "none"}, "is not a JSON object of numeric arrays"),
])
def test_malformed_hmm_files_are_one_line_errors(tmp_path, changes, message):
    with pytest.raises(BenchError) as err:
        chain.load_hmm(write(tmp_path, **changes))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_malformed_hmm_file_stops_the_run_with_exit_2(tmp_path):
    path = write(tmp_path, init=[0.2] * 6)
    proc = run_cli("run", "--tasks", "hmm", "--data", path, "--strategies", "sequential", "--limit", 2,
                   "--out", tmp_path / "out")
    assert proc.returncode == 2 and proc.stderr.strip().startswith("error: HMM file") and "sums to 1.2" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not list((tmp_path / "out").rglob("*.json"))


def test_rows_within_tolerance_load_and_a_missing_key_is_named(tmp_path):
    raw = json.loads(DEFAULT_HMM.read_text())
    raw["init"][0] += 5e-7
    (tmp_path / "ok.json").write_text(json.dumps(raw))
    assert chain.load_hmm(tmp_path / "ok.json").length == 64
    del raw["emit"]
    (tmp_path / "no.json").write_text(json.dumps(raw))
    with pytest.raises(BenchError, match="lacks 'emit'"):
        HMMTask(data=tmp_path / "no.json").hmm


def test_sampled_runs_verify_and_runs_made_before_per_input_streams_say_they_cannot():
    from dataclasses import replace

    from bench.run.cell import Run, decode_rows
    from bench.run.verify import verify_run
    task = HMMTask()
    model, eval_set = task.load_model(), task.eval_set(6, 0)
    run = Run(task, model, eval_set, parse_strategy("topk:k=8"), "topk", 0, verify=3)
    records, _ = decode_rows(run, torch.arange(6))
    assert "reproduce it" in verify_run(run, ({}, records), "cmd")
    records[2]["log_q"] += 0.5
    with pytest.raises(BenchError, match="does not reproduce"):
        verify_run(replace(run, verify=6), ({}, records), "cmd")
    old = [{k: v for k, v in r.items() if k != "log_q"} for r in records]   # a run from before log_q
    assert verify_run(run, ({}, old), "cmd").startswith("not verified: made with one")
