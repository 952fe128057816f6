import numpy as np

from bench.report.figures import pareto_front
from bench.stats import bootstrap_ci, ratio_metric


def test_bootstrap_ci_brackets_the_mean_is_deterministic_and_narrows():
    rng = np.random.default_rng(0)
    small, large = rng.random(50) < 0.6, rng.random(2000) < 0.6
    value, low, high = bootstrap_ci([small], np.mean)
    assert low < value < high and (value, low, high) == bootstrap_ci([small], np.mean)
    _, low_l, high_l = bootstrap_ci([large], np.mean)
    assert high_l - low_l < (high - low) / 3
    assert abs((high_l - low_l) / 2 - 1.96 * np.sqrt(0.24 / 2000)) < 0.005  # normal approximation


def test_ratio_metric_pools_numerators_and_denominators():
    m = ratio_metric("cells", [1, 9], [2, 10], True, "cells")
    assert m["value"] == 10 / 12 and m["higher_is_better"]


def test_pareto_front_keeps_only_undominated_points():
    points = [(50, 0.6), (10, 0.3), (20, 0.2), (30, 0.6), (8, 0.1)]
    assert sorted(pareto_front(points, True)) == [1, 3, 4]
    assert sorted(pareto_front(points, False)) == [4]


def test_basic_bootstrap_mirrors_the_percentiles_around_the_value():
    from bench.stats import BOOT_SEED, N_BOOT, basic_bootstrap_groups
    skewed = np.random.default_rng(3).exponential(size=40)
    value, low, high = basic_bootstrap_groups([40], lambda i: skewed[i].mean(), floor=-np.inf)
    draws = np.random.default_rng(BOOT_SEED).integers(0, 40, size=(N_BOOT, 40))
    q_low, q_high = np.percentile([skewed[d].mean() for d in draws], [2.5, 97.5])
    assert value == skewed.mean()
    assert np.isclose(low, 2 * value - q_high) and np.isclose(high, 2 * value - q_low)


def test_basic_bootstrap_corrects_the_upward_bias_of_plug_in_jsd():
    from bench.stats import basic_bootstrap_groups
    from tasks.protein.metrics import js_divergence
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(20))
    a, b = rng.multinomial(30, p, size=60), rng.multinomial(30, p, size=60)   # same distribution: true JSD 0
    def statistic(i, j):          # the JSD of resampled groups i of a and j of b
        return js_divergence(a[i].sum(0), b[j].sum(0))

    value, low, high = basic_bootstrap_groups([60, 60], statistic)
    percentile_low = np.percentile([statistic(rng.integers(0, 60, 60), rng.integers(0, 60, 60))
                                    for _ in range(500)], 2.5)
    assert value > 0 and percentile_low > 0          # plug-in and percentile interval both miss 0
    assert low == 0.0 < high                          # the basic interval covers the true value
