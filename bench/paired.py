"""Paired verdicts from per-input records: two runs on the same inputs are compared input by input.

A summary metric can be recomputed from the records when its dict carries ``per_input``:
``{"statistic": NAME, "fields": [record fields], ...}`` with NAME a registered statistic
(``register_statistic``: bench registers the general ones below, a task its own beside its code):

- ``mean``: the mean of one field (exact-board accuracy, passes);
- ``ratio``: sum of one field over the sum of another (cell accuracy);
- ``mean_difference``: the mean of one field minus another (an exact task's KL: log q - log p).

A statistic says how its columns come from the records (``columns``), how many fields and which
fixed arguments its recipe carries, whether it is a plug-in distance to a fixed reference
(``distance``), how seeds pool (``pooled``: per-input values averaged, counts added, or each
input's values of every seed joined into one larger sample), and which fixed arguments are a
reference *sample* (``samples``: one entry per reference sequence, resampled by the bootstrap).

Seeds pool as the metric means: a per-input metric (accuracy, recovery, KL) averages each input's
values over the seeds; a distance between the generated set and a reference treats each seed's
outputs as more draws of the same sampler, so it adds counts or joins the sets, never averages
per-input values (averaging narrows the distribution a W1 measures). A distance that asks for the
mean is refused at registration.

Every statistic takes columns with a leading replicate axis, so thousands of bootstrap
replicates are computed at once. One procedure gives each difference of two runs both its
interval and its p-value (the interval is the inversion of the test, so it excludes 0 exactly
when the two-sided p is below 1 - level):

- the mean of a 0/1 field: Tango's score test for a difference of paired proportions (Tango 1998,
  Stat Med 17:891) and the score interval that inverts it; at a difference of 0 the score test is
  McNemar's (asymptotic, without continuity correction);
- any other statistic: the paired bootstrap (input indices resampled jointly for both runs; a
  statistic's reference sample resampled too, the same draw for both runs of a replicate, so the
  interval holds the reference's own sampling noise), its
  interval the central order statistics of the replicates and its p the share of replicates on
  either side of the tested value, from the same replicates; a plug-in distance's replicates are
  reflected about the estimate first (the basic bootstrap, 2d - r): they are biased upwards on
  resamples, the more so the nearer a run is to the reference.

Both give one-sided p-values at any tested difference (``p_greater``, ``p_less``): a
non-inferiority test is the one-sided test at its margin.
"""
import functools
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

from bench.stats import BOOT_SEED, N_BOOT

CHUNK = 100  # replicates per block where a statistic needs [replicates, inputs, K] memory
POOLING = ("mean", "sum", "join")   # how seeds pool: per-input values averaged, counts added, samples joined
REFERENCE_SEED = BOOT_SEED + 1      # the reference-sample draws of every replicate (one draw for every run)


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
    distance: bool = False      # a plug-in distance to a reference sample: basic bootstrap intervals
    pooled: str = "mean"        # POOLING
    samples: tuple = ()         # fixed arguments that are a reference sample [m, ...]: resampled per replicate


STATISTICS = {}


def register_statistic(name, *, distance=False, pooled="mean", fields=1, arguments=(), columns=float_columns,
                       samples=()):
    """Decorator: ``compute`` becomes the statistic ``name`` that summary recipes may name. A name
    another definition holds is refused in one line (bench.registry.claim), and so is a distance
    whose seeds would pool by averaging per-input values, or a ``samples`` name not in ``arguments``."""
    from bench.registry import claim
    if pooled not in POOLING:
        raise ValueError(f"statistic {name}: pooled must be one of {POOLING}, got {pooled!r}")
    if distance and pooled == "mean":
        raise ValueError(f"statistic {name}: a distance to a reference pools seeds by 'sum' or 'join' "
                         "(each seed's outputs are more draws of the sampler), not 'mean'")
    if set(samples) - set(arguments):
        raise ValueError(f"statistic {name}: samples {sorted(set(samples) - set(arguments))} are not among its "
                         f"arguments {list(arguments)}")

    def add(compute):
        claim("statistic", STATISTICS, name,
              Statistic(name, compute, columns, fields, arguments, distance, pooled, tuple(samples)), origin=compute)
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
    joined: bool = False     # columns are [n, seeds, ...]: each input's seeds joined (pooled 'join')

    def __call__(self, idx=None):
        """The metric on the inputs ``idx`` ([R, n] replicates or None for all). Joined seeds (columns
        [n, seeds, ...]) are one sample of n x seeds; where ``idx`` is a block of ``Replicates``,
        each replicate also draws its own resample of the statistic's reference sample."""
        registered = STATISTICS[self.statistic]
        cols = self.columns if idx is None else [c[idx] for c in self.columns]
        if self.joined:
            lead = 0 if idx is None else 1
            cols = [c.reshape(c.shape[:lead] + (-1,) + c.shape[lead + 2:]) for c in cols]
        extra = dict(self.extra)
        rows = getattr(idx, "rows", None)
        for name in registered.samples if rows is not None else ():
            sample = np.asarray(extra[name])
            extra[name] = sample[reference_draws(len(sample), rows)]
        return registered.compute(*cols, **extra)

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


