"""The greedy rule shared by the MI-guided strategies.

Masked positions are walked in order of ascending entropy. A selected set U starts empty and a
budget starts at gamma; position i costs  H_i + lam * sum_{j in U} MI[i, j]  and is taken when
the cost fits the remaining budget (the budget then shrinks by the cost), else deferred to a
later pass. The first position is always taken; a budget never goes below 0, so after an
over-budget first pick only positions of exactly zero cost still fit.

A row stops once its next candidate's entropy alone exceeds what is left of its budget (nothing
later can fit), and MI is asked for only where a later candidate could still fit.

Two implementations of the one rule: ``greedy_select`` (numpy, rows stepped together) takes MI
rows from a callable (an oracle's probes, a whole matrix); ``greedy_select_ranked`` (numba, row
by row) reads the estimator's PairReader, which computes MI a block of the entropy order at a time
as rows walk into it. They make the same float32 operations in the same order, so the same picks
(tests/test_mi_speed.py).

Where the pair term is not symmetric (an oracle's directed MI), ``mi_back`` adds the other
direction: the candidate's MI towards the positions already chosen, asked only for candidates
whose entropy alone still fits (the penalty can only raise the cost).
"""
import numpy as np
import torch

from strategies.mi.estimator import STEP
from strategies.ordering import rank_masked


def greedy_select(entropy, masked, gamma, lam, mi_row, mi_back=None, read_ahead=True):
    """bool [B, N]: the positions to reveal.

    A row is decided once its next candidate's entropy alone exceeds the remaining budget: the
    order is by ascending entropy, the budget only shrinks and a cost is never below the
    entropy, so nothing later fits. Decided rows leave the loop, which ends when none is left.

    Args:
        entropy: [B, N] entropy of each position in nats.
        masked: [B, N] bool, at least one True per row.
        gamma: the budget in nats; lam: the weight of the MI penalty.
        mi_row: (rows [R], positions [R]) -> [R, N] MI of each newly selected position with
            every position; called only while a later position could still be affected.
        mi_back: optional (rows [R], positions [R], chosen [R, N] bool) -> [R] extra penalty of
            each candidate towards the chosen positions.
        read_ahead: also skip ``mi_row`` where the row's next candidate cannot fit (False: ask
            for it wherever budget is left, as an oracle whose probing passes are counted did).
    """
    batch, _ = masked.shape
    order, _ = rank_masked(-entropy, masked)               # [B, N] ascending entropy first
    # the loop's bookkeeping runs in numpy (float32, the same operations as torch's, a tenth of
    # the per-call cost); MI rows come from and go to torch
    in_order = entropy.float().gather(1, order).numpy()     # [B, N] the candidates' entropies
    order, n_masked = order.numpy(), masked.sum(1).numpy()
    pick = np.zeros(masked.shape, dtype=bool)
    lam = np.float32(lam)
    # rows not yet decided (``live``, indices into the batch) and their state, compacted as rows leave
    live = np.arange(batch)
    budget = np.full(batch, gamma, dtype=np.float32)
    penalty = np.zeros(masked.shape, dtype=np.float32)      # [L, N] sum of MI with U
    skip_mi = read_ahead and lam == 0                        # the penalty is 0 whatever MI is
    for t in range(int(n_masked.max(initial=0))):
        cand_entropy = in_order[:, t]
        going = t < n_masked
        if t > 0:
            going &= cand_entropy <= budget
        if not going.all():
            keep = np.flatnonzero(going)
            if keep.size == 0:
                break                                       # every row is decided
            live, order, in_order, n_masked = live[keep], order[keep], in_order[keep], n_masked[keep]
            budget, penalty, cand_entropy = budget[keep], penalty[keep], cand_entropy[keep]
        candidate = order[:, t]
        cost = cand_entropy + lam * penalty[np.arange(len(live)), candidate]
        if mi_back is not None and t > 0:
            ask = pick[live].any(1)
            if ask.any():
                back = mi_back(torch.from_numpy(live[ask]), torch.from_numpy(candidate[ask]),
                               torch.from_numpy(pick[live[ask]]))
                cost[ask] += lam * back.float().numpy()
        take = cost <= budget if t > 0 else np.ones(len(live), dtype=bool)
        budget = np.where(take, np.maximum(budget - cost, np.float32(0)), budget)
        pick[live[take], candidate[take]] = True
        update = take & (t + 1 < n_masked) & (budget > 0)
        if read_ahead and t + 1 < in_order.shape[1]:
            update &= in_order[:, t + 1] <= budget
        if update.any() and not skip_mi:
            rows = np.flatnonzero(update)
            mi = mi_row(torch.from_numpy(live[rows]), torch.from_numpy(candidate[rows]))
            penalty[rows] += np.maximum(mi.float().numpy(), np.float32(0))
    return torch.from_numpy(pick)


def greedy_select_ranked(masked, gamma, lam, reader):
    """``greedy_select`` (read_ahead, no ``mi_back``) on a PairReader: bool [B, N], the same picks.

    Each row is walked in numba until it is decided or its next candidate lies past the part of
    the entropy order whose MI the reader has made for it (its frontier); the reader then moves
    the frontier of every row waiting, and the walk goes on from where it stopped."""
    batch, n = masked.shape
    order = reader.order_np                                  # rank_masked(-entropy, masked)'s order
    in_order = reader.ranked_bound                           # the entropies in that order (0 past the masked)
    n_masked = masked.sum(1).numpy()
    step, taken, count = (np.zeros(batch, dtype=np.int64), np.zeros((batch, n), dtype=np.int64),
                          np.zeros(batch, dtype=np.int64))
    budget = np.full(batch, gamma, dtype=np.float32)
    picked, waits = np.zeros((batch, n), dtype=bool), np.full(batch, -1, dtype=np.int64)
    rows = np.arange(batch)
    from strategies.mi._walk import (
        walk,  # numba (0.35 s to import) only where an MI rule runs
    )
    while rows.size:
        walk(rows, in_order, n_masked, np.float32(lam), reader.ranked_mi, reader.frontier, reader.ranked_bound,
             step, budget, taken, count, picked, waits, STEP)
        rows = rows[waits[rows] >= 0]
        for frontier in np.unique(waits[rows]).tolist():
            reader.extend(rows[waits[rows] == frontier], frontier)
    pick = np.zeros((batch, n), dtype=bool)
    np.put_along_axis(pick, order, picked, 1)
    return torch.from_numpy(pick)
