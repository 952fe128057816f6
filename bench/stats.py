"""Bootstrap confidence intervals over samples."""
import numpy as np

N_BOOT = 2000
BOOT_SEED = 12345


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
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(boots, [tail, 100 - tail])
    return value, float(low), float(high)


def metric(name, columns, statistic, higher_is_better, label):
    """One summary metric as stored in result files."""
    value, low, high = bootstrap_ci(columns, statistic)
    return {"name": name, "label": label, "value": value, "ci_low": low, "ci_high": high,
            "higher_is_better": higher_is_better, "n": len(columns[0])}


def mean_metric(name, values, higher_is_better, label):
    return metric(name, [values], np.mean, higher_is_better, label)


def ratio_metric(name, numerators, denominators, higher_is_better, label):
    """sum(numerators) / sum(denominators), bootstrapped over samples."""
    return metric(name, [numerators, denominators], lambda a, b: a.sum() / max(b.sum(), 1e-12),
                  higher_is_better, label)
