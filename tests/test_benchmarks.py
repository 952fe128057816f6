"""Timings: one `select` of each strategy and one forward pass, on 256 test boards.

Run: python -m pytest tests/test_benchmarks.py --benchmark-enable --benchmark-only
(by default they run once each as plain tests, so they stay correct).
"""
import pytest
import torch

from bench.core import StepState
from bench.registry import parse_strategy
from tasks.sudoku.checkpoint import load_sudoku_model
from tasks.sudoku.task import SudokuTask

SPECS = ["sequential", "topk:k=7", "margin:k=7", "eb:gamma=0.3", "threshold:tau=0.9"]


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
    pick = benchmark(lambda: strategy.select(StepState(tokens, masked, out, 0)))
    assert (pick <= masked).all() and pick.any(1).all()
