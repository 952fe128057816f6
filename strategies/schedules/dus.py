"""DUS, dilated unmasking (Luxembourg et al. 2025): a planner-free order fixed in advance."""
import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from bench.core import Strategy
from bench.registry import register_strategy
from strategies.ordering import block_eligible, block_positions


def dilated_rounds(block):
    """[block] long: the round of each offset in a block: offsets 0 and B/2 first (stride B/2),
    then the new ones at stride B/4, ..., the odd offsets last: ceil(log2 B) rounds."""
    depth = max(1, math.ceil(math.log2(block)))
    offsets = torch.arange(block)
    zeros = torch.zeros_like(offsets)
    for bit in range(depth):   # trailing zero bits of each offset (offset 0: all of them)
        zeros += ((offsets % 2 ** (bit + 1)) == 0).long()
    return (depth - 1 - zeros).clamp_min(0)


@register_strategy
@dataclass
class DUS(Strategy):
    """Reveal, in the current block, the masked positions of the earliest dilated round.

    Within a block of ``block`` positions the rounds are fixed in advance (every B/2-th offset,
    then the B/4-th ones between them, ..., the odd ones last: about log2 B passes a block); the
    model is read only for the values. A round with nothing masked is skipped. Default block 8
    (3 rounds); DUS's text experiments use blocks of 32 answer tokens, too long for an 81-cell
    board's or a 64-long chain's rows."""
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
