import pytest
import torch

from bench.core import ModelOutput, StepState
from bench.errors import BenchError
from bench.registry import canonical, parse_strategy, split_specs
from strategies.ordering import top_k_mask


def state_from_probs(probs, masked):
    """StepState whose softmax reproduces ``probs`` [B, N, V] exactly (up to float error)."""
    probs = torch.tensor(probs, dtype=torch.float)
    logits = probs.clamp_min(1e-12).log()
    return StepState(tokens=torch.zeros(probs.shape[:2], dtype=torch.long), masked=torch.tensor(masked),
                     out=ModelOutput(logits=logits, hidden=torch.zeros(*probs.shape[:2], 1)), step=0)


# position: 0 confident, 1 split 50/50, 2 peaked-but-two-way, 3 already unmasked (most confident)
PROBS = [[[0.90, 0.05, 0.05], [0.50, 0.50, 0.00], [0.60, 0.40, 0.00], [1.0, 0.0, 0.0]]]
MASKED = [[True, True, True, False]]


def test_sequential_orders_pick_the_expected_position():
    state = state_from_probs(PROBS, MASKED)
    assert parse_strategy("sequential").select(state).tolist() == [[True, False, False, False]]
    # entropy: pos0 H=0.39, pos1 H=0.69, pos2 H=0.67 -> pos0; margin: 0.85, 0, 0.2 -> pos0
    assert parse_strategy("sequential:order=entropy").select(state).tolist() == [[True, False, False, False]]
    two = parse_strategy("topk:k=2,order=margin").select(state)
    assert two.tolist() == [[True, False, True, False]]
    two_entropy = parse_strategy("topk:k=2,order=entropy").select(state)
    assert two_entropy.tolist() == [[True, False, True, False]]


def test_confidence_and_margin_orders_can_disagree():
    # pos0: top 0.45 but margin 0.0 ; pos1: top 0.42 and margin 0.06
    state = state_from_probs([[[0.45, 0.45, 0.10], [0.42, 0.22, 0.36]]], [[True, True]])
    assert parse_strategy("sequential:order=confidence").select(state).tolist() == [[True, False]]
    assert parse_strategy("sequential:order=margin").select(state).tolist() == [[False, True]]


def test_ties_go_to_the_lower_index_and_k_is_capped_by_masked_count():
    score = torch.tensor([[0.5, 0.5, 0.5, 0.9]])
    masked = torch.tensor([[True, True, True, False]])
    assert top_k_mask(score, masked, 1).tolist() == [[True, False, False, False]]
    assert top_k_mask(score, masked, 10).tolist() == [[True, True, True, False]]
    complete = torch.zeros(1, 4, dtype=torch.bool)
    assert not top_k_mask(score, complete, 3).any()


def test_per_row_k():
    score = torch.tensor([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]])
    masked = torch.ones(2, 3, dtype=torch.bool)
    pick = top_k_mask(score, masked, torch.tensor([[1], [2]]))
    assert pick.tolist() == [[True, False, False], [False, True, True]]


def test_spec_parsing_and_canonical_form():
    assert split_specs("sequential,topk:k=2,order=margin,topk:k=7") == [
        "sequential", "topk:k=2,order=margin", "topk:k=7"]
    assert canonical(parse_strategy("topk:k=7")) == "topk:k=7,order=confidence"
    assert parse_strategy("topk: k = 3 ").k == 3


@pytest.mark.parametrize("spec,message", [
    ("seqential", "did you mean 'sequential'"),
    ("topk:kk=3", "unknown parameter 'kk'"),
    ("topk:k=0", "k must be at least 1"),
    ("topk:k=two", "is not a int"),
    ("topk:order=entroy", "did you mean 'entropy'"),
    ("topk:k", "key=value"),
])
def test_bad_specs_are_one_line_errors(spec, message):
    with pytest.raises(BenchError, match=message) as err:
        parse_strategy(spec)
    assert "\n" not in str(err.value)
