"""Paired verdicts on hand-made records with known answers."""
import numpy as np
import pytest
from scipy.stats import norm

from bench.paired import paired_difference, per_input
from bench.report.verdicts import ScoredRun, budget_table, interpolate, make_line, non_inferiority, replicate_indices
from tasks.protein.statistics import jsd_bits, kmer_counts


def binary_metric(values, name="exact_accuracy"):
    records = [{"index": i, "exact": v, "passes": 10} for i, v in enumerate(values)]
    metric = {"name": name, "higher_is_better": True, "per_input": {"statistic": "mean", "fields": ["exact"]}}
    return per_input(metric, records)


def numeric_run(label, quality, passes, higher_is_better=True):
    records = [{"index": i, "q": q, "passes": p} for i, (q, p) in enumerate(zip(quality, passes))]
    q = per_input({"name": "q", "higher_is_better": higher_is_better,
                   "per_input": {"statistic": "mean", "fields": ["q"]}}, records)
    p = per_input({"name": "passes", "higher_is_better": False,
                   "per_input": {"statistic": "mean", "fields": ["passes"]}}, records)
    return ScoredRun({"label": label}, q, p)


def test_identical_runs_differ_by_zero_with_p_one():
    values = np.random.default_rng(0).integers(0, 2, 200)
    result = paired_difference(binary_metric(values), binary_metric(values))
    assert result["diff"] == 0 and result["ci_low"] < 0 < result["ci_high"]   # no discordant input: not [0, 0]
    assert result["ci_high"] == pytest.approx(-result["ci_low"]) and result["ci_high"] < 0.02
    assert result["p"] == 1.0 and result["discordant"] == (0, 0) and result["test"] == "Tango score (McNemar)"


def test_twenty_discordant_boards_all_one_way_are_significant():
    a = np.array([1] * 20 + [1] * 30 + [0] * 50)
    b = np.array([0] * 20 + [1] * 30 + [0] * 50)
    result = paired_difference(binary_metric(a), binary_metric(b))
    assert result["discordant"] == (20, 0)
    assert result["p"] < 1e-4 and result["p"] == pytest.approx(2 * norm.sf(20 / np.sqrt(20)))   # McNemar's z
    assert result["diff"] == pytest.approx(0.2) and result["ci_low"] > 0


def test_paired_bootstrap_is_narrower_than_unpaired_when_inputs_dominate():
    rng = np.random.default_rng(1)
    difficulty = rng.normal(0, 5, 300)                 # shared by both runs
    a = numeric_run("a", difficulty + 0.3, np.ones(300))
    b = numeric_run("b", difficulty + rng.normal(0, 0.1, 300), np.ones(300))
    result = paired_difference(a.quality, b.quality)
    assert result["test"] == "paired bootstrap" and result["p"] < 0.01
    assert 0.25 < result["diff"] < 0.35 and result["ci_high"] - result["ci_low"] < 0.1


def test_bootstrap_p_of_pure_noise_is_not_small():
    rng = np.random.default_rng(2)
    a = numeric_run("a", rng.normal(0, 1, 200), np.ones(200))
    b = numeric_run("b", rng.normal(0, 1, 200), np.ones(200))
    assert paired_difference(a.quality, b.quality)["p"] > 0.05


