"""The greedy rule shared by the MI-guided strategies.

Masked positions are walked in order of ascending entropy. A selected set U starts empty and a
budget starts at gamma; position i costs  H_i + lam * sum_{j in U} MI[i, j]  and is taken when
the cost fits the remaining budget (the budget then shrinks by the cost), else deferred to a
later pass. The first position is always taken; a budget never goes below 0, so after an
over-budget first pick only positions of exactly zero cost still fit.

Where the pair term is not symmetric (an oracle's directed MI), ``mi_back`` adds the other
direction: the candidate's MI towards the positions already chosen, asked only for candidates
whose entropy alone still fits (the penalty can only raise the cost).
"""
import torch

from strategies.ordering import rank_masked


def greedy_select(entropy, masked, gamma, lam, mi_row, mi_back=None):
    """bool [B, N]: the positions to reveal.

    Args:
        entropy: [B, N] entropy of each position in nats.
        masked: [B, N] bool, at least one True per row.
        gamma: the budget in nats; lam: the weight of the MI penalty.
        mi_row: (rows [R], positions [R]) -> [R, N] MI of each newly selected position with
            every position; called only while a later position could still be affected.
        mi_back: optional (rows [R], positions [R], chosen [R, N] bool) -> [R] extra penalty of
            each candidate towards the chosen positions.
    """
    batch, _ = masked.shape
    order, _ = rank_masked(-entropy, masked)               # [B, N] ascending entropy first
    n_masked = masked.sum(1)                                # [B]
    rows = torch.arange(batch)
    budget = torch.full((batch,), float(gamma))
    penalty = torch.zeros(entropy.shape)                    # [B, N] sum of MI with U
    pick = torch.zeros_like(masked)
    for t in range(int(n_masked.max())):
        candidate = order[:, t]                             # [B]
        valid = t < n_masked
        cand_entropy = entropy[rows, candidate]
        if not (valid & ((budget > 0) | (cand_entropy <= 0) | (t == 0))).any():
            break                                           # nothing later can fit anywhere
        cost = cand_entropy + lam * penalty[rows, candidate]
        if mi_back is not None and t > 0:
            ask = valid & (cand_entropy <= budget) & pick.any(1)
            if ask.any():
                cost[ask] += lam * mi_back(rows[ask], candidate[ask], pick[ask])
        take = valid & ((cost <= budget) | (t == 0))
        budget = torch.where(take, (budget - cost).clamp_min(0), budget)
        pick[rows[take], candidate[take]] = True
        update = take & (t + 1 < n_masked) & (budget > 0)
        if update.any():
            penalty[rows[update]] += mi_row(rows[update], candidate[update]).clamp_min(0)
    return pick
