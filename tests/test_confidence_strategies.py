"""The rules of eb, threshold and margin pinned on hand-made probability tables."""
import math

import pytest
import torch

from bench.core import ModelOutput, StepState
from bench.errors import BenchError
from bench.registry import parse_strategy


def binary_state(top_probs, masked=None):
    """One row; position i has distribution (p_i, 1 - p_i); p = 1 gives exactly zero entropy."""
    logits = torch.tensor([[math.log(p), math.log(1 - p)] if p < 1 else [0.0, -200.0] for p in top_probs])
    masked = torch.tensor([masked or [True] * len(top_probs)])
    return StepState(tokens=torch.zeros_like(masked, dtype=torch.long), masked=masked,
                     out=ModelOutput(logits=logits[None], hidden=torch.zeros(1, len(top_probs), 1)), step=0)


# entropies (nats): 0.7->0.611, 0.99->0.056, 0.5->0.693, 0.9->0.325, 0.8->0.500
# ascending: pos1 .056, pos3 .325, pos4 .500, pos0 .611, pos2 .693
# prefix sum minus max: 0, .056, .381, .881, 1.492
TABLE = [0.7, 0.99, 0.5, 0.9, 0.8]


@pytest.mark.parametrize("gamma,expected", [
    (0, {1}), (0.05, {1}), (0.1, {1, 3}), (0.3, {1, 3}), (0.4, {1, 3, 4}),
    (1, {1, 3, 4, 0}), (2, {0, 1, 2, 3, 4}),
])
def test_eb_reveals_the_largest_prefix_within_the_bound(gamma, expected):
    pick = parse_strategy(f"eb:gamma={gamma}").select(binary_state(TABLE))
    assert set(pick[0].nonzero().flatten().tolist()) == expected


def test_eb_is_not_the_plain_cumulative_entropy_rule():
    # cumulative entropy <= 0.1 would stop after pos1 (0.056 + 0.325 > 0.1); the paper's bound
    # subtracts the largest entropy and takes pos3 as well
    pick = parse_strategy("eb:gamma=0.1").select(binary_state(TABLE))
    assert pick.sum() == 2


def test_eb_gamma_zero_takes_zero_entropy_ties_plus_one():
    pick = parse_strategy("eb:gamma=0").select(binary_state([0.7, 1.0, 0.9, 1.0]))
    assert set(pick[0].nonzero().flatten().tolist()) == {1, 3, 2}


def test_eb_skips_unmasked_positions_and_complete_rows():
    state = binary_state(TABLE, masked=[True, False, True, True, True])
    pick = parse_strategy("eb:gamma=0.4").select(state)
    assert set(pick[0].nonzero().flatten().tolist()) == {3, 4}  # .325, .5, then .611: spent .825 > .4
    done = binary_state(TABLE, masked=[False] * 5)
    assert not parse_strategy("eb:gamma=5").select(done).any()


@pytest.mark.parametrize("tau,expected", [(0.85, {1, 3}), (0.95, {1}), (1.0, {1}), (0.5, {0, 1, 2, 3, 4})])
def test_threshold_reveals_all_confident_and_at_least_one(tau, expected):
    pick = parse_strategy(f"threshold:tau={tau}").select(binary_state(TABLE))
    assert set(pick[0].nonzero().flatten().tolist()) == expected


def test_threshold_never_reveals_unmasked_and_ties_go_low():
    state = binary_state([0.6, 0.99, 0.6], masked=[True, False, True])
    assert parse_strategy("threshold:tau=0.9").select(state).tolist() == [[True, False, False]]


def test_margin_is_topk_with_margin_order():
    state = binary_state(TABLE)
    same = parse_strategy("margin:k=2").select(state)
    assert torch.equal(same, parse_strategy("topk:k=2,order=margin").select(state))
    assert set(same[0].nonzero().flatten().tolist()) == {1, 3}


@pytest.mark.parametrize("spec,message", [
    ("eb:gamma=-0.1", "gamma must be >= 0"), ("threshold:tau=0", r"tau must be in \(0, 1\]"),
    ("threshold:tau=1.5", r"tau must be in \(0, 1\]"), ("margin:k=0", "k must be at least 1"),
    ("eb:order=foo", "choose from"),
])
def test_invalid_parameters_are_one_line_errors(spec, message):
    with pytest.raises(BenchError, match=message):
        parse_strategy(spec)
