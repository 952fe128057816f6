"""The lower estimate of KL for runs that draw their order (tasks/hmm/orders.py, issue 29 item 7):
forced decodes against enumeration on a tiny chain, the exact case where every order gives log p,
and the command on real result files (records, summary metric, verification still passing)."""
import itertools
import json
import math

import pytest
import torch

from bench.registry import load_plugins
from conftest import run_cli
from tasks.hmm import chain
from tasks.hmm.chain import DEFAULT_HMM
from tasks.hmm.orders import forced_log_q, log_mean_exp
from tests.test_hmm import sample_exact

load_plugins()


class Exact:
    """What forced_log_q reads of a task: its value temperature."""
    temperature = 1.0


def marginal_log_probs(hmm, values, revealed):
    """[n, N] log p(x_j | the values at ``revealed``) under the chain."""
    log_probs = chain.value_log_probs(hmm, chain.state_posteriors(hmm, values, revealed))
    return log_probs.gather(-1, values.unsqueeze(-1)).squeeze(-1)


def enumerated_log_q(hmm, values, first):
    """log q(x) of the sampler that reveals a uniformly drawn set of ``first`` positions from the
    marginals, then the rest from their marginals given those: the mean over every such set."""
    n, length = values.shape
    terms = []
    for chosen in itertools.combinations(range(length), first):
        revealed = torch.zeros(n, length, dtype=torch.bool)
        revealed[:, list(chosen)] = True
        before = marginal_log_probs(hmm, values, torch.zeros_like(revealed))
        after = marginal_log_probs(hmm, values, revealed)
        terms.append(torch.where(revealed, before, after).sum(1))
    return torch.logsumexp(torch.stack(terms, 1), 1) - math.log(len(terms))


def test_the_log_mean_exp_over_drawn_orders_converges_to_the_enumerated_q():
    hmm = chain.draw_hmm(3, n_states=3, n_values=3, length=5, stay=0.8, emit_concentration=0.5)
    model, strategy, result = sample_exact(hmm, "schedule:schedule=constant,k=3", 6)
    assert (result.passes == 2).all()
    values = result.tokens - 1
    log_q = forced_log_q(Exact, model, strategy, values, torch.arange(6), 2000, seed=0)
    exact = enumerated_log_q(hmm, values, 3)
    assert (log_mean_exp(log_q) - exact).abs().max() < 0.03
    # the one drawn order's log q (the bound's term) is not log q(x): the estimate is what moves it
    assert (result.log_q - exact).abs().max() > 0.05


def test_one_position_a_pass_on_the_exact_chain_gives_log_p_along_every_order():
    """With exact conditionals and one position a pass, q(x | order) = p(x) for every order."""
    hmm = chain.load_hmm(DEFAULT_HMM)
    model, strategy, result = sample_exact(hmm, "schedule:schedule=constant,k=1", 8)
    values = result.tokens - 1
    log_q = forced_log_q(Exact, model, strategy, values, torch.arange(8), 4, seed=0)
    log_p = chain.log_likelihood(hmm, values)
    assert (log_q - log_p.unsqueeze(1)).abs().max() < 1e-4


def test_orders_command_adds_the_estimate_and_the_run_still_verifies(tmp_path):
    out = tmp_path / "results"
    spec = "schedule:steps=8"
    made = run_cli("run", "--tasks", "hmm", "--strategies", spec, "--limit", 40, "--out", out)
    assert made.returncode == 0, made.stderr
    done = run_cli("orders", "--results", out, "--tasks", "hmm", "--orders", 8)
    assert done.returncode == 0, done.stderr
    first = sorted((out / "hmm").glob("*.json"))[0]     # --strategies without a preset: the one seed asked for
    summary = json.loads(first.read_text())
    metrics = {m["name"]: m for m in summary["metrics"]}
    lower, bound = metrics["kl_nats_orders"], metrics["kl_nats"]
    assert lower["orders"] == 8 and lower["per_input"]["fields"] == ["log_q_orders", "log_p"]
    assert lower["value"] < bound["value"] and lower["value_half_orders"] < lower["value"] + 0.5
    again = run_cli("run", "--tasks", "hmm", "--strategies", spec, "--limit", 40, "--out", out, "--verify", 3)
    assert again.returncode == 0 and "reproduce it" in again.stdout + again.stderr, again.stderr
    kept = run_cli("orders", "--results", out, "--tasks", "hmm", "--orders", 8)   # finished work is kept
    assert kept.returncode == 0 and "1 runs already carry an estimate at 8 orders or more: kept" in kept.stdout
    assert json.loads(first.read_text()) == summary


@pytest.mark.parametrize("args, message", [(("--orders", 3), "even number"),
                                           (("--tasks", "sudoku"), "hmm and hmm_mdm")])
def test_bad_orders_arguments_are_one_line_errors(tmp_path, args, message):
    proc = run_cli("orders", "--results", tmp_path, *args)
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_the_report_reads_the_estimate_as_the_lower_end_and_the_floor_without_it(tmp_path):
    from bench.report.verdicts import load_runs
    from bench.results import Store
    out = tmp_path / "results"
    made = run_cli("run", "--tasks", "hmm", "--strategies", "schedule:steps=8,schedule:steps=16,topk:k=8",
                   "--limit", 30, "--out", out)
    assert made.returncode == 0, made.stderr
    assert run_cli("orders", "--results", out, "--tasks", "hmm", "--orders", 4, "--only", "steps=8").returncode == 0
    runs, _ = load_runs(Store(out).runs(), out)
    lower = {run.label: run.lower for run in runs}
    assert lower["topk:k=8"] is None                                  # its order is not drawn: its KL is exact
    assert lower["schedule:steps=8"].name == "kl_nats_orders"
    assert lower["schedule:steps=16"].name == "kl_nats" and lower["schedule:steps=16"]() == 0.0   # the declared end
    estimate = next(r for r in runs if r.label == "schedule:steps=8")
    assert estimate.lower() < estimate.quality()
