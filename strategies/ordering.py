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
