"""Paired verdicts from per-input records: two runs on the same inputs are compared input by input.

A summary metric can be recomputed from the records when its dict carries ``per_input``:
``{"statistic": NAME, "fields": [record fields], ...}`` with NAME a registered statistic
(``register_statistic``: bench registers the general ones below, a task its own beside its code):

- ``mean``: the mean of one field (exact-board accuracy, passes);
- ``ratio``: sum of one field over the sum of another (cell accuracy);
- ``mean_difference``: the mean of one field minus another (an exact task's KL: log q - log p).

A statistic says how its columns come from the records (``columns``), how many fields and which
fixed arguments its recipe carries, whether it is a plug-in distance to a fixed reference
(``distance``) and how seeds pool (``pooled``: per-input values averaged, or counts added).

Every statistic takes columns with a leading replicate axis, so thousands of bootstrap or
permutation replicates are computed at once. Tests:

- difference of two runs: paired bootstrap CI (input indices resampled jointly for both runs):
  the percentile interval, but the basic one [2d - q97.5, 2d - q2.5] for plug-in distances:
  they are biased upwards on resamples, the more so the nearer a run is to the reference, so a
  difference's percentile interval is shifted;
- p-value: exact McNemar (two-sided binomial on the discordant inputs) for the mean of a 0/1
  field; otherwise a paired randomisation test (each input's two values swapped with
  probability 1/2; two-sided, with the +1 correction).
"""
from dataclasses import dataclass
from math import comb

import numpy as np

from bench.stats import BOOT_SEED, N_BOOT, basic_interval, percentile_interval

CHUNK = 100  # replicates per block where a statistic needs [replicates, inputs, K] memory
POOLING = ("mean", "sum")   # how a statistic's seeds pool: per-input values averaged, or counts added


def float_columns(recipe, fields):
    """(columns, fixed arguments) of a statistic of plain numbers: each field as floats."""
    return [np.array([float(v) for v in values]) for values in fields], {}


@dataclass(frozen=True)
class Statistic:
    """A registered statistic: ``compute(*columns, **fixed)`` over columns with leading replicate
    axes; ``columns(recipe, fields)`` builds them from the recipe's record fields."""
    name: str
    compute: object
    columns: object = float_columns
    fields: int = 1             # record fields its recipe names
    arguments: tuple = ()       # fixed values its recipe carries (a reference sample)
    distance: bool = False      # a plug-in distance to a fixed reference: basic bootstrap intervals
    pooled: str = "mean"        # POOLING


STATISTICS = {}


def register_statistic(name, *, distance=False, pooled="mean", fields=1, arguments=(), columns=float_columns):
    """Decorator: ``compute`` becomes the statistic ``name`` that summary recipes may name. A name
    another definition holds is refused in one line (bench.registry.claim)."""
    from bench.registry import claim
    if pooled not in POOLING:
        raise ValueError(f"statistic {name}: pooled must be one of {POOLING}, got {pooled!r}")

    def add(compute):
        claim("statistic", STATISTICS, name, Statistic(name, compute, columns, fields, arguments, distance, pooled),
              origin=compute)
        return compute
    return add


def statistic(name):
    """The registered statistic ``name``, loading the plugins' ``statistics`` modules once when it
    is not registered yet (they import no model code); None when no plugin registers it."""
    if name not in STATISTICS:
        from bench.registry import load_plugins
        load_plugins("statistics")
    return STATISTICS.get(name)


@register_statistic("mean")
def stat_mean(values):
    return values.mean(-1)


@register_statistic("ratio", pooled="sum", fields=2)
def stat_ratio(numerators, denominators):
    return numerators.sum(-1) / np.maximum(denominators.sum(-1), 1e-12)


@register_statistic("mean_difference", fields=2)
def stat_mean_difference(first, second):
    return (first - second).mean(-1)


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
        return STATISTICS[self.statistic].compute(*cols, **self.extra)

    @property
    def distance(self):
        """Whether the metric is a plug-in distance to a fixed reference (basic bootstrap)."""
        return STATISTICS[self.statistic].distance

    @property
    def binary(self):
        return self.statistic == "mean" and np.isin(self.columns[0], (0.0, 1.0)).all()


def per_input(metric, records):
    """The PerInput of a summary ``metric`` dict over ``records`` sorted by index, or None when the
    metric cannot be recomputed from records (no ``per_input`` recipe, a statistic no plugin
    registers, or fields missing)."""
    recipe = metric.get("per_input")
    if not recipe or any(field not in records[0] for field in recipe["fields"]):
        return None
    registered = statistic(recipe["statistic"])
    if registered is None:
        return None
    columns, extra = registered.columns(recipe, [[r[f] for r in records] for f in recipe["fields"]])
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
        return STATISTICS[a.statistic].compute(*cols_a, **a.extra) - STATISTICS[b.statistic].compute(*cols_b, **b.extra)
    null = chunked(null_diff, swaps)
    return float((1 + (np.abs(null) >= abs(observed) - 1e-12).sum()) / (n_perm + 1))


def expand(swaps, column):
    """[R, n] swap mask broadcast against a column of shape [n, ...]."""
    return swaps.reshape(swaps.shape + (1,) * (column.ndim - 1))


def paired_difference(a, b, level=0.95, n_boot=N_BOOT, seed=BOOT_SEED):
    """a - b for two PerInput of the same metric on the same inputs.

    Returns a dict: diff, ci_low, ci_high (paired bootstrap: basic for plug-in distances, else
    percentile), ci_method, p (McNemar or randomisation), test, n and, for 0/1 metrics, the
    discordant counts (a only, b only).
    """
    n = len(a.columns[0])
    observed = float(a() - b())
    idx = replicate_indices(n, n_boot, seed)
    boots = chunked(lambda block: a(block) - b(block), idx)
    if a.distance:
        (low, high), method = basic_interval(boots, observed, level), "paired bootstrap, basic"
    else:
        (low, high), method = percentile_interval(boots, level), "paired bootstrap, percentile"
    result = {"diff": observed, "ci_low": low, "ci_high": high, "ci_method": method, "n": n}
    if a.binary and b.binary:
        result["p"], result["discordant"] = mcnemar_p(a.columns[0], b.columns[0])
        result["test"] = "exact McNemar"
    else:
        result["p"], result["test"] = randomisation_p(a, b, observed), "paired randomisation"
    return result


def better_sign(higher_is_better):
    """+1 where a positive difference is an improvement, else -1."""
    return 1.0 if higher_is_better else -1.0
