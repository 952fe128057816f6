from dataclasses import dataclass
from typing import ClassVar

import pytest
import torch

from bench.core import all_finite
from bench.decode import decode
from bench.errors import BenchError
from bench.registry import parse_strategy


def start(masks):
    masked = torch.tensor(masks)
    return torch.where(masked, 0, 1), masked


def test_passes_are_counted_per_row_and_finished_rows_stop(table_model):
    tokens, masked = start([[True] * 6, [True, True, True, False, False, False], [False] * 6])
    result = decode(table_model, tokens, masked, parse_strategy("topk:k=2"))
    assert result.passes.tolist() == [3, 2, 0]
    assert (result.tokens > 0).all()
    assert table_model.calls == 3  # the complete row never enters a pass
    sequential = decode(table_model, tokens, masked, parse_strategy("sequential"))
    assert sequential.passes.tolist() == [6, 3, 0]


def test_argmax_fill_writes_the_value_tokens(table_model):
    tokens, masked = start([[True] * 6])
    result = decode(table_model, tokens, masked, parse_strategy("topk:k=6"))
    assert result.tokens[0].tolist() == (table_model.logits.argmax(-1) + 1).tolist()


def test_sampling_is_deterministic_under_a_seed(table_model):
    tokens, masked = start([[True] * 6] * 64)
    runs = [decode(table_model, tokens, masked, parse_strategy("sequential"), 1.0, seed=seed).tokens
            for seed in (3, 3, 4)]
    assert torch.equal(runs[0], runs[1]) and not torch.equal(runs[0], runs[2])


@dataclass
class Broken:
    name: ClassVar[str] = "broken"
    mode: str = "nothing"

    def select(self, state):
        if self.mode == "nothing":
            return torch.zeros_like(state.masked)
        return ~state.masked | state.masked  # also "reveals" unmasked positions


@pytest.mark.parametrize("mode,message", [("nothing", "revealed nothing"), ("unmasked", "already unmasked")])
def test_broken_strategies_are_errors_not_hangs(table_model, mode, message):
    tokens, masked = start([[True, True, False, True, True, True]])
    with pytest.raises(BenchError, match=message):
        decode(table_model, tokens, masked, Broken(mode))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_logit_at_any_pass_stops_the_decode(table_model, bad):
    calls = []

    def model(tokens, masked):
        out = table_model(tokens, masked)
        if len(calls) == 1:
            out.logits[0, 4, 2] = bad            # the second pass: one value of one position
        calls.append(1)
        return out
    model.value_tokens = table_model.value_tokens
    tokens, masked = start([[True] * 6])
    with pytest.raises(BenchError, match="non-finite logits at pass 1"):
        decode(model, tokens, masked, parse_strategy("sequential"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_all_finite_sees_one_bad_value_in_any_float_tensor(dtype):
    values = torch.randn(3, 7, 5).to(dtype)
    assert all_finite(values) and all_finite(values.transpose(0, 2)) and all_finite(values[:, ::2])
    for bad in (float("nan"), float("inf"), -float("inf")):
        broken = values.clone()
        broken[2, 6, 4] = bad
        assert not all_finite(broken) and not all_finite(broken.transpose(0, 2)) and not all_finite(broken[:, ::3])
