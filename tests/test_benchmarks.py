"""Timings tracked as a benchmark, not asserted (docs/running.md, "Benchmarks (pytest-benchmark)").

At one torch thread: the forward pass of every registered task's model at its chunk shape (the
rows one call runs on a CPU, ``chunk_rows``; a model without it at `bench run`'s batch of 250),
one ``select`` of every registered strategy on the first pass of 250 Sudoku and 250 protein
inputs (at the settings of tests/test_overhead.py; a strategy that probes the model, whose
select is mostly forward passes, on 1 input), and the Sudoku MI estimator on 250 boards. A new
task or strategy is measured with no edit here.

Two calibration cases measure fixed work that no project code touches, in the same run: a
small two-layer perceptron (dense float32 products, as the models are) and a first-pass rule
written out in torch and numpy calls (as the strategies are). Each case names the one it is
read against (``extra_info["calibration"]``), so `python -m bench.benchcheck` compares ratios
to the calibration, which carry from one machine to another better than seconds do.

In the ordinary test run they execute once each, as plain tests. Timed and compared with the
committed baseline (what .ci/run does):

    python -m pytest tests/test_benchmarks.py --benchmark-enable --benchmark-only --benchmark-json=/tmp/b.json
    python -m bench.benchcheck baselines/benchmarks/baseline.json /tmp/b.json

UNMASK_BENCH_SLOW_SELECT=NAME:FACTOR makes strategy NAME's select FACTOR times as slow (it is
run FACTOR times), to show that the comparison fails on a real regression.
"""
import os
import time

import numpy as np
import pytest
import torch

from bench.allocator import keep_freed_memory
from bench.core import StepState
from bench.registry import STRATEGIES, TASKS, load_plugins, make_task, parse_strategy
from bench.streams import Streams
from strategies.mi.estimator import FILE_NAME, load_estimator
from test_overhead import SETTINGS

BATCH = 250          # bench run's default --batch-size: the rows a strategy's select sees
PROBING_ROWS = 1     # a strategy that runs the model itself (aux_passes_metric) selects on this many
SLOW = dict(item.split(":") for item in filter(None, [os.environ.get("UNMASK_BENCH_SLOW_SELECT")]))

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


LOADED = {}


def loaded(task_name):
    """(task, model, eval set), once per task name."""
    if task_name not in LOADED:
        task = make_task(task_name)
        LOADED[task_name] = task, task.load_model(), task.eval_set(None, 0)
    return LOADED[task_name]


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
CALIBRATION_SECONDS = 0.25   # spent on each side of a case


def calibration_time(name):
    """The smallest of as many runs of calibration ``name`` as fit in CALIBRATION_SECONDS (10 at least)."""
    make_inputs, work = CALIBRATIONS[name]
    inputs = make_inputs()
    best, spent, runs = float("inf"), 0.0, 0
    while runs < 10 or spent < CALIBRATION_SECONDS:
        start = time.perf_counter()
        work(*inputs)
        took = time.perf_counter() - start
        best, spent, runs = min(best, took), spent + took, runs + 1
    return best


def timed(benchmark, group, calibration, target, *args, **info):
    """``benchmark(target, *args)``, with the calibration measured just before and just after it
    (when timing): extra_info's ``calibration_s`` is the smaller, the figure the case is read against."""
    benchmark.group = group
    before = calibration_time(calibration) if benchmark.enabled else None
    result = benchmark(target, *args)
    if benchmark.enabled:
        benchmark.extra_info.update(calibration=calibration, calibration_s=min(before, calibration_time(calibration)))
    benchmark.extra_info.update(info)
    return result


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
        out = type(out)(logits=out.logits[:len(tokens)], hidden=None if out.hidden is None else out.hidden[:len(tokens)])
    strategy.bind(task, model)
    streams = Streams(0, rows=len(tokens))
    repeats = int(SLOW.get(strategy.name, 1))

    def select():
        for _ in range(repeats):
            pick = strategy.select(StepState(tokens, masked, out, 0, streams))
        return pick
    pick = timed(benchmark, f"select {task_name}", "rule", select, rows=len(tokens))
    assert (pick <= masked).all() and pick.any(1)[masked.any(1)].all()


# --- the MI estimator ----------------------------------------------------------------------------

def test_mi_estimator(benchmark):
    task, model, _ = loaded("sudoku")
    _, masked, out = first_pass("sudoku")
    network = load_estimator(task.weights_dir / FILE_NAME, model.checkpoint_id, "sudoku")
    probs = torch.softmax(out.logits, -1)
    with torch.inference_mode():
        mi = timed(benchmark, "estimator", "perceptron", network, out.hidden, probs, masked, rows=len(masked))
    assert mi.shape == (len(masked), 81, 81) and torch.isfinite(mi).all()
