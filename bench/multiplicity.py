"""Multiplicity: the p-values of one family (every p-value a claims file prints) adjusted together.

Holm's step-down procedure controls the family-wise error rate at ``ALPHA`` under any dependence
between the tests: the i-th smallest of m p-values is multiplied by m - i + 1, the products made
non-decreasing in that order and capped at 1. A claim is *shown* when its adjusted p is below
``ALPHA``.
"""
import numpy as np

ALPHA = 0.05   # the family-wise error rate every "shown" in a claims file is held to


def holm(pvalues):
    """Holm-adjusted p-values of ``pvalues`` (any order; NaN stays NaN and is not counted in the
    family), as an array in the input order."""
    p = np.asarray(pvalues, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    order = tested[np.argsort(p[tested], kind="stable")]
    factors = len(order) - np.arange(len(order))
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(p[order] * factors))
    return adjusted


def family_size(pvalues):
    """How many p-values the family holds (NaN ones left out)."""
    return int((~np.isnan(np.asarray(pvalues, dtype=float))).sum())
