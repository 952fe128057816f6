"""The statistics behind the claims: Holm over a family, Tango's score interval and test, the
bootstrap's interval and p from one set of replicates, non-inferiority at the margin and the
monotone cubic interpolation, each against a known answer or the library it stands in for."""
import gc

import numpy as np
import pytest
from scipy.interpolate import PchipInterpolator
from scipy.stats import norm

from bench.multiplicity import family_size, holm
from bench.paired import BootstrapTest, ScoreTest, order_statistic_interval, per_input
from bench.report.verdicts import ScoredRun, interpolate, make_lead, make_line, non_inferiority, replicate_indices


def test_holm_on_a_vector_adjusted_by_hand():
    # sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> kept non-decreasing: 0.06
    adjusted = holm([0.01, 0.04, 0.03, 0.005, np.nan])
    assert adjusted[:4].tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02]) and np.isnan(adjusted[4])
    assert family_size([0.01, np.nan, 0.5]) == 2
    assert holm([0.5, 0.9]).tolist() == [1.0, 1.0]


def test_holm_equals_statsmodels_on_random_vectors(monkeypatch):
    from statsmodels.stats.multitest import multipletests
    # statsmodels' Holm ends with gc.collect() (multitest.py 246): 0.14 s a call beside the suite's
    # heap, 6 of this test's 6 s; the collection changes no number it returns
    monkeypatch.setattr(gc, "collect", lambda *args: 0)
    rng = np.random.default_rng(0)
    for size in (1, 2, 5, 12, 53):
        for _ in range(8):
            p = rng.beta(0.3, 1.0, size)
            if size > 2:
                p[1] = p[0]                                     # ties
            reject, expected, _, _ = multipletests(p, alpha=0.05, method="holm")
            assert holm(p) == pytest.approx(expected, abs=1e-12)
            assert ((holm(p) < 0.05) == reject).all()


def test_tango_interval_on_a_published_table():
    """Bentur et al. (2009), airway hyper-responsiveness before and after transplantation: (1, 1, 7, 12);
    Tango's score interval for the difference is (-0.5172, -0.0260) (Fagerland, Lydersen & Laake,
    Stat Med 2014, and their R package contingencytables, Tango_asymptotic_score_CI_paired_2x2)."""
    test = ScoreTest(only_a=1, only_b=7, n=21)
    assert test.estimate == pytest.approx(-6 / 21)
    assert test.interval() == pytest.approx((-0.5172, -0.0260), abs=5e-5)


def test_tango_test_at_zero_is_mcnemar_without_continuity_correction():
    from statsmodels.stats.contingency_tables import mcnemar
    for both, only_a, only_b, neither in [(30, 61, 47, 862), (1, 1, 7, 12), (50, 20, 3, 27), (0, 9, 2, 0)]:
        test = ScoreTest(only_a, only_b, both + only_a + only_b + neither)
        expected = mcnemar([[both, only_a], [only_b, neither]], exact=False, correction=False).pvalue
        assert test.summary()["p"] == pytest.approx(expected)
        assert test.statistic(0.0) == pytest.approx((only_a - only_b) / np.sqrt(only_a + only_b))


def test_tango_interval_excludes_zero_exactly_when_p_is_below_five_percent():
    z = norm.ppf(0.975)
    for n in (20, 1000):
        for only_a in range(0, 13):
            for only_b in range(0, 13):
                if only_a + only_b > n:
                    continue
                test = ScoreTest(only_a, only_b, n)
                summary = test.summary()
                low, high = summary["ci_low"], summary["ci_high"]
                assert (not low <= 0 <= high) == (summary["p"] < 0.05), (only_a, only_b, n)
                assert low <= test.estimate <= high
                for bound in (low, high):                      # the bounds solve |T| = z inside (-1, 1)
                    if -1 < bound < 1:
                        assert abs(test.statistic(bound)) == pytest.approx(z, abs=1e-6)


def test_non_inferiority_p_is_the_one_sided_score_test_at_the_margin():
    """The issue's case: 61 vs 47 discordant boards of 1,000, margin 0.01: the p of a difference of 0
    is 0.18, the one-sided test of the margin 0.011."""
    test = ScoreTest(61, 47, 1000)
    assert test.p_greater(-0.01) == pytest.approx(0.011, abs=5e-4)
    assert test.summary()["p"] == pytest.approx(0.178, abs=1e-3)
    run = binary_run([1] * 61 + [0] * 47 + [1] * 30 + [0] * 862)
    reference = binary_run([0] * 61 + [1] * 47 + [1] * 30 + [0] * 862)
    verdict, result = non_inferiority(run, reference, 0.01)
    assert verdict == "yes" and result["p"] == pytest.approx(test.p_greater(-0.01))
    assert result["p_zero"] == pytest.approx(0.178, abs=1e-3) and "one-sided at the margin" in result["test"]
    # lower is better: non-inferior means run - reference below +margin
    kl_run, kl_reference = numeric_run(np.full(400, 1.0) + noise(400), False), numeric_run(np.full(400, 1.0), False)
    verdict, result = non_inferiority(kl_run, kl_reference, 0.05)
    assert verdict == "yes" and result["p"] < 0.05 and result["p_zero"] > 0.05


