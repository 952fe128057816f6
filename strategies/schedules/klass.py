"""KLASS, KL-adaptive stability sampling (Kim et al. 2025): reveal the positions whose predictive
distribution has settled, else fall back to top-k on LLaDA's linear schedule."""
from dataclasses import dataclass
from typing import ClassVar

import torch

from bench.core import Strategy
from bench.registry import PASSES_PER_POSITION, bounded, register_strategy
from strategies.ordering import block_eligible, block_field, check_block, top_k_mask
from strategies.schedules.parts import block_counts, block_steps, check_steps, quota
from strategies.schedules.scheduled import schedule_position, start_schedule_memory


def kl_rows(p, q):
    """[..., N] KL(p || q) over the last axis of probabilities (0 log 0 = 0; q floored at 1e-12)."""
    return (torch.special.xlogy(p, p) - p * q.clamp_min(1e-12).log()).sum(-1)


@register_strategy
@dataclass
class KLASS(Strategy):
    """Reveal every position whose KL(p_t || p_t-1) stayed below kappa over the last ``history``
    passes and whose confidence is above tau; if none is, the top-k by confidence on the linear
    schedule over ``steps``.

    KLASS keeps each input's last ``history`` predictive distributions in the loop's per-input
    memory (bench.core.Strategy.start_memory), so its state follows the input across batches.
    history 2 is the reference's H; kappa 0.01 and tau 0.9 are ours (docs/strategies.md)."""
    name: ClassVar[str] = "klass"
    kappa: float = 0.01
    tau: float = 0.9
    history: int = bounded(2, per_position=1)
    steps: int = bounded(16, per_position=PASSES_PER_POSITION)
    block: int = block_field()

    def __post_init__(self):
        if not self.kappa > 0 or not 0 < self.tau <= 1:
            raise ValueError(f"kappa must be > 0 and tau in (0, 1], got kappa={self.kappa}, tau={self.tau}")
        if self.history < 1:
            raise ValueError(f"history must be at least 1, got {self.history}")
        check_steps(self.steps)
        check_block(self.block)

    def start_memory(self, tokens, masked):
        return start_schedule_memory(tokens)   # the distributions join at the first pass (V is known then)

    def settled(self, state, probs):
        """[B, N] bool: KL below kappa at each of the last ``history`` passes (stored ones)."""
        if state.step < self.history:
            return torch.zeros_like(state.masked)
        past = state.memory["probs"]                                          # [B, H, N, V], newest last
        chain = torch.cat([past, probs.unsqueeze(1)], 1)
        return (kl_rows(chain[:, 1:], chain[:, :-1]) < self.kappa).all(1)

    def select(self, state):
        self.state_memory(state)
        probs = state.probs
        eligible = block_eligible(state.masked, self.block)
        ready = eligible & self.settled(state, probs) & (state.confidence > self.tau)
        inner, current = schedule_position(state, self.block)
        total, left = block_counts(state, self.block)
        count = quota("linear", inner, block_steps(state, self.block, self.steps), total, left)
        past = state.memory.get("probs", probs.unsqueeze(1).expand(-1, self.history, -1, -1))
        state.memory = {"block": current, "inner": inner + 1,
                        "probs": torch.cat([past[:, 1:], probs.unsqueeze(1)], 1)}
        fallback = top_k_mask(state.confidence, eligible, count.unsqueeze(1))
        finish = (count >= left).unsqueeze(1)   # the schedule's last step takes what is left
        return torch.where(ready.any(1, keepdim=True) & ~finish, ready, fallback)
