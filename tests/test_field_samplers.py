"""Issue 30: the field's samplers (strategies/schedules) and the loop's contract extensions:
per-input strategy memory, re-masking Selections and pass budgets."""
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
import torch

from bench.core import ModelOutput, Selection, StepState, Strategy
from bench.decode import decode
from bench.errors import BenchError
from bench.registry import canonical, load_plugins, make_task, parse_strategy, strategy_params
from conftest import decoded_rows, loaded_task
from strategies.schedules.dus import dilated_rounds
from strategies.schedules.parts import quota
from tasks.hmm import chain
from tasks.hmm.task import transition_kl

load_plugins()
FIELD = ["schedule:steps=8", "schedule:score=confidence,schedule=cosine,steps=6",
         "schedule:schedule=bernoulli,steps=10", "schedule:score=ltr,schedule=constant,k=3",
         "schedule:score=margin,steps=12,block=16", "topk:k=3,block=8", "eb:gamma=0.3,block=16",
         "factor_rule:f=1.5", "klass:steps=10", "pc_sampler:steps=10", "dus:block=8",
         "remdm:steps=10", "remdm:sigma=rescale,eta=0.5,steps=10", "remdm:sigma=conf,steps=10",
         "rcr:steps=10", "rcr:steps=12,block=16", "dplm:steps=10", "wino:block=9", "saber:block=16",
         "prophet:steps=10"]
def loaded(task_name, n=6):
    return loaded_task(task_name, n)


decoded = decoded_rows


@pytest.mark.parametrize("task_name", ["sudoku", "hmm"])
@pytest.mark.parametrize("spec", FIELD)
def test_records_do_not_depend_on_the_batch(task_name, spec):
    """All inputs at once, then in batches of 4 and 2 (rows leave the batch at different passes):
    tokens, passes, log q and re-mask counts agree input by input."""
    n = len(loaded(task_name)[2])
    whole = decoded(task_name, spec, torch.arange(n))
    parts = [decoded(task_name, spec, torch.arange(n)[i:i + 4]) for i in range(0, n, 4)]
    assert torch.equal(whole.tokens, torch.cat([p.tokens for p in parts]))
    assert torch.equal(whole.passes, torch.cat([p.passes for p in parts]))
    assert torch.equal(whole.log_q, torch.cat([p.log_q for p in parts]))
    if whole.remasked is not None:
        assert torch.equal(whole.remasked, torch.cat([p.remasked for p in parts]))
    budget = parse_strategy(spec).pass_budget()
    assert budget is None or int(whole.passes.max()) <= budget


def test_a_schedule_of_s_steps_takes_s_passes_or_fewer_when_nothing_is_left():
    exact = decoded("hmm", "schedule:steps=16", torch.arange(4))       # 64 masked: 4 a pass
    assert exact.passes.tolist() == [16] * 4
    few = decoded("hmm", "schedule:steps=100", torch.arange(2))        # one a pass, 64 passes
    assert few.passes.tolist() == [64, 64]
    assert int(decoded("hmm", "schedule:schedule=bernoulli,steps=16", torch.arange(6)).passes.max()) <= 16


def test_linear_and_cosine_quotas_follow_llada_and_esm3():
    steps, total = torch.tensor([4]), torch.tensor([10])
    left, linear = 10, []
    for i in range(4):
        linear.append(int(quota("linear", torch.tensor([i]), steps, total, torch.tensor([left]))))
        left -= linear[-1]
    assert linear == [3, 3, 2, 2]                                      # floor(10/4), the first 2 one more
    left, counts = 10, []
    for i in range(4):
        count = int(quota("cosine", torch.tensor([i]), steps, total, torch.tensor([left])))
        counts.append(count)
        left -= count
        assert i == 3 or left == int(math.cos((i + 1) / 4 * math.pi / 2) * 10 + 0.1)
    assert sum(counts) == 10


def test_dilated_rounds_fix_the_order_in_advance():
    assert dilated_rounds(8).tolist() == [0, 2, 1, 2, 0, 2, 1, 2]        # stride 4, then 2, then the odd ones
    assert int(dilated_rounds(16).max()) == 3                          # log2 16 rounds


def probs_state(confidences):
    """A StepState whose rows have the given top probabilities (two values a position)."""
    top = torch.tensor(confidences)
    logits = torch.stack([top.log(), (1 - top).clamp_min(1e-9).log()], -1)
    masked = torch.ones(top.shape, dtype=torch.bool)
    return StepState(torch.zeros(top.shape, dtype=torch.long), masked, ModelOutput(logits), 0)


def test_the_factor_rule_takes_the_prefix_with_n_plus_1_times_error_within_f():
    state = probs_state([[0.9, 0.8, 0.75, 0.7, 0.5]])
    # (n+1)(1 - c(n)): 0.2, 0.6, 1.0, 1.5, 3.0
    assert parse_strategy("factor_rule:f=1.0").select(state).sum().item() == 3
    assert parse_strategy("factor_rule:f=0.5").select(state).sum().item() == 1
    assert parse_strategy("factor_rule:f=0.1").select(state).sum().item() == 1   # at least one


