"""The protein task's paired statistics, registered with bench (``bench.paired.register_statistic``)
so that `bench compare`, `bench report` and the claims recompute its metrics from records:

- ``pooled_jsd``: JSD (bits) between the pooled k-mer counts of a string field (alphabet and k
  given) and fixed ``reference`` counts. The reference is held fixed: both runs are measured
  against the same reference sample, and the question is which run's samples are closer to it.
- ``window_jsd_w1``: each string's mean JSD (bits) of its sliding ``window``-letter compositions
  against a fixed ``reference`` composition; the statistic is the Wasserstein-1 distance between
  the distribution of those values and the reference strings' own (``reference_values``, fixed).

Both are plug-in distances to a reference (basic bootstrap intervals). Seeds pool as more draws of
the same sampler: by adding k-mer counts (``pooled_jsd``) and by joining the per-sequence values
of every seed into one sample (``window_jsd_w1``; averaging them over seeds would narrow the
distribution the W1 measures). ``window_jsd_w1``'s reference values are a sample the paired
bootstrap resamples with the inputs (``samples``); the reference composition each value is
measured against stays fixed (pooled over some 37,000 residues, its sampling noise is far below
the values'). This module imports no model code: the report and the gate load it alone.
"""
from itertools import product

import numpy as np

from bench.paired import register_statistic

W1_GRID = 2000  # quantile levels of the Wasserstein-1 integral (exact when it is a multiple of both sizes)


def jsd_bits(p, q):
    """Jensen-Shannon divergence in bits of count arrays [..., K] (rows need not sum to 1)."""
    p = p / np.maximum(p.sum(-1, keepdims=True), 1e-300)
    q = q / np.maximum(q.sum(-1, keepdims=True), 1e-300)
    m = (p + q) / 2

    def kl(a):
        ratio = np.where(a > 0, a / np.where(m > 0, m, 1), 1.0)
        return (a * np.log2(ratio)).sum(-1)
    return (kl(p) + kl(q)) / 2


def quantiles(values, grid=W1_GRID):
    """[..., grid] inverted-CDF quantiles of ``values`` [..., n] at levels (i + 1/2) / grid."""
    n = values.shape[-1]
    at = np.ceil((np.arange(grid) + 0.5) / grid * n).astype(int) - 1
    return np.sort(values, axis=-1)[..., at]


def stat_w1(values, reference_values):
    """Wasserstein-1 distance between the empirical distribution of ``values`` [..., n] and that of
    ``reference_values`` ([m], or [..., m] resampled per replicate): the mean absolute gap of their
    quantile functions."""
    return np.abs(quantiles(values) - quantiles(np.asarray(reference_values, float))).mean(-1)


def kmer_counts(strings, alphabet, k):
    """[n, len(alphabet) ** k] counts of the overlapping k-mers of each string (others skipped)."""
    index = {"".join(kmer): i for i, kmer in enumerate(product(alphabet, repeat=k))}
    counts = np.zeros((len(strings), len(index)))
    for row, text in enumerate(strings):
        for start in range(len(text) - k + 1):
            column = index.get(text[start:start + k])
            if column is not None:
                counts[row, column] += 1
    return counts


def window_jsd(strings, alphabet, window, reference):
    """[n] mean JSD (bits) of each string's sliding ``window``-letter compositions against the
    ``reference`` composition (counts over ``alphabet``); letters outside it are left out, and a
    string shorter than the window is one window of all its letters."""
    index = {letter: i for i, letter in enumerate(alphabet)}
    out = np.zeros(len(strings))
    for row, text in enumerate(strings):
        onehot = np.eye(len(alphabet))[[index[c] for c in text if c in index]].reshape(-1, len(alphabet))
        totals = np.vstack([np.zeros(len(alphabet)), np.cumsum(onehot, 0)])
        width = min(window, len(onehot))
        out[row] = jsd_bits(totals[width:] - totals[:-width], np.asarray(reference, float)[None]).mean()
    return out


def pooled_kmer_columns(recipe, fields):
    """(columns, fixed arguments) of ``pooled_jsd``: each string's k-mer counts; the reference."""
    return ([kmer_counts(fields[0], recipe["alphabet"], recipe["k"])],
            {"reference": np.asarray(recipe["reference"], float)})


def window_columns(recipe, fields):
    """(columns, fixed arguments) of ``window_jsd_w1``: each string's windowed JSD; the reference's."""
    values = window_jsd(fields[0], recipe["alphabet"], recipe["window"], recipe["reference"])
    return [values], {"reference_values": np.asarray(recipe["reference_values"], float)}


@register_statistic("pooled_jsd", distance=True, pooled="sum", arguments=("alphabet", "k", "reference"),
                    columns=pooled_kmer_columns)
def stat_pooled_jsd(counts, reference):
    """counts [..., n, K] -> JSD of the pooled counts against ``reference`` [K]."""
    return jsd_bits(counts.sum(-2), np.asarray(reference, float))


register_statistic("window_jsd_w1", distance=True, pooled="join", samples=("reference_values",),
                   arguments=("alphabet", "window", "reference", "reference_values"), columns=window_columns)(stat_w1)
