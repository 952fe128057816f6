"""Shared pieces: position scores ("which to reveal first") and picking the best k."""
from dataclasses import field

import torch

ORDERS = ("confidence", "entropy", "margin")


def order_field(default="confidence"):
    """A dataclass field for a strategy's ranking order."""
    return field(default=default, metadata={"choices": ORDERS})


def order_score(state, order):
    """[B, N] score, higher = reveal earlier: top probability, minus entropy, or top-2 margin."""
    if order == "confidence":
        return state.confidence
    if order == "entropy":
        return -state.entropy
    if order == "margin":
        return state.margin
    raise ValueError(f"unknown order {order!r}; choose from {', '.join(ORDERS)}")


def top_k_mask(score, masked, k):
    """bool [B, N]: the min(k, #masked) masked positions of highest score in each row.

    ``k`` is an int or a LongTensor [B, 1]. Ties go to the lower position index, so the
    choice is deterministic.
    """
    batch, n = score.shape
    score = score.masked_fill(~masked, float("-inf"))
    order = torch.sort(score, dim=1, descending=True, stable=True).indices  # [B, N]
    ranks = torch.empty_like(order).scatter_(1, order, torch.arange(n).expand(batch, n))
    return masked & (ranks < k)
