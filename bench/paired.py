"""Paired verdicts from per-input records: two runs on the same inputs are compared input by input.

A summary metric can be recomputed from the records when its dict carries ``per_input``:
``{"statistic": NAME, "fields": [record fields], ...}`` with NAME one of ``STATISTICS``:

- ``mean``: the mean of one field (exact-board accuracy, passes);
- ``ratio``: sum of one field over the sum of another (cell accuracy);
- ``mean_difference``: the mean of one field minus another (an exact task's KL: log q - log p);
- ``pooled_jsd``: JSD (bits) between the pooled k-mer counts of a string field (alphabet and k
  given) and fixed ``reference`` counts. The reference is held fixed: both runs are measured
  against the same reference sample, and the question is which run's samples are closer to it.
- ``window_jsd_w1``: each string's mean JSD (bits) of its sliding ``window``-letter compositions
  against a fixed ``reference`` composition; the statistic is the Wasserstein-1 distance between
  the distribution of those values and the reference strings' own (``reference_values``, fixed).

Every statistic takes columns with a leading replicate axis, so thousands of bootstrap or
permutation replicates are computed at once. Tests:

- difference of two runs: paired bootstrap CI (input indices resampled jointly for both runs):
  the percentile interval, but the basic one [2d - q97.5, 2d - q2.5] for the plug-in distances
  (``DISTANCES``): they are biased upwards on resamples, the more so the nearer a run is to the
  reference, so a difference's percentile interval is shifted;
- p-value: exact McNemar (two-sided binomial on the discordant inputs) for the mean of a 0/1
  field; otherwise a paired randomisation test (each input's two values swapped with
  probability 1/2; two-sided, with the +1 correction).
"""
from dataclasses import dataclass
from itertools import product
from math import comb

import numpy as np

N_BOOT = 2000
BOOT_SEED = 12345
CHUNK = 100  # replicates per block where a statistic needs [replicates, inputs, K] memory
DISTANCES = ("pooled_jsd", "window_jsd_w1")   # plug-in distances to a reference: basic bootstrap CIs


def stat_mean(values):
    return values.mean(-1)


def stat_ratio(numerators, denominators):
    return numerators.sum(-1) / np.maximum(denominators.sum(-1), 1e-12)


def stat_mean_difference(first, second):
    return (first - second).mean(-1)


def jsd_bits(p, q):
    """Jensen-Shannon divergence in bits of count arrays [..., K] (rows need not sum to 1)."""
    p = p / np.maximum(p.sum(-1, keepdims=True), 1e-300)
    q = q / np.maximum(q.sum(-1, keepdims=True), 1e-300)
    m = (p + q) / 2

    def kl(a):
        ratio = np.where(a > 0, a / np.where(m > 0, m, 1), 1.0)
        return (a * np.log2(ratio)).sum(-1)
    return (kl(p) + kl(q)) / 2


def stat_pooled_jsd(counts, reference):
    """counts [..., n, K] -> JSD of the pooled counts against ``reference`` [K]."""
    return jsd_bits(counts.sum(-2), np.asarray(reference, float))


W1_GRID = 2000  # quantile levels of the Wasserstein-1 integral (exact when it is a multiple of both sizes)


def quantiles(values, grid=W1_GRID):
    """[..., grid] inverted-CDF quantiles of ``values`` [..., n] at levels (i + 1/2) / grid."""
    n = values.shape[-1]
    at = np.ceil((np.arange(grid) + 0.5) / grid * n).astype(int) - 1
    return np.sort(values, axis=-1)[..., at]


def stat_w1(values, reference_values):
    """Wasserstein-1 distance between the empirical distribution of ``values`` [..., n] and that of
    fixed ``reference_values`` [m]: the mean absolute gap of their quantile functions."""
    return np.abs(quantiles(values) - quantiles(np.asarray(reference_values, float))).mean(-1)


STATISTICS = {"mean": stat_mean, "ratio": stat_ratio, "mean_difference": stat_mean_difference,
              "pooled_jsd": stat_pooled_jsd, "window_jsd_w1": stat_w1}


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


@dataclass
class PerInput:
    """One metric of one run, recomputable on any subset of its inputs."""
    name: str
    statistic: str
    columns: list            # arrays with the input axis first
    higher_is_better: bool
    extra: dict              # fixed arguments of the statistic (the reference counts)

    def __call__(self, idx=None):
        """The metric on the inputs ``idx`` ([R, n] replicates or None for all)."""
        cols = self.columns if idx is None else [c[idx] for c in self.columns]
        return STATISTICS[self.statistic](*cols, **self.extra)

    @property
    def binary(self):
        return self.statistic == "mean" and np.isin(self.columns[0], (0.0, 1.0)).all()


