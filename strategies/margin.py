"""Top-probability margin (Kim et al. 2025): ``topk`` with the margin order, by its own name."""
from dataclasses import dataclass
from typing import ClassVar

from bench.core import Strategy
from bench.registry import register_strategy
from strategies.ordering import block_eligible, block_field, check_block, top_k_mask


@register_strategy
@dataclass
class Margin(Strategy):
    """Reveal the k masked positions with the largest top-1 minus top-2 probability gap."""
    name: ClassVar[str] = "margin"
    k: int = 1
    block: int = block_field()

    def __post_init__(self):
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")
        check_block(self.block)

    def select(self, state):
        return top_k_mask(state.margin, block_eligible(state.masked, self.block), self.k)  # as topk:order=margin