class Replicates(np.ndarray):
    """[R, n] input indices of bootstrap replicates that know their replicate numbers (``rows``), so
    that a statistic with a reference sample draws replicate r's reference resample whichever block
    of replicates it is handed: two runs called on the same block get the same reference draw."""

    def __new__(cls, indices, rows=None):
        out = np.asarray(indices).view(cls)
        out.rows = np.arange(len(indices)) if rows is None else np.asarray(rows)
        return out

    def __array_finalize__(self, obj):
        self.rows = getattr(obj, "rows", None)

    def __getitem__(self, key):
        """A slice of replicates keeps their numbers; any other indexing gives plain indices."""
        plain = np.asarray(self)[key]
        first = key[0] if isinstance(key, tuple) and key else key
        if isinstance(first, slice) and plain.ndim == 2:
            return Replicates(plain, self.rows[first])
        return plain

    def block(self, start, stop):
        """Replicates ``start`` to ``stop`` with their numbers."""
        return self[start:stop]


def reference_draws(m, rows, seed=REFERENCE_SEED):
    """[len(rows), m] indices into a reference sample of ``m``: replicate r's resample, the same for
    every run and every block (rows of one seeded draw of at least N_BOOT replicates)."""
    return all_reference_draws(m, max(N_BOOT, int(np.max(rows)) + 1), seed)[rows]


@functools.lru_cache(maxsize=8)
def all_reference_draws(m, count, seed):
    return np.random.default_rng(seed).integers(0, m, size=(count, m))


def replicate_indices(n, n_boot=N_BOOT, seed=BOOT_SEED):
    """[n_boot, n] input indices drawn with replacement (one joint draw for every run), as Replicates."""
    return Replicates(np.random.default_rng(seed).integers(0, n, size=(n_boot, n)))


def chunked(fn, idx):
    """``fn(idx_block)`` over blocks of replicates, concatenated (bounded memory); a block of
    ``Replicates`` keeps its replicate numbers."""
    return np.concatenate([np.atleast_1d(fn(idx[s:s + CHUNK])) for s in range(0, len(idx), CHUNK)])


def discordant(a, b):
    """(inputs where only ``a`` is 1, inputs where only ``b`` is 1) of paired 0/1 arrays."""
    return int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())


def two_sided(p_greater, p_less):
    """The two-sided p-value of two one-sided ones."""
    return float(min(1.0, 2 * min(p_greater, p_less)))


@dataclass(frozen=True)
class ScoreTest:
    """Tango's score test of d = mean(a) - mean(b) for paired 0/1 values: ``only_a`` inputs where
    only a is 1, ``only_b`` where only b is 1, of ``n``. T(d0) is the score statistic at the tested
    difference d0 (decreasing in d0; at d0 = 0 it is McNemar's (only_a - only_b) / sqrt(only_a + only_b)),
    the interval every d0 that a two-sided test at 1 - level keeps."""
    only_a: int
    only_b: int
    n: int

    @property
    def estimate(self):
        return (self.only_a - self.only_b) / self.n

    def statistic(self, d0):
        """Tango's T(d0): (only_a - only_b - n d0) / sqrt(n (2 q + d0 (1 - d0))), q the maximum
        likelihood of P(only b is 1) under d = d0."""
        b, c, n = self.only_a, self.only_b, self.n
        numerator = b - c - n * d0
        if numerator == 0:
            return 0.0
        w = -b - c + (2 * n - b + c) * d0
        q = (np.sqrt(max(w * w + 8 * n * c * d0 * (1 - d0), 0.0)) - w) / (4 * n)
        variance = n * (2 * q + d0 * (1 - d0))
        return float(np.sign(numerator) * np.inf) if variance <= 0 else float(numerator / np.sqrt(variance))

    def p_greater(self, d0=0.0):
        """One-sided p-value against d <= d0 (evidence that d > d0)."""
        return float(norm.sf(self.statistic(d0)))

    def p_less(self, d0=0.0):
        """One-sided p-value against d >= d0 (evidence that d < d0)."""
        return float(norm.cdf(self.statistic(d0)))

    def interval(self, level=0.95):
        """(low, high): every d0 in [-1, 1] whose two-sided p is at least 1 - level."""
        z, edge = norm.ppf(1 - (1 - level) / 2), 1 - 1e-12
        low = -1.0 if self.statistic(-edge) <= z else brentq(lambda d: self.statistic(d) - z, -edge, self.estimate)
        high = 1.0 if self.statistic(edge) >= -z else brentq(lambda d: self.statistic(d) + z, self.estimate, edge)
        return float(low), float(high)

    def summary(self, level=0.95):
        low, high = self.interval(level)
        return {"diff": self.estimate, "ci_low": low, "ci_high": high, "ci_method": "Tango score interval",
                "p": two_sided(self.p_greater(), self.p_less()), "test": "Tango score (McNemar)", "n": self.n,
                "discordant": (self.only_a, self.only_b)}