def per_input(metric, records):
    """The PerInput of a summary ``metric`` dict over ``records`` sorted by index, or None when the
    metric cannot be recomputed from records (no ``per_input`` recipe, or fields missing)."""
    recipe = metric.get("per_input")
    if not recipe or any(field not in records[0] for field in recipe["fields"]):
        return None
    if recipe["statistic"] == "pooled_jsd":
        strings = [r[recipe["fields"][0]] for r in records]
        columns = [kmer_counts(strings, recipe["alphabet"], recipe["k"])]
        extra = {"reference": np.asarray(recipe["reference"], float)}
    elif recipe["statistic"] == "window_jsd_w1":
        strings = [r[recipe["fields"][0]] for r in records]
        columns = [window_jsd(strings, recipe["alphabet"], recipe["window"], recipe["reference"])]
        extra = {"reference_values": np.asarray(recipe["reference_values"], float)}
    else:
        columns = [np.array([float(r[f]) for r in records]) for f in recipe["fields"]]
        extra = {}
    return PerInput(metric["name"], recipe["statistic"], columns, metric["higher_is_better"], extra)


def replicate_indices(n, n_boot=N_BOOT, seed=BOOT_SEED):
    """[n_boot, n] input indices drawn with replacement (one joint draw for every run)."""
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def chunked(fn, idx):
    """``fn(idx_block)`` over blocks of replicates, concatenated (bounded memory)."""
    return np.concatenate([np.atleast_1d(fn(idx[s:s + CHUNK])) for s in range(0, len(idx), CHUNK)])


def mcnemar_p(a, b):
    """Exact two-sided McNemar p-value of paired 0/1 arrays; also the discordant counts."""
    only_a, only_b = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
    n, k = only_a + only_b, min(only_a, only_b)
    if n == 0:
        return 1.0, (only_a, only_b)
    tail = sum(comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail), (only_a, only_b)


def randomisation_p(a, b, observed, n_perm=N_BOOT, seed=BOOT_SEED):
    """Two-sided paired randomisation p-value of ``a() - b()`` (each input's pair swapped at random)."""
    swaps = np.random.default_rng(seed + 1).random((n_perm, len(a.columns[0]))) < 0.5

    def null_diff(block):
        cols_a = [np.where(expand(block, ca), cb, ca) for ca, cb in zip(a.columns, b.columns)]
        cols_b = [np.where(expand(block, ca), ca, cb) for ca, cb in zip(a.columns, b.columns)]
        return STATISTICS[a.statistic](*cols_a, **a.extra) - STATISTICS[b.statistic](*cols_b, **b.extra)
    null = chunked(null_diff, swaps)
    return float((1 + (np.abs(null) >= abs(observed) - 1e-12).sum()) / (n_perm + 1))


def expand(swaps, column):
    """[R, n] swap mask broadcast against a column of shape [n, ...]."""
    return swaps.reshape(swaps.shape + (1,) * (column.ndim - 1))


def paired_difference(a, b, level=0.95, n_boot=N_BOOT, seed=BOOT_SEED):
    """a - b for two PerInput of the same metric on the same inputs.

    Returns a dict: diff, ci_low, ci_high (paired bootstrap: basic for DISTANCES, else
    percentile), ci_method, p (McNemar or randomisation), test, n and, for 0/1 metrics, the
    discordant counts (a only, b only).
    """
    n = len(a.columns[0])
    observed = float(a() - b())
    idx = replicate_indices(n, n_boot, seed)
    boots = chunked(lambda block: a(block) - b(block), idx)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(boots, [tail, 100 - tail])
    method = "paired bootstrap, percentile"
    if a.statistic in DISTANCES:
        low, high, method = 2 * observed - high, 2 * observed - low, "paired bootstrap, basic"
    result = {"diff": observed, "ci_low": float(low), "ci_high": float(high), "ci_method": method, "n": n}
    if a.binary and b.binary:
        result["p"], result["discordant"] = mcnemar_p(a.columns[0], b.columns[0])
        result["test"] = "exact McNemar"
    else:
        result["p"], result["test"] = randomisation_p(a, b, observed), "paired randomisation"
    return result


def better_sign(higher_is_better):
    """+1 where a positive difference is an improvement, else -1."""
    return 1.0 if higher_is_better else -1.0
