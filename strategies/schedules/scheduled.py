"""Any score on any schedule, in blocks: the vanilla MDM sampler (random order, linear schedule),
MDLM (Bernoulli reveals), LLaDA (confidence on the linear schedule in blocks), ESM3 / MaskGIT
(cosine), left-to-right decoding (``ltr``)."""
from dataclasses import dataclass
from typing import ClassVar

import torch

from bench.core import Strategy
from bench.registry import PASSES_PER_POSITION, bounded, register_strategy
from strategies.ordering import block_eligible, check_block, top_k_mask
from strategies.schedules.parts import (
    SCHEDULES,
    SCORES,
    bernoulli_quota,
    block_counts,
    block_steps,
    check_choice,
    check_steps,
    position_score,
    quota,
    schedule_field,
    score_field,
)


def start_schedule_memory(tokens):
    """Per input: the block its schedule is in (-1: none yet) and the steps spent in it."""
    rows = tokens.shape[0]
    return {"block": torch.full((rows,), -1, dtype=torch.long), "inner": torch.zeros(rows, dtype=torch.long)}


def schedule_position(state, block):
    """([B] in-block step, [B] current block id), resetting the step where a row's block changed."""
    masked = state.masked
    first = torch.where(masked.any(1), masked.float().argmax(1), 0)
    current = first // block if block else torch.zeros_like(first)
    inner = torch.where(current == state.memory["block"], state.memory["inner"], 0)
    return inner, current


@register_strategy
@dataclass
class Scheduled(Strategy):
    """Reveal the positions ranked highest by ``score``, as many as ``schedule`` says, in blocks.

    Scores: ``random`` (uniforms from each input's own stream: the vanilla MDM sampler's random
    order), ``confidence``, ``margin``, ``entropy`` (lowest first), ``ltr`` (leftmost first).
    Schedules over ``steps`` passes a block (the steps shared over the input's blocks as LLaDA's
    ``generate.py`` does): ``linear`` (LLaDA's get_num_transfer_tokens: floor(M/S) a step, the
    first M mod S steps one more), ``cosine`` (ESM3's generate: int(cos((s+1)/S * pi/2) * M + 0.1)
    still masked after step s), ``bernoulli`` (MDLM's: each masked position with probability
    1 - s/t on linspace(1, 1e-5, S + 1), steps that would reveal nothing skipped, the count then
    taken by score: with ``random`` exactly MDLM's law), ``constant`` (``k`` a pass, no step bound).
    Every schedule reveals at least one position a pass and what is left at its last step, so
    an input takes at most ``steps`` passes (or its number of blocks, if larger). The default is
    the vanilla sampler: random order, linear schedule, no blocks.
    """
    name: ClassVar[str] = "schedule"
    score: str = score_field()
    schedule: str = schedule_field()
    steps: int = bounded(16, per_position=PASSES_PER_POSITION)
    k: int = 1
    block: int = 0

    def __post_init__(self):
        check_choice("score", self.score, SCORES)
        check_choice("schedule", self.schedule, SCHEDULES)
        check_steps(self.steps)
        check_block(self.block)
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")

    def samples(self):
        return self.score == "random" or self.schedule == "bernoulli"

    def start_memory(self, tokens, masked):
        return start_schedule_memory(tokens)

    def select(self, state):
        self.state_memory(state)
        eligible = block_eligible(state.masked, self.block)                # [B, N]
        inner, current = schedule_position(state, self.block)
        steps_here = block_steps(state, self.block, self.steps)
        if self.schedule == "bernoulli":
            count, spent = bernoulli_quota(state, inner, steps_here, eligible)
        else:
            total, left = block_counts(state, self.block)
            count, spent = quota(self.schedule, inner, steps_here, total, left, self.k), 1
        state.memory = {"block": current, "inner": inner + spent}
        return top_k_mask(position_score(state, self.score), eligible, count.unsqueeze(1))
