"""ARness: how autoregressive-like (left to right) a decode's reveal order is.

The definition is Global-ARness@k of Li, Muhtar, Yin et al., "Why Diffusion Language Models Struggle
with Truly Parallel (Non-Autoregressive) Decoding?" (arXiv 2602.23225, section 3.2, eqs. 2-3; code
https://github.com/pixeli99/NAP), who adopt it from Gong et al. (2025). With the decode written as
the positions p_1..p_L committed at steps c = 1..L and M_{c-1} the positions still masked before
step c,

    I(c, k) = 1 if p_c is among the k smallest positions of M_{c-1}, else 0
    Global-ARness@k = (1/L) sum_c I(c, k)  in [0, 1]

1 at k = 1 is strict left to right; the paper's primary measure is k = 1.

The paper commits one position a step. A pass here may reveal several, so the positions revealed
at one pass are taken as committed in increasing position order (our reading, stated): position p
revealed at pass t then counts when fewer than k of the masked positions to its left are revealed
after pass t. A left-to-right block of several positions a pass so scores 1, as the paper's
"AR Order" rows (1.00 under Fast-dLLM's parallel blocks, its Table 1) require. A re-masking
strategy's positions count at the pass that gave them their final value.

A record carries its order as ``reveal_pass`` (bench.run.cell.rows_records: per position the pass,
from 0, at which it was revealed; None where it was given). Runs made before the field was
recorded have no ARness (the metric is absent, not 0).
"""
import numpy as np

from bench.stats import mean_metric

ARNESS_K = 1   # the paper's primary tolerance window


def global_arness(reveal_pass, k=ARNESS_K):
    """Global-ARness@k of one decode (module docstring) from ``reveal_pass``: per position the pass
    at which it was revealed, None (or a negative number) where it was never masked. None for a
    decode that revealed nothing."""
    passes = np.array([-1 if p is None else p for p in reveal_pass])
    revealed = passes[passes >= 0]
    if revealed.size == 0:
        return None
    later_on_left = (revealed[None, :] > revealed[:, None]) & np.tri(revealed.size, k=-1, dtype=bool)
    return float((later_on_left.sum(1) < k).mean())


def arness_metrics(records, k=ARNESS_K):
    """[the run's mean Global-ARness@k over its inputs, with a bootstrap CI] where its records carry
    ``reveal_pass``, else [] (a run made before the field: absent, not 0)."""
    if not records or "reveal_pass" not in records[0]:
        return []
    values = [global_arness(r["reveal_pass"], k) for r in records]
    values = [v for v in values if v is not None]
    if not values:
        return []
    return [mean_metric("arness", np.array(values), False,
                        f"Global-ARness@{k} of the reveal order (arXiv 2602.23225): share of revealed positions "
                        f"that were the leftmost still masked; 1 = left to right (descriptive)")]