def test_pooled_jsd_recipe_recounts_kmers():
    records = [{"index": 0, "sequence": "ACCA"}, {"index": 1, "sequence": "CC"}]
    counts = kmer_counts(["ACCA", "CC"], "AC", 2)       # AA AC CA CC
    assert counts.tolist() == [[0, 1, 1, 1], [0, 0, 0, 1]]
    metric = {"name": "jsd", "higher_is_better": False,
              "per_input": {"statistic": "pooled_jsd", "fields": ["sequence"], "alphabet": "AC", "k": 1,
                            "reference": [1, 1]}}
    value = per_input(metric, records)()
    assert value == pytest.approx(jsd_bits(np.array([2.0, 4.0]), np.array([1.0, 1.0])))
    assert jsd_bits(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(1.0)


def test_interpolation_is_linear_in_log_passes():
    assert interpolate(np.array([4.0, 16.0]), np.array([0.2, 0.6]), 8) == pytest.approx(0.4)
    assert np.isnan(interpolate(np.array([4.0, 16.0]), np.array([0.2, 0.6]), 32))
    replicates = interpolate(np.array([[4.0, 16.0], [16.0, 4.0]]), np.array([[0.2, 0.6], [0.6, 0.2]]), 8)
    assert replicates.tolist() == pytest.approx([0.4, 0.4])


def test_budget_table_marks_the_best_only_where_its_lead_is_shown():
    n = 400
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 0.02, n)
    strong = [numeric_run("s1", 0.5 + noise, np.full(n, 4.0)), numeric_run("s2", 0.9 + noise, np.full(n, 16.0))]
    weak = [numeric_run("w1", 0.4 + noise, np.full(n, 4.0)), numeric_run("w2", 0.5 + noise, np.full(n, 16.0))]
    twin = [numeric_run("t1", 0.5 + noise + rng.normal(0, 0.3, n), np.full(n, 4.0)),
            numeric_run("t2", 0.9 + noise + rng.normal(0, 0.3, n), np.full(n, 16.0))]
    idx = replicate_indices(n, 500)
    cells, leads = adjusted(budget_table([make_line("strong", strong, idx), make_line("weak", weak, idx)], (8,), True))
    assert cells["strong"][8].value == pytest.approx(0.7, abs=0.01) and cells["strong"][8].best
    assert leads[0].best == "strong" and leads[0].shown and leads[0].diff == pytest.approx(0.25, abs=0.01)
    cells, leads = adjusted(budget_table([make_line("strong", strong, idx), make_line("twin", twin, idx)], (8,), True))
    assert not leads[0].shown and not any(c[8].best for c in cells.values())


def adjusted(table):
    """A budget table with its leads' p-values Holm-adjusted as one family and the best marked."""
    from bench.multiplicity import holm
    from bench.report.verdicts import mark_best
    cells, leads = table
    for lead, p in zip(leads, holm([lead.test["p"] for lead in leads])):
        lead.test["p_holm"] = p
    mark_best(cells, leads, True)
    return cells, leads


def test_non_inferiority_three_ways():
    n = 500
    rng = np.random.default_rng(4)
    base = rng.normal(0.6, 0.05, n)
    reference = numeric_run("seq", base, np.ones(n))
    same = numeric_run("same", base + rng.normal(0, 0.01, n), np.ones(n))
    worse = numeric_run("worse", base - 0.05 + rng.normal(0, 0.01, n), np.ones(n))
    vague = numeric_run("vague", base - 0.01 + rng.normal(0, 0.15, n), np.ones(n))
    assert non_inferiority(same, reference, 0.01)[0] == "yes"
    assert non_inferiority(worse, reference, 0.01)[0] == "no"
    assert non_inferiority(vague, reference, 0.01)[0] == "not shown"


def test_seeds_of_a_run_are_pooled_per_input():
    from bench.report.verdicts import merge_seeds

    def seeded(seed, exact, spec="eb:gamma=1"):
        records = [{"index": i, "exact": e, "passes": 4 + seed} for i, e in enumerate(exact)]
        metric = {"name": "exact_accuracy", "higher_is_better": True,
                  "per_input": {"statistic": "mean", "fields": ["exact"]}}
        passes = {"name": "passes", "higher_is_better": False, "per_input": {"statistic": "mean", "fields": ["passes"]}}
        return ScoredRun({"label": spec, "config": {"strategy_spec": spec, "seed": seed}},
                   per_input(metric, records), per_input(passes, records))
    pooled = merge_seeds([seeded(0, [1, 0, 0, 0]), seeded(1, [1, 1, 0, 0]), seeded(0, [0, 0, 0, 0], "topk:k=2")])
    by_spec = {r.summary["config"]["strategy_spec"]: r for r in pooled}
    eb = by_spec["eb:gamma=1"]
    assert eb.summary["pooled_seeds"] == [0, 1] and eb.quality() == pytest.approx(0.375) and eb.passes() == 4.5
    assert eb.quality.columns[0].tolist() == [1.0, 0.5, 0.0, 0.0] and not eb.quality.binary
    assert "pooled_seeds" not in by_spec["topk:k=2"].summary


