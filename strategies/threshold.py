"""Confidence threshold (Fast-dLLM, Wu et al. 2025): reveal every confident position."""
from dataclasses import dataclass
from typing import ClassVar

from bench.core import Strategy
from bench.registry import register_strategy
from strategies.ordering import top_k_mask


@register_strategy
@dataclass
class Threshold(Strategy):
    """Reveal every masked position whose top probability is >= tau; at least the most confident."""
    name: ClassVar[str] = "threshold"
    tau: float = 0.9

    def __post_init__(self):
        if not 0 < self.tau <= 1:
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")

    def select(self, state):
        confident = state.masked & (state.confidence >= self.tau)           # [B, N]
        best = top_k_mask(state.confidence, state.masked, 1)                # [B, N]
        return confident | best
