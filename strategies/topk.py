"""Top-k parallel decoding: k positions per pass (fewer when fewer are masked)."""
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
    top_k_mask,
)


@register_strategy
@dataclass
class TopK(Strategy):
    """Reveal the ``k`` masked positions ranked highest by ``order``.

    ``topk:order=margin`` is the top-probability-margin rule of Kim et al. (2025).
    """
    name: ClassVar[str] = "topk"
    k: int = 2
    order: str = order_field()
    block: int = block_field()

    def __post_init__(self):
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")
        check_order(self.order)
        check_block(self.block)

    def select(self, state):
        return top_k_mask(order_score(state, self.order), block_eligible(state.masked, self.block), self.k)
