"""The Fast-dLLM factor rule (Wu et al. 2025, ``get_transfer_index_dynamic`` in Fast-dLLM's
``generate.py``, as ParallelBench's ``model/local/generate.py`` ships it)."""
from dataclasses import dataclass
from typing import ClassVar

import torch

from bench.core import Strategy
from bench.registry import register_strategy
from strategies.ordering import block_eligible, block_field, check_block, rank_masked


@register_strategy
@dataclass
class Factor(Strategy):
    """Reveal the longest confidence-sorted prefix with (n+1)(1 - c(n)) <= f; at least one.

    Masked positions sorted by confidence c(1) >= c(2) >= ...; position n is accepted while
    c(n) >= 1 - f / (n + 1), the reference's threshold list (its first entry -1: at least one
    position a pass). Default f = 1.0 (Fast-dLLM's; ParallelBench sweeps 0.7-1.9), no blocks
    (the reference's block length is for long text answers; ``block`` gives them)."""
    name: ClassVar[str] = "factor_rule"
    f: float = 1.0
    block: int = block_field()

    def __post_init__(self):
        if not self.f > 0:
            raise ValueError(f"f must be > 0, got {self.f}")
        check_block(self.block)

    def select(self, state):
        eligible = block_eligible(state.masked, self.block)                  # [B, N]
        order, ranks = rank_masked(state.confidence, eligible)
        sorted_conf = state.confidence.gather(1, order)                      # [B, N] descending
        n = torch.arange(1, eligible.shape[1] + 1, dtype=torch.float32)
        ok = (sorted_conf >= 1 - self.f / (n + 1)) & eligible.gather(1, order)
        count = ok.long().cumprod(1).sum(1, keepdim=True).clamp_min(1)       # the accepted prefix
        return eligible & (ranks < count)
