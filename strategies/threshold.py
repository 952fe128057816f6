"""Confidence threshold (Fast-dLLM, Wu et al. 2025): reveal every confident position."""
from dataclasses import dataclass
from typing import ClassVar

from bench.core import Strategy
from bench.registry import register_strategy
from strategies.ordering import block_eligible, block_field, check_block, top_k_mask


@register_strategy
@dataclass
class Threshold(Strategy):
    """Reveal every masked position whose top probability is >= tau; at least the most confident."""
    name: ClassVar[str] = "threshold"
    tau: float = 0.9
    block: int = block_field()

    def __post_init__(self):
        if not 0 < self.tau <= 1:
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")
        check_block(self.block)

    def select(self, state):
        eligible = block_eligible(state.masked, self.block)                 # [B, N]
        confident = eligible & (state.confidence >= self.tau)
        best = top_k_mask(state.confidence, eligible, 1)
        return confident | best
