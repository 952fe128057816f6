import numpy as np

from bench.report import pareto_front
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