@dataclass
class Counter(Strategy):
    """Reveals one position a pass and counts its passes per input in the loop's memory."""
    name: ClassVar[str] = "counter"
    seen: list = None

    def start_memory(self, tokens, masked):
        return {"count": torch.zeros(tokens.shape[0], dtype=torch.long)}

    def select(self, state):
        assert torch.equal(state.memory["count"], torch.full_like(state.memory["count"], state.step))
        state.memory["count"] = state.memory["count"] + 1
        first = state.masked.float().argmax(1)
        return torch.nn.functional.one_hot(first, state.masked.shape[1]).bool()


def test_memory_follows_each_input_as_rows_leave_the_batch(table_model):
    masked = torch.tensor([[True] * 6, [True, False, False, False, False, False], [True] * 3 + [False] * 3])
    result = decode(table_model, torch.zeros(3, 6, dtype=torch.long), masked, Counter())
    assert result.passes.tolist() == [6, 1, 3]


@dataclass
class Remasker(Strategy):
    """A hostile re-masking strategy: ``target`` names what it masks again."""
    name: ClassVar[str] = "remasker"
    remasks: ClassVar[bool] = True
    target: str = "given"
    budget: int = 20

    def pass_budget(self):
        return self.budget

    def select(self, state):
        reveal = torch.zeros_like(state.masked)
        if self.target == "stall":
            return Selection(reveal, torch.zeros_like(state.masked))
        reveal[:, 1] = state.masked[:, 1]
        remask = torch.zeros_like(state.masked)
        column = {"given": 0, "masked": 2, "decoded": 1}[self.target]
        remask[:, column] = state.step > 0 if self.target == "decoded" else True
        return Selection(reveal, remask & ~reveal)


def start_with_a_given():
    masked = torch.tensor([[False, True, True, True]])
    return torch.tensor([[2, 0, 0, 0]]), masked


@pytest.mark.parametrize("target", ["given", "masked"])
def test_a_remasking_strategy_cannot_mask_a_given_or_a_masked_position(target):
    model = TableLike(4)
    with pytest.raises(BenchError, match="re-masked a position that is masked, given or a starting token"):
        decode(model, *start_with_a_given(), Remasker(target))


def test_the_budget_stops_a_strategy_that_leaves_positions_masked():
    with pytest.raises(BenchError, match="after its budget of 5 passes"):
        decode(TableLike(4), *start_with_a_given(), Remasker("stall", budget=5))
    with pytest.raises(BenchError, match="after its budget of 3 passes"):   # re-masks what it reveals
        decode(TableLike(4), *start_with_a_given(), Remasker("decoded", budget=3))


def test_a_selection_needs_a_declared_remasking_strategy():
    class Undeclared(Remasker):
        remasks: ClassVar[bool] = False

    with pytest.raises(BenchError, match="does not declare remasks"):
        decode(TableLike(4), *start_with_a_given(), Undeclared("decoded"))


class TableLike:
    """Fixed logits over 3 values at ``n`` positions."""
    value_tokens = torch.tensor([1, 2, 3])

    def __init__(self, n):
        self.logits = torch.tensor([[2.0, 0.0, -1.0]]).expand(n, 3)

    def __call__(self, tokens, masked):
        return ModelOutput(logits=self.logits.expand(tokens.shape[0], -1, -1).clone())


def test_remasked_positions_go_back_to_the_starting_token_and_are_counted():
    task, model, eval_set = loaded("hmm")
    result = decode(model, eval_set.tokens[:6], eval_set.masked[:6], parse_strategy("dplm:steps=8"), 1.0, seed=1)
    assert result.passes.tolist() == [8] * 6 and (result.remasked > 0).all()
    assert (result.tokens >= 1).all()                                  # every position decoded at the end


def test_remdm_at_eta_0_masks_nothing_again_so_its_ablation_isolates_re_masking():
    """The re-masking ablation's two sides (strategies/schedules/presets.py): ReMDM at its default
    eta re-masks decoded positions; at eta 0 it is MDLM's sampler and re-masks none."""
    task, model, eval_set = loaded("hmm")
    runs = {eta: decode(model, eval_set.tokens[:6], eval_set.masked[:6], parse_strategy(f"remdm:eta={eta},steps=16"),
                        1.0, seed=1) for eta in (0.02, 0)}
    assert int(runs[0.02].remasked.sum()) > 0 and int(runs[0].remasked.sum()) == 0
    assert runs[0].passes.tolist() == [16] * 6


def test_block_is_left_out_of_names_and_identities_at_its_default():
    assert canonical(parse_strategy("topk:k=3")) == "topk:k=3,order=confidence"
    assert "block" not in strategy_params(parse_strategy("eb"))
    assert canonical(parse_strategy("topk:k=3,block=9")) == "topk:k=3,order=confidence,block=9"


def test_the_exact_task_measures_are_near_zero_for_samples_of_the_chain():
    task = make_task("hmm")
    values, _ = chain.sample(task.hmm, 2000, torch.Generator().manual_seed(3))
    pairs = chain.pair_marginals(task.hmm).numpy()
    assert 0 <= transition_kl(values.numpy(), pairs) < 3e-3            # the plug-in bias, ~2e-4 here
    shuffled = np.random.default_rng(0).permuted(values.numpy(), axis=1)   # right marginals, no transitions
    assert transition_kl(shuffled, pairs) > 0.1
    entropy, error = chain.entropy_estimate(task.hmm, n=2000, seed=4)
    assert abs(entropy - float(-chain.log_likelihood(task.hmm, values).mean())) < 6 * max(error, 0.1)