def test_bootstrap_interval_excludes_a_value_exactly_when_p_is_below_the_level():
    rng = np.random.default_rng(1)
    for trial in range(300):
        size = int(rng.choice([200, 1999, 2000]))
        replicates = rng.normal(rng.normal(0, 1.5), 1, size) * rng.choice([1, 0.01])
        replicates[: int(rng.integers(0, 5))] = 0.0                   # ties at the tested value
        test = BootstrapTest(0.0, replicates)
        summary = test.summary()
        assert (not summary["ci_low"] <= 0 <= summary["ci_high"]) == (summary["p"] < 0.05), trial
        d0 = float(rng.normal())
        assert (summary["ci_low"] > d0) == (test.p_greater(d0) < 0.025), trial
    assert order_statistic_interval(np.arange(2000.0)) == (49.0, 1950.0)


def test_an_estimate_outside_its_bootstrap_interval_is_said():
    inside = BootstrapTest.of(np.linspace(-1, 1, 2000), 0.0).summary()
    outside = BootstrapTest.of(np.linspace(1, 2, 2000), 0.0).summary()
    assert "outside" not in inside["ci_method"] and "the estimate lies outside" in outside["ci_method"]
    with_nan = BootstrapTest.of(np.r_[np.linspace(-1, 1, 1900), np.full(100, np.nan)], 0.0)
    assert with_nan.dropped == 100 and with_nan.dropped_share == pytest.approx(0.05)


def test_monotone_cubic_interpolation_equals_scipy_pchip_in_log_passes():
    rng = np.random.default_rng(2)
    for trial in range(200):
        m = int(rng.integers(3, 8))
        passes, quality = np.exp(rng.uniform(0, 4, (30, m))), rng.normal(0, 1, (30, m))
        if trial % 2:
            quality = np.sort(quality, axis=1)                 # monotone lines, as a sweep's usually are
        budget = float(np.exp(rng.uniform(0.2, 3.8)))
        got = interpolate(passes, quality, budget, "pchip")
        for row in range(30):
            order = np.argsort(passes[row])
            expected = PchipInterpolator(np.log(passes[row][order]), quality[row][order], extrapolate=False)(
                np.log(budget))
            assert (np.isnan(got[row]) and np.isnan(expected)) or got[row] == pytest.approx(expected, abs=1e-12)
    two = interpolate(np.array([4.0, 16.0]), np.array([0.2, 0.6]), 8, "pchip")
    assert two == pytest.approx(0.4)                             # two points: the line, as scipy draws it
    tied = interpolate(np.array([[4.0, 4.0, 16.0]]), np.array([[0.2, 0.3, 0.6]]), 8, "pchip")
    assert not np.isnan(tied)                                    # tied passes: the linear value is kept


def test_a_lead_takes_the_larger_p_of_both_interpolations_and_counts_replicates_outside():
    n = 300
    rng = np.random.default_rng(3)
    shared = rng.normal(0, 0.02, n)
    varied = rng.normal(0, 3, n)                                  # per-input passes: the mean moves on resamples
    curve = [numeric_run(base + shared, True, passes + varied) for base, passes in ((0.3, 4), (0.6, 8), (0.65, 16))]
    flat = [numeric_run(base + shared + rng.normal(0, 0.05, n), True, passes + varied)
            for base, passes in ((0.3, 4), (0.45, 8), (0.6, 16))]
    idx = replicate_indices(n, 400)
    lead = make_lead(12, make_line("curve", curve, idx), make_line("flat", flat, idx), False)
    assert lead.test["p"] == max(lead.test["p_linear"], lead.pchip["p"]) and lead.outside == 0
    edge = make_lead(16, make_line("curve", curve, idx), make_line("flat", flat, idx), False)
    assert edge.outside > 0.05                                # 16 passes: the top of both lines' range
    for each in (lead, edge):
        each.test["p_holm"] = 0.0                             # as if the family kept both
    assert lead.shown and not edge.shown


def noise(n, seed=5):
    return np.random.default_rng(seed).normal(0, 0.05, n)