def order_statistic_interval(replicates, level=0.95):
    """(low, high): the k-th smallest and k-th largest replicate, k = ceil(R (1 - level) / 2): the
    percentile interval whose bounds exclude a value exactly when fewer than k replicates lie on its
    side, so that it agrees with ``BootstrapTest``'s p-values."""
    ordered = np.sort(replicates)
    k = max(1, int(np.ceil(len(ordered) * (1 - level) / 2 - 1e-9)))
    return float(ordered[k - 1]), float(ordered[len(ordered) - k])


@dataclass
class BootstrapTest:
    """A difference's bootstrap: ``replicates`` as the interval and p are read from them (reflected
    about the estimate for a plug-in distance), NaN ones (a budget outside a resampled line's range)
    left out and counted in ``dropped``."""
    estimate: float
    replicates: np.ndarray
    method: str = "paired bootstrap, percentile"
    dropped: int = 0

    @classmethod
    def of(cls, replicates, estimate, distance=False):
        kept = replicates[~np.isnan(replicates)]
        method = "paired bootstrap, basic" if distance else "paired bootstrap, percentile"
        return cls(float(estimate), 2 * estimate - kept if distance else kept, method, len(replicates) - len(kept))

    @property
    def dropped_share(self):
        total = len(self.replicates) + self.dropped
        return self.dropped / total if total else 1.0

    def p_greater(self, d0=0.0):
        """One-sided p-value against d <= d0: the share of replicates at or below d0."""
        return float((self.replicates <= d0).mean()) if len(self.replicates) else np.nan

    def p_less(self, d0=0.0):
        """One-sided p-value against d >= d0: the share of replicates at or above d0."""
        return float((self.replicates >= d0).mean()) if len(self.replicates) else np.nan

    def interval(self, level=0.95):
        return order_statistic_interval(self.replicates, level) if len(self.replicates) else (np.nan, np.nan)

    def summary(self, level=0.95):
        low, high = self.interval(level)
        method = self.method
        if not np.isnan(low) and not low <= self.estimate <= high:
            method += " (the estimate lies outside: its replicates are skewed away from it)"
        p = two_sided(self.p_greater(), self.p_less()) if len(self.replicates) else np.nan
        return {"diff": self.estimate, "ci_low": low, "ci_high": high, "ci_method": method, "p": p,
                "test": "paired bootstrap", "n_replicates": len(self.replicates), "dropped": self.dropped}


def difference_test(a, b, n_boot=N_BOOT, seed=BOOT_SEED):
    """The test of a - b for two PerInput of the same metric on the same inputs: a ScoreTest for
    two 0/1 means, else the paired BootstrapTest (reflected for a plug-in distance)."""
    if a.binary and b.binary:
        return ScoreTest(*discordant(a.columns[0], b.columns[0]), len(a.columns[0]))
    idx = replicate_indices(len(a.columns[0]), n_boot, seed)
    boots = chunked(lambda block: a(block) - b(block), idx)
    return BootstrapTest.of(boots, float(a() - b()), a.distance)


def paired_difference(a, b, level=0.95, n_boot=N_BOOT, seed=BOOT_SEED):
    """a - b for two PerInput of the same metric on the same inputs (``difference_test``).

    Returns a dict: diff, ci_low, ci_high, ci_method, p (two-sided, at 0), test, n or
    n_replicates and, for 0/1 metrics, the discordant counts (a only, b only).
    """
    return difference_test(a, b, n_boot, seed).summary(level)


def better_sign(higher_is_better):
    """+1 where a positive difference is an improvement, else -1."""
    return 1.0 if higher_is_better else -1.0
