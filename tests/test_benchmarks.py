"""Timings: one `select` of each strategy, one MI-estimator call and one forward pass, on 256
test boards.

Run: python -m pytest tests/test_benchmarks.py --benchmark-enable --benchmark-only
(by default they run once each as plain tests, so they stay correct).
"""
import pytest
import torch

from bench.core import StepState
from bench.registry import parse_strategy
from strategies.mi.estimator import FILE_NAME, load_estimator
from tasks.sudoku.checkpoint import load_sudoku_model
from tasks.sudoku.task import SudokuTask

SPECS = ["sequential", "topk:k=7", "margin:k=7", "eb:gamma=0.3", "threshold:tau=0.9", "mi:gamma=0.3"]


@pytest.fixture(scope="module")
def batch():
    torch.set_num_threads(2)
    eval_set = SudokuTask().eval_set(limit=256)
    model = load_sudoku_model()
    return model, eval_set.tokens, eval_set.masked, model(eval_set.tokens, eval_set.masked)


def test_forward_pass(benchmark, batch):
    model, tokens, masked, _ = batch
    out = benchmark(model, tokens, masked)
    assert out.logits.shape == (256, 81, 9)


@pytest.mark.parametrize("spec", SPECS)
def test_select(benchmark, batch, spec):
    _, tokens, masked, out = batch
    strategy = parse_strategy(spec)
    if hasattr(strategy, "bind"):
        strategy.bind(SudokuTask(), batch[0])
    pick = benchmark(lambda: strategy.select(StepState(tokens, masked, out, 0)))
    assert (pick <= masked).all() and pick.any(1).all()


def test_mi_estimator(benchmark, batch):
    model, tokens, masked, out = batch
    network = load_estimator(SudokuTask.weights_dir / FILE_NAME, model.checkpoint_id, "sudoku")
    probs = torch.softmax(out.logits, -1)
    with torch.inference_mode():
        mi = benchmark(network, out.hidden, probs, masked)
    assert mi.shape == (256, 81, 81) and torch.isfinite(mi).all()
