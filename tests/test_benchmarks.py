"""Timings tracked as a benchmark, not asserted (docs/timing.md, "Benchmarks (pytest-benchmark)").

At one torch thread: the forward pass of every registered task's model at its chunk shape (the
rows one call runs on a CPU, ``chunk_rows``; a model without it at `bench run`'s batch of 250),
one ``select`` of every registered strategy on the first pass of 250 Sudoku and 250 protein
inputs (at the settings of tests/test_overhead.py; a strategy that probes the model, whose
select is mostly forward passes, on 1 input), and the Sudoku MI estimator on 250 boards. A new
task or strategy is measured with no edit here.

Each round of a case runs just after a round of fixed calibration work that no project code
touches, as long as the round (``timed``): a small two-layer perceptron for the forward passes
and the estimator (dense float32 products, as the models are), a first-pass rule written out in
torch and numpy calls for the selects. ``extra_info["ratio"]``, the median over rounds of the
case's time over the calibration's, is what `python -m bench.benchcheck` compares with the
committed baseline: it carries from one machine and one moment to another better than seconds.

In the ordinary test run the cases execute once each, as plain tests. Timed and checked against
the baseline (what .ci/run does; a case slower beyond the limit is run again before it fails):

    python -m bench.benchcheck baselines/benchmarks/baseline.json --run /tmp/benchmarks

and the baseline made again, on purpose:

    python -m pytest tests/test_benchmarks.py --benchmark-enable --benchmark-only \
        --benchmark-json=baselines/benchmarks/baseline.json

UNMASK_BENCH_SLOW_CASE=TEXT:FACTOR makes every case whose name holds TEXT FACTOR times as slow
(its call made FACTOR times): a regression on purpose, to see the check fail.
"""
import math
import os
import statistics
import time

import numpy as np
import pytest
import torch

from bench.allocator import keep_freed_memory
from bench.core import Selection, StepState
from bench.registry import STRATEGIES, TASKS, load_plugins, parse_strategy
from bench.streams import Streams
from strategies.mi.estimator import FILE_NAME, load_estimator
from test_overhead import SETTINGS, loaded

BATCH = 250          # bench run's default --batch-size: the rows a strategy's select sees
PROBING_ROWS = 1     # a strategy that runs the model itself (aux_passes_metric) selects on this many
SLOWED = os.environ.get("UNMASK_BENCH_SLOW_CASE", "")   # "NAME:FACTOR": see the module's docstring

load_plugins()


def benchmarking(config):
    """Whether pytest-benchmark times this run (pyproject's addopts disable it; --benchmark-enable)."""
    return not (config.getoption("benchmark_disable") and not config.getoption("benchmark_enable"))


@pytest.fixture(scope="module", autouse=True)
def one_thread(request):
    """One torch thread: a single thread is what each chunk of a forward pass runs on (bench.chunks),
    and it is steadier than two on a shared 2-core machine. Freed memory is kept for reuse as the
    bench command keeps it (bench.allocator), when timing."""
    if benchmarking(request.config):
        keep_freed_memory()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


STATES = {}


def first_pass(task_name):
    """(tokens, masked, model output) of the first pass on BATCH inputs, once per task (computed at
    two threads: it is not timed)."""
    if task_name not in STATES:
        _, model, eval_set = loaded(task_name)
        tokens, masked = eval_set.tokens[:BATCH], eval_set.masked[:BATCH]
        threads = torch.get_num_threads()
        torch.set_num_threads(2)
        try:
            STATES[task_name] = tokens, masked, model(tokens, masked)
        finally:
            torch.set_num_threads(threads)
    return STATES[task_name]


# --- calibration: fixed work, the same on every commit ---------------------------------------

def perceptron_inputs():
    g = torch.Generator().manual_seed(0)
    # Sudoku's chunk of 32 boards (2592 positions) through a feed-forward block of its width
    return torch.randn(2592, 96, generator=g), torch.randn(96, 384, generator=g), torch.randn(384, 96, generator=g)


def perceptron(x, w1, w2):
    return torch.relu(x @ w1) @ w2


def rule_inputs():
    g = torch.Generator().manual_seed(0)
    return torch.randn(BATCH, 81, 9, generator=g), torch.rand(BATCH, 81, generator=g) < 0.7


def rule(logits, masked):
    """A confidence top-5 rule with an entropy order: the calls a first pass's select makes."""
    log_probs = torch.log_softmax(logits, -1)
    probs = log_probs.exp()
    entropy = torch.special.entr(probs).sum(-1)
    top = probs.max(-1).values.masked_fill(~masked, -1.0).topk(5, dim=1).indices
    pick = torch.zeros_like(masked).scatter_(1, top, True) & masked
    order = np.argsort(entropy.numpy(), axis=1, kind="stable")
    return pick, order, bool(np.isfinite(log_probs.numpy()).all())


