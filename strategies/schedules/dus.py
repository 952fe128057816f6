"""DUS, dilated unmasking (Luxembourg et al. 2025): a planner-free order fixed in advance."""
import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from bench.core import Strategy
from bench.registry import register_strategy
from strategies.ordering import block_eligible, block_positions


def dilated_rounds(block):
    """[block] long: the round of each offset in a block, as the paper's rule makes them (Luxembourg et
    al. 2025, alpha 2; Jianguo99/OpenDLM ``opendlm/sampler/scheduler/dus.py``,
    ``_precompute_transfer_indices``): R = ceil(log2 B) rounds; round t reveals the offsets not yet
    revealed that are multiples of the stride s_t = max(1, floor(B / 2^t)); a last round smaller than
    the one before joins it. A power of 2 gives B/2-th offsets, then B/4-th, ..., odd ones last; a
    block of 27 gives strides 13, 6, 3, 1: 4 rounds of 3, 4, 4 and 16 offsets."""
    depth = max(1, math.ceil(math.log2(block)))
    rounds = torch.full((block,), -1, dtype=torch.long)
    sizes = []
    for t in range(1, depth + 1):
        stride = max(1, block // 2 ** t)
        new = (torch.arange(block) % stride == 0) & (rounds < 0)
        if t == depth and sizes and int(new.sum()) < sizes[-1]:   # merged into the round before
            rounds[new] = len(sizes) - 1
            continue
        rounds[new] = len(sizes)
        sizes.append(int(new.sum()))
    return rounds


@register_strategy
@dataclass
class DUS(Strategy):
    """Reveal, in the current block, the masked positions of the earliest dilated round.

    Within a block of ``block`` positions the rounds are fixed in advance by the paper's strides
    floor(B / 2^t) (``dilated_rounds``: every B/2-th offset, then the B/4-th ones between them, ...,
    the rest last: at most ceil(log2 B) passes a block); the model is read only for the values. A
    round with nothing masked is skipped. Default block 8 (3 rounds); DUS's text experiments use
    blocks of 32 answer tokens, too long for an 81-cell board's or a 64-long chain's rows."""
    name: ClassVar[str] = "dus"
    block: int = 8

    def __post_init__(self):
        if self.block < 2:
            raise ValueError(f"block must be at least 2, got {self.block}")

    def select(self, state):
        eligible = block_eligible(state.masked, self.block)                 # [B, N]
        n = state.masked.shape[1]
        rounds = dilated_rounds(self.block).repeat(-(-n // self.block))[:n].expand_as(eligible)
        first = rounds.masked_fill(~eligible, 10 ** 6).min(1, keepdim=True).values
        return eligible & (rounds == first) & block_positions(state.masked, self.block)
