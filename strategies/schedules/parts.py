"""The shared parts: position scores (which masked position first), blocks (which positions are
eligible) and step schedules (how many to reveal at a pass). Any score combines with any schedule
and any block length (strategies.schedules.scheduled)."""
import math
from dataclasses import field

import torch

from bench.core import ModelOutput
from bench.decode import fill_values
from bench.errors import BenchError
from strategies.ordering import ORDERS, block_positions, order_score

SCORES = ("random",) + ORDERS + ("ltr",)
SCHEDULES = ("constant", "linear", "cosine", "bernoulli")
MDLM_EPS = 1e-5   # MDLM's last time on its grid linspace(1, eps, S + 1)


def score_field(default="random"):
    return field(default=default, metadata={"choices": SCORES})


def schedule_field(default="linear"):
    return field(default=default, metadata={"choices": SCHEDULES})


def check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


def check_steps(steps):
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")


def position_score(state, score):
    """[B, N] float, higher = reveal earlier: ``random`` draws uniforms from each input's own
    stream (the vanilla sampler's random order), ``ltr`` prefers the leftmost position, the
    others are the model's confidence, margin or minus entropy (strategies.ordering)."""
    if score == "random":
        return state.uniform("order").float()
    if score == "ltr":
        n = state.masked.shape[1]
        return -torch.arange(n, dtype=torch.float32).expand(state.masked.shape[0], n)
    return order_score(state, score)


def block_steps(state, block, steps):
    """[B] long: the passes a schedule of ``steps`` gives each row's current block: the steps
    shared over the row's blocks that held masked positions at the start, as evenly as LLaDA
    shares them (the first ``steps mod blocks`` one more), at least one each."""
    start = state.start_masked
    if block == 0:
        return torch.full((start.shape[0],), steps, dtype=torch.long)
    n = start.shape[1]
    blocks = -(-n // block)
    padded = torch.nn.functional.pad(start, (0, blocks * block - n))
    holds = padded.view(start.shape[0], blocks, block).any(-1)            # [B, blocks]
    count = holds.sum(1).clamp_min(1)
    first = torch.where(state.masked.any(1), state.masked.float().argmax(1), 0)
    rank = (holds.long().cumsum(1) - 1).gather(1, (first // block).unsqueeze(1)).squeeze(1)
    return (steps // count + (rank < steps % count).long()).clamp_min(1)


def block_counts(state, block):
    """([B] positions of the current block masked at the start, [B] of them masked now)."""
    here = block_positions(state.masked, block)
    return (state.start_masked & here).sum(1), (state.masked & here).sum(1)


def quota(schedule, inner, steps_here, total, left, k=1):
    """[B] long, at least 1: how many eligible masked positions to reveal at in-block step
    ``inner`` [B] of ``steps_here`` [B], the block having held ``total`` [B] masked positions of
    which ``left`` [B] are masked now: ``constant`` k; ``linear`` LLaDA's floor(M/S), the first
    M mod S steps one more; ``cosine`` ESM3's, int(cos((s+1)/S * pi/2) * M + 0.1) still masked
    after step s. The last step of a block reveals what is left of it."""
    if schedule == "constant":
        return torch.full_like(total, k)
    if schedule == "linear":
        counts = total // steps_here + (inner < total % steps_here).long()
    else:
        ratio = torch.cos((inner + 1).double() / steps_here * math.pi / 2)
        counts = left - (ratio * total + 0.1).long()
    return torch.where(inner >= steps_here - 1, left, counts).clamp_min(1)


def bernoulli_quota(state, inner, steps_here, eligible):
    """([B] long count, [B] long schedule steps spent): MDLM's rule, each eligible masked
    position revealed with probability 1 - t_(j+1) / t_j on t = linspace(1, 1e-5, S + 1),
    skipping the steps at which no position would be revealed (their pass would change nothing:
    MDLM's cache skips it too); the last step reveals what is left. Each row's draws come from
    its own stream."""
    count = torch.zeros(eligible.shape[0], dtype=torch.long)
    spent = torch.zeros_like(count)
    todo = torch.ones_like(count, dtype=torch.bool)
    for extra in range(int(steps_here.max())):   # a row stops at its first step that reveals
        step = inner + extra
        now = 1 - (1 - MDLM_EPS) * step.double() / steps_here
        after = 1 - (1 - MDLM_EPS) * (step + 1).double() / steps_here
        chance = torch.where(step >= steps_here - 1, 1.0, 1 - after / now)               # [B]
        hits = ((state.uniform(f"bernoulli:{extra}") < chance.unsqueeze(1)) & eligible).sum(1)
        count = torch.where(todo, hits, count)
        spent = torch.where(todo, extra + 1, spent)
        todo &= hits == 0
        if not todo.any():
            break
    return count.clamp_min(1), spent


def loop_values(state, logits, temperature, where):
    """[B, N] long: at ``where`` the value index the decode loop draws at this pass from ``logits``
    [B, N, V] (bench.decode.fill_values itself: the argmax at temperature 0, else a draw from each
    input's own stream keyed by pass and position), 0 elsewhere. A rule that ranks by the drawn
    value (P2, CreditDecoding) ranks the very value the loop then reveals at a picked position."""
    values = torch.arange(logits.shape[-1])       # token id = value index: the filled ids are the values
    drawn, _ = fill_values(torch.zeros_like(state.tokens), ModelOutput(logits=logits), where, values,
                           temperature=temperature, streams=state.streams, step=state.step)
    return drawn


def bound_temperature(strategy):
    """The value temperature of the task ``strategy`` was bound to (``bind(task, model)``): a rule
    that ranks by the drawn value must draw as the loop does."""
    if strategy.temperature is None:
        raise BenchError(f"strategy {strategy.name} has no value temperature (bind(task, model) was not called)")
    return strategy.temperature
