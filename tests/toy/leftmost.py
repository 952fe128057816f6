"""A toy strategy: reveal the ``k`` leftmost masked positions."""
from dataclasses import dataclass
from typing import ClassVar

from bench.core import Strategy
from bench.registry import register_strategy


@register_strategy
@dataclass
class Leftmost(Strategy):
    """Reveal the k leftmost masked positions."""
    name: ClassVar[str] = "leftmost"
    k: int = 1

    def __post_init__(self):
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")

    def select(self, state):
        rank = state.masked.long().cumsum(1)          # [B, N] 1 at the leftmost masked position
        return state.masked & (rank <= self.k)
