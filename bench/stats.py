"""Bootstrap confidence intervals over samples: the percentile and basic interval of a set of
replicates (``percentile_interval``, ``basic_interval``) behind the summary metrics result files
store. Paired differences of two runs read theirs from ``bench.paired`` (interval and p-value from
one procedure)."""
import numpy as np

N_BOOT = 2000       # bootstrap replicates of every interval and test
BOOT_SEED = 12345   # the seed they are drawn with


def percentile_interval(replicates, level=0.95):
    """(low, high): the central ``level`` share of the bootstrap ``replicates``."""
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return float(low), float(high)


def basic_interval(replicates, value, level=0.95):
    """(low, high): the basic (reverse-percentile) interval [2v - q_hi, 2v - q_lo] about the point
    ``value``, which corrects the first-order bias of plug-in statistics (JSD, W1)."""
    low, high = percentile_interval(replicates, level)
    return 2 * value - high, 2 * value - low


def bootstrap_ci(columns, statistic, level=0.95, n_boot=N_BOOT, seed=BOOT_SEED):
    """Percentile CI of ``statistic(*columns)`` resampling rows with replacement.

    ``columns`` are equal-length 1-D arrays (one entry per sample); ``statistic`` maps resampled
    columns to a float. Returns (value, low, high).
    """
    columns = [np.asarray(c, dtype=float) for c in columns]
    n = len(columns[0])
    value = float(statistic(*columns))
    if n < 2:
        return value, value, value
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    boots = np.array([statistic(*(c[i] for c in columns)) for i in idx])
    return (value, *percentile_interval(boots, level))


def basic_bootstrap_groups(sizes, statistic, *, level=0.95, n_boot=N_BOOT, seed=BOOT_SEED, floor=0.0):
    """Basic (reverse-percentile) CI of ``statistic(*index_arrays)``, each group resampled on its own.

    ``sizes`` are the group sizes (e.g. generated and reference samples); ``statistic`` gets one
    integer index array per group. The basic interval [2v - q_hi, 2v - q_lo] corrects the
    first-order bias of plug-in statistics such as JSD, whose percentile interval sits above the
    point value on small samples. Bounds are clipped at ``floor``. Returns (value, low, high).
    """
    value = float(statistic(*(np.arange(n) for n in sizes)))
    if min(sizes) < 2:
        return value, value, value
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, n, size=(n_boot, n)) for n in sizes]
    boots = np.array([statistic(*(d[b] for d in draws)) for b in range(n_boot)])
    low, high = basic_interval(boots, value, level)
    return value, max(floor, low), max(floor, high)


def metric(name, columns, statistic, higher_is_better, label, *, per_input=None):
    """One summary metric as stored in result files. ``per_input`` is the recipe that recomputes
    it from the per-sample records (bench/paired.py), which paired tests need."""
    value, low, high = bootstrap_ci(columns, statistic)
    out = {"name": name, "label": label, "value": value, "ci_low": low, "ci_high": high,
           "higher_is_better": higher_is_better, "n": len(columns[0])}
    if per_input is not None:
        out["per_input"] = per_input
    return out


def mean_metric(name, values, higher_is_better, label, field=None):
    """The mean of ``values``; ``field``: the record field holding them (enables paired tests)."""
    recipe = {"statistic": "mean", "fields": [field]} if field else None
    return metric(name, [values], np.mean, higher_is_better, label, per_input=recipe)


def ratio_metric(name, numerators, denominators, higher_is_better, label, *, fields=None):
    """sum(numerators) / sum(denominators), bootstrapped over samples; ``fields``: the two record
    fields holding them (enables paired tests)."""
    recipe = {"statistic": "ratio", "fields": list(fields)} if fields else None
    return metric(name, [numerators, denominators], lambda a, b: a.sum() / max(b.sum(), 1e-12),
                  higher_is_better, label, per_input=recipe)


def difference_metric(name, first, second, higher_is_better, label, *, fields=None):
    """mean(first - second), bootstrapped over samples; ``fields``: the two record fields holding
    them (enables paired tests). An exact task's KL is mean(log q - log p)."""
    recipe = {"statistic": "mean_difference", "fields": list(fields)} if fields else None
    return metric(name, [first, second], lambda a, b: (a - b).mean(), higher_is_better, label, per_input=recipe)