def test_pooled_seeds_of_a_mean_difference_stay_on_its_scale():
    """The exact task's KL (mean of log q - log p) pooled over seeds is the mean of the seeds' KLs."""
    from bench.report.verdicts import merge_seeds

    def seeded(seed, log_q):
        records = [{"index": i, "log_q": q, "log_p": -1.0, "passes": 8} for i, q in enumerate(log_q)]
        metric = {"name": "kl_nats", "higher_is_better": False,
                  "per_input": {"statistic": "mean_difference", "fields": ["log_q", "log_p"]}}
        passes = {"name": "passes", "higher_is_better": False, "per_input": {"statistic": "mean", "fields": ["passes"]}}
        return ScoredRun({"label": "x", "config": {"strategy_spec": "x", "seed": seed}},
                   per_input(metric, records), per_input(passes, records))
    (pooled,) = merge_seeds([seeded(0, [1.0, 3.0]), seeded(1, [2.0, 0.0]), seeded(2, [0.0, 0.0])])
    assert pooled.quality() == pytest.approx((3.0 + 2.0 + 1.0) / 3)     # the seeds' KLs: 3, 2 and 1 nats


def w1_run(values, reference_values):
    """A PerInput of the protein headline's statistic over made-up per-input values."""
    from bench.paired import PerInput
    return PerInput("window_jsd", "window_jsd_w1", [np.asarray(values, float)], False,
                    {"reference_values": np.asarray(reference_values, float)})


def test_a_distance_gets_the_basic_interval_and_a_mean_the_percentile_one():
    from bench.paired import chunked
    rng = np.random.default_rng(3)
    reference = rng.normal(0, 1, 500)
    near, far = w1_run(rng.normal(0, 1, 100), reference), w1_run(rng.normal(0.3, 1, 100), reference)
    result = paired_difference(far, near)
    boots = chunked(lambda block: far(block) - near(block), replicate_indices(100))
    low, high = np.sort(boots)[[49, 1950]]          # the 50th smallest and 50th largest of 2,000
    assert result["ci_method"] == "paired bootstrap, basic"
    assert (result["ci_low"], result["ci_high"]) == pytest.approx((2 * result["diff"] - high, 2 * result["diff"] - low))
    # the W1 of the run nearer the reference grows more on resamples: the percentile interval is shifted down
    assert np.median(boots) < result["diff"] and result["ci_low"] > low
    a = numeric_run("a", rng.normal(0.3, 1, 100), np.ones(100))
    b = numeric_run("b", rng.normal(0, 1, 100), np.ones(100))
    mean_result = paired_difference(a.quality, b.quality)
    boots = chunked(lambda block: a.quality(block) - b.quality(block), replicate_indices(100))
    assert mean_result["ci_method"] == "paired bootstrap, percentile"
    assert (mean_result["ci_low"], mean_result["ci_high"]) == pytest.approx(tuple(np.sort(boots)[[49, 1950]]))


def test_budget_cells_of_a_distance_use_the_basic_interval():
    from bench.paired import order_statistic_interval
    from bench.report.verdicts import is_distance
    rng = np.random.default_rng(4)
    reference = rng.normal(0, 1, 400)
    runs = [ScoredRun({"label": f"r{k}"}, w1_run(rng.normal(0.1 * k, 1, 80), reference),
                      per_input({"name": "passes", "higher_is_better": False,
                                 "per_input": {"statistic": "mean", "fields": ["p"]}},
                                [{"index": i, "p": 10 * (k + 1)} for i in range(80)])) for k in range(2)]
    idx = replicate_indices(80)
    line = make_line("w1", runs, idx)
    assert is_distance([line])
    cells, _ = budget_table([line], [10], higher_is_better=False)
    value, reps = line.at(10)
    assert (cells["w1"][10].low, cells["w1"][10].high) == pytest.approx(order_statistic_interval(2 * value - reps))
    assert cells["w1"][10].outside == 0
