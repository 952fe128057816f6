"""EB-Sampler (Ben-Hamu et al. 2025): entropy-bounded unmasking.

Masked positions are sorted by an error proxy (lowest entropy first by default). The sampler
reveals the largest prefix U of that order with  sum_{i in U} H_i - max_{i in U} H_i <= gamma,
always at least one position. gamma = 0 gives one position per pass, plus any further
positions of exactly zero entropy.
"""
from dataclasses import dataclass
from typing import ClassVar

from bench.core import Strategy
from bench.registry import register_strategy
from strategies.ordering import (
    block_eligible,
    block_field,
    check_block,
    check_order,
    order_field,
    order_score,
    rank_masked,
)


@register_strategy
@dataclass
class EBSampler(Strategy):
    """Reveal the longest proxy-ordered prefix whose entropy sum minus its max is <= gamma."""
    name: ClassVar[str] = "eb"
    gamma: float = 0.1
    order: str = order_field("entropy")
    block: int = block_field()

    def __post_init__(self):
        if not self.gamma >= 0:
            raise ValueError(f"gamma must be >= 0, got {self.gamma}")
        check_order(self.order)
        check_block(self.block)

    def select(self, state):
        eligible = block_eligible(state.masked, self.block)             # [B, N]
        order, ranks = rank_masked(order_score(state, self.order), eligible)
        entropy = state.entropy.gather(1, order)                       # [B, N] in reveal order
        in_order_masked = eligible.gather(1, order)
        entropy = entropy.masked_fill(~in_order_masked, 0.0)
        spent = entropy.cumsum(1) - entropy.cummax(1).values           # bound of each prefix
        fits = (spent <= self.gamma) & in_order_masked                 # monotone in the prefix
        count = fits.sum(1, keepdim=True).clamp_min(1)                 # [B, 1]
        return eligible & (ranks < count)
