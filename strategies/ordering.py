"""Shared pieces: position scores ("which to reveal first") and picking the best k."""
from dataclasses import field

import torch

ORDERS = ("confidence", "entropy", "margin")


def order_field(default="confidence"):
    """A dataclass field for a strategy's ranking order."""
    return field(default=default, metadata={"choices": ORDERS})


def check_order(order):
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")


def order_score(state, order):
    """[B, N] score, higher = reveal earlier: top probability, minus entropy, or top-2 margin."""
    check_order(order)
    return {"confidence": lambda: state.confidence, "entropy": lambda: -state.entropy,
            "margin": lambda: state.margin}[order]()


def rank_masked(score, masked):
    """(order [B, N], ranks [B, N]): masked positions by descending score, ties to the lower
    index; unmasked positions rank last."""
    batch, n = score.shape
    score = score.masked_fill(~masked, float("-inf"))
    order = torch.sort(score, dim=1, descending=True, stable=True).indices
    ranks = torch.empty_like(order).scatter_(1, order, torch.arange(n).expand(batch, n))
    return order, ranks


def top_k_mask(score, masked, k):
    """bool [B, N]: the min(k, #masked) masked positions of highest score in each row.

    ``k`` is an int or a LongTensor [B, 1]. Deterministic: ties go to the lower position.
    """
    _, ranks = rank_masked(score, masked)
    return masked & (ranks < k)


def block_field():
    """A dataclass field for a block length: 0 (the default, left out of the run's name so that
    runs made before blocks existed keep their identity) ranks every masked position; B > 0 only
    those of the current block, the B-long block of the leftmost masked position (semi-
    autoregressive decoding, LLaDA's ``block_length``)."""
    return field(default=0, metadata={"omit_default": True})


def check_block(block):
    if block < 0:
        raise ValueError(f"block must be >= 0 (0: no blocks), got {block}")


def block_positions(masked, block):
    """[B, N] bool: the positions of each row's current block (every position for block 0)."""
    if block == 0:
        return torch.ones_like(masked)
    first = torch.where(masked.any(1), masked.float().argmax(1), 0)        # leftmost masked position
    blocks = torch.arange(masked.shape[1]) // block
    return blocks.unsqueeze(0) == (first // block).unsqueeze(1)


def block_eligible(masked, block):
    """[B, N] bool: the masked positions a rule may reveal at this pass (those of the current block)."""
    return masked if block == 0 else masked & block_positions(masked, block)
