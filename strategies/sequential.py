"""Sequential decoding: one position per pass, the best by the chosen order."""
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
class Sequential(Strategy):
    """Reveal the single masked position ranked highest by ``order``."""
    name: ClassVar[str] = "sequential"
    order: str = order_field()
    block: int = block_field()

    def __post_init__(self):
        check_order(self.order)
        check_block(self.block)

    def select(self, state):
        return top_k_mask(order_score(state, self.order), block_eligible(state.masked, self.block), 1)
