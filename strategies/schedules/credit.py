"""CreditDecoding (Wang et al. 2025): inclusionAI/dInfer ``python/dinfer/decoding/parallel_strategy.py``
``CreditThresholdParallelDecoder`` (lines 314-390) on ``get_transfer_index_threshold`` (264-285).
docs/strategies.md gives the formula, the defaults and every deviation.

Each position of the current block keeps a credit per value: decayed by beta at every pass, plus
p^gamma on the top-1 value of every masked position; the pass's logits plus alpha log(1 + credit)
are the fused logits the rule ranks by and the loop draws the revealed values from.
"""
import copy
from dataclasses import dataclass
from typing import ClassVar

import torch

from bench.core import Strategy
from bench.registry import bounded, register_strategy
from strategies.ordering import block_eligible, block_field, block_positions, check_block
from strategies.schedules.parts import bound_temperature, loop_values

TIE_MARGIN = 1e-5         # line 283: the most confident and every one within this of it are taken
THRESHOLD_FLOOR = -1000   # line 283's clamp


def fused_logits(logits, credit, masked, here, alpha, gamma, beta):
    """(fused logits [B, N, V], credit after this pass [B, N, V]): ``_apply_credit_fusion``
    (lines 333-362) on the positions ``here`` (the current block; its key's matrix): decay by beta
    (352; a block's first pass decays zeros), add p^gamma at each masked position's top-1 value
    (354-358), fuse logits + alpha log(credit + 1) (360)."""
    credit = torch.where(here.unsqueeze(-1), credit * beta, credit)
    top1_probs, top1 = torch.softmax(logits.float(), -1).max(-1)
    enhanced = top1_probs.pow(gamma) * (masked & here).float()
    credit = credit.scatter_add(2, top1.unsqueeze(-1), enhanced.unsqueeze(-1))
    return logits.float() + alpha * torch.log(credit + 1), credit


def above_threshold(confidence, eligible, threshold):
    """bool [B, N]: ``get_transfer_index_threshold``'s pick (lines 281-284): every eligible position
    whose confidence is >= min(max confidence - 1e-5, threshold)."""
    confidence = confidence.masked_fill(~eligible, float("-inf"))
    bar = (confidence.max(1).values - TIE_MARGIN).clamp(THRESHOLD_FLOOR, threshold).unsqueeze(1)
    return eligible & (confidence >= bar)


@register_strategy
@dataclass
class Credit(Strategy):
    """CreditDecoding (inclusionAI/dInfer python/dinfer/decoding/parallel_strategy.py): threshold on fused logits.

    Per position and value, credit C decays by ``beta`` each pass of the current block (``block``;
    0: the whole input) and gains p^``gamma`` at a masked position's top-1 value p; the fused
    logits are l + ``alpha`` log(C + 1). Each masked position of the block draws x0 from the fused
    logits (the loop's draw: argmax at temperature 0) and is revealed with x0 when softmax(fused)
    [x0] >= min(max of them - 1e-5, ``threshold``). alpha 0.7, gamma 0.2, beta 0.8 are the
    reference's (lines 320-322), threshold 0.9 its benchmark's (benchmarks/benchmark.py 186);
    alpha 0 is the same rule without credit (dInfer's ThresholdParallelDecoder, the ablation)."""
    name: ClassVar[str] = "credit"
    picks_by_value: ClassVar[bool] = True
    threshold: float = bounded(0.9, low=0.0, high=1.0)
    alpha: float = bounded(0.7, low=0.0, high=100.0)
    gamma: float = bounded(0.2, low=0.0, high=100.0)
    beta: float = bounded(0.8, low=0.0, high=1.0)
    block: int = block_field()

    def __post_init__(self):
        check_block(self.block)
        self.temperature = None

    def bind(self, task, model):
        self.temperature = float(task.temperature)

    def select(self, state):
        temperature = bound_temperature(self)
        memory = self.state_memory(state)
        logits = state.out.logits
        credit = memory.get("credit")
        if credit is None:   # the values' count is known at the first pass (the loop zero-fills other rows)
            credit = torch.zeros(logits.shape, dtype=torch.float32)
        here = block_positions(state.masked, self.block)
        fused, memory["credit"] = fused_logits(logits, credit, state.masked, here, self.alpha, self.gamma, self.beta)
        eligible = block_eligible(state.masked, self.block)
        values = loop_values(state, fused, temperature, eligible)                          # line 268
        confidence = torch.softmax(fused, -1).gather(-1, values.unsqueeze(-1)).squeeze(-1)  # 273-275
        fused_out = copy.copy(state.out)     # the loop draws the revealed values from state.out (line 376)
        fused_out.logits = fused
        state.out = fused_out
        return above_threshold(confidence, eligible, self.threshold)