def binary_run(values):
    records = [{"index": i, "exact": v, "passes": 10} for i, v in enumerate(values)]
    quality = per_input({"name": "exact", "higher_is_better": True,
                         "per_input": {"statistic": "mean", "fields": ["exact"]}}, records)
    return ScoredRun({"label": "b"}, quality, passes_of(records))


def numeric_run(values, higher_is_better, passes=10.0):
    passes = np.broadcast_to(passes, np.shape(values))
    records = [{"index": i, "q": float(v), "passes": float(p)} for i, (v, p) in enumerate(zip(values, passes))]
    quality = per_input({"name": "q", "higher_is_better": higher_is_better,
                         "per_input": {"statistic": "mean", "fields": ["q"]}}, records)
    return ScoredRun({"label": "n"}, quality, passes_of(records))


def passes_of(records):
    return per_input({"name": "passes", "higher_is_better": False,
                      "per_input": {"statistic": "mean", "fields": ["passes"]}}, records)


def test_a_claims_file_is_one_holm_family_and_shown_means_surviving_it():
    from bench.report.claims import SpeedupRow, TaskVerdicts, adjust_family
    from bench.report.render import family_sentence
    rows = [SpeedupRow(f"line{i}", None, "yes", {"p": p}, 0.1 * (i + 1)) for i, p in enumerate((0.01, 0.02, 0.03))]
    ablation = ("an idea", [], [{"budget": 8, "p": 0.5}])
    v = adjust_family(TaskVerdicts("t", "q", True, 100, (8,), 0.01, {}, [], {}, rows, [ablation], 0))
    assert v.family == 4
    assert [r.diff["p_holm"] for r in v.speedup] == pytest.approx([0.04, 0.06, 0.06])   # 4, 3 and 2 times p
    assert [r.verdict for r in v.speedup] == ["yes", "not shown", "not shown"]
    assert "the 4 p-values below are one family" in family_sentence(v) and "3 are below 0.05 raw and 1 after" in \
        family_sentence(v)


def test_an_estimate_outside_its_interval_is_said_where_it_is_printed():
    from bench.report.render import ci_text
    assert "outside" in ci_text(0.5, 0.6, 0.9) and "outside" not in ci_text(0.7, 0.6, 0.9)
    assert "outside" not in ci_text(0.7, np.nan, np.nan)


def test_an_ablation_at_a_budget_is_shown_only_when_it_survives_holm_and_few_replicates_fall_outside():
    from types import SimpleNamespace

    from bench.report.render import ablation_sentences
    v = SimpleNamespace(headline="q", task="t")

    def at(outside, p_holm, pchip_diff=0.02):
        pchip = {"diff": pchip_diff, "ci_low": 0.01, "ci_high": 0.03, "p": 0.001}
        return {"budget": 8, "diff": 0.02, "ci_low": 0.01, "ci_high": 0.03, "p": 0.001, "p_linear": 0.001,
                "p_holm": p_holm, "test": "paired bootstrap", "pchip": pchip, "outside": outside}
    lines = ablation_sentences(v, "idea", [], [at(0.0, 0.01), at(0.2, 0.01), at(0.0, 0.2), at(0.0, 0.01, -0.01)])
    assert lines[1].endswith("; shown).") and "0.001 and 0.001; the larger p 0.001, Holm p 0.010" in lines[1]
    assert "20.0% outside; not shown: too many replicates outside" in lines[2]
    assert lines[3].endswith("; not shown).") and "opposite signs" in lines[4]


def test_batched_steps_wait_for_the_slowest_row_of_each_recorded_batch():
    from bench.report.cost import pooled_cost, run_cost
    cost = run_cost([1, 5, 2, 2, 9, 1, 3], 3)              # batches [1 5 2] [2 9 1] [3]: slowest 5, 9, 3
    assert (cost.batched_steps, cost.batches, cost.steps_per_batch) == (17, 3, pytest.approx(17 / 3))
    assert (cost.median, cost.max) == (2, 9) and cost.p90 == pytest.approx(np.percentile([1, 5, 2, 2, 9, 1, 3], 90))
    assert run_cost([3, 1, 4], None).batched_steps == 4      # no recorded batch size: one batch
    seeds = pooled_cost([run_cost([2, 4], 1), run_cost([4, 8], 1)])
    assert (seeds.mean, seeds.max, seeds.batched_steps) == (4.5, 6, 9)


def test_a_stored_metric_outside_its_interval_is_said_in_the_run_table():
    from bench.results.summary import metric_text
    assert "outside" in metric_text({"value": 0.0027, "ci_low": 0.0, "ci_high": 0.0025})
    assert "outside" not in metric_text({"value": 0.002, "ci_low": 0.0, "ci_high": 0.0025})