CALIBRATIONS = {"perceptron": (perceptron_inputs, perceptron), "rule": (rule_inputs, rule)}
ROUND_SECONDS = 1.0   # a case runs rounds for about this long, at least MIN_ROUNDS (pytest-benchmark's defaults)
MIN_ROUNDS = 5


def seconds_of(work, *args):
    start = time.perf_counter()
    work(*args)
    return time.perf_counter() - start


def timed(benchmark, group, calibration, target, *args, **info):
    """``benchmark(target, *args)``; when timing, each round of it just after a round of calibration
    ``calibration`` as long as one call of ``target`` (the calibration repeated to last that long).

    On a shared machine other processes slow stretches of time, and the longer a call the fewer
    quiet stretches hold it; a calibration round of the same length, just before, meets the same.
    ``extra_info["ratio"]``: the median over rounds of the case's round over the calibration's
    (per run of it), the figure bench.benchcheck compares; ``calibration_s``: the calibration's
    smallest round per run, the machine's speed as the case met it."""
    benchmark.group = group
    benchmark.extra_info.update(info)
    name, _, factor = SLOWED.rpartition(":")
    if name and name in benchmark.name:
        target = repeated(target, int(factor))
    if not benchmark.enabled:
        return benchmark(target, *args)
    make_inputs, work = CALIBRATIONS[calibration]
    inputs = make_inputs()
    call = seconds_of(target, *args)     # also the warm-up call
    runs = max(1, round(call / min(seconds_of(work, *inputs) for _ in range(3))))
    calibrated = []

    def calibrate():
        start = time.perf_counter()
        for _ in range(runs):
            work(*inputs)
        calibrated.append((time.perf_counter() - start) / runs)
    result = benchmark.pedantic(target, args, setup=calibrate, rounds=max(MIN_ROUNDS, math.ceil(ROUND_SECONDS / call)))
    ratios = [case / cal for case, cal in zip(benchmark.stats.stats.data, calibrated)]
    benchmark.extra_info.update(calibration=calibration, calibration_runs=runs, calibration_s=min(calibrated),
                                ratio=statistics.median(ratios))
    return result


def repeated(target, times):
    """``target`` run ``times`` times a call (UNMASK_BENCH_SLOW_CASE: a regression made on purpose)."""
    def run(*args):
        for _ in range(times):
            result = target(*args)
        return result
    return run


# --- forward passes ----------------------------------------------------------------------------

@pytest.mark.parametrize("task_name", sorted(TASKS))
def test_forward_pass(benchmark, task_name):
    _, model, eval_set = loaded(task_name)
    rows = getattr(model, "chunk_rows", None) or BATCH
    tokens, masked = eval_set.tokens[:rows], eval_set.masked[:rows]
    out = timed(benchmark, "forward", "perceptron", model, tokens, masked, shape=list(tokens.shape))
    assert out.logits.shape == (*tokens.shape, model.vocab_size)


# --- each strategy's select --------------------------------------------------------------------

def select_cases():
    for task_name, settings in SETTINGS.items():
        for name in sorted(STRATEGIES):
            spec = settings.get(name, name)
            yield pytest.param(task_name, spec, id=f"{task_name}-{spec}")


@pytest.mark.parametrize("task_name,spec", list(select_cases()))
def test_select(benchmark, task_name, spec):
    task, model, _ = loaded(task_name)
    tokens, masked, out = first_pass(task_name)
    strategy = parse_strategy(spec)
    if strategy.aux_passes_metric is not None:
        tokens, masked = tokens[:PROBING_ROWS], masked[:PROBING_ROWS]
        rows = len(tokens)
        out = type(out)(logits=out.logits[:rows], hidden=None if out.hidden is None else out.hidden[:rows])
    strategy.bind(task, model)
    streams = Streams(0, rows=len(tokens))

    def select():
        return strategy.select(StepState(tokens, masked, out, 0, streams))
    chosen = timed(benchmark, f"select {task_name}", "rule", select, rows=len(tokens))
    pick = chosen.reveal if isinstance(chosen, Selection) else chosen   # a re-masking strategy's reveals
    assert (pick <= masked).all()
    assert strategy.pass_budget() is not None or pick.any(1)[masked.any(1)].all()   # a budget may skip a pass


# --- the MI estimator ----------------------------------------------------------------------------

def test_mi_estimator(benchmark):
    task, model, _ = loaded("sudoku")
    _, masked, out = first_pass("sudoku")
    network = load_estimator(task.weights_dir / FILE_NAME, model.checkpoint_id, "sudoku")
    probs = torch.softmax(out.logits, -1)
    with torch.inference_mode():
        mi = timed(benchmark, "estimator", "perceptron", network, out.hidden, probs, masked, rows=len(masked))
    assert mi.shape == (len(masked), 81, 81) and torch.isfinite(mi).all()
