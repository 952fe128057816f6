"""Issue 48: seeds pool as the metric means, paired comparisons match seeds, and a reference-based
metric's interval holds the reference sample's own randomness."""
import numpy as np
import pytest

from bench.paired import BootstrapTest, paired_difference, per_input, register_statistic, replicate_indices
from bench.report.verdicts import ScoredRun, merge_seeds
from tasks.protein.statistics import stat_w1


def w1_metric(reference_values):
    return {"name": "w", "higher_is_better": False,
            "per_input": {"statistic": "window_jsd_w1", "fields": ["sequence"], "alphabet": "AB", "window": 2,
                          "reference": [1, 1], "reference_values": list(reference_values)}}


def w1_run(values, reference_values, seed, spec="s", temperature=1.0):
    """A ScoredRun whose W1 headline reads ``values`` (the columns the window recipe would compute)."""
    records = [{"index": i, "sequence": "AB", "passes": 1} for i in range(len(values))]
    quality = per_input(w1_metric(reference_values), records)
    quality.columns = [np.asarray(values, float)]
    passes = per_input({"name": "passes", "higher_is_better": False,
                        "per_input": {"statistic": "mean", "fields": ["passes"]}}, records)
    summary = {"label": spec, "task": "toy", "strategy": spec,
               "config": {"strategy_spec": spec, "strategy_params": {}, "seed": seed, "temperature": temperature}}
    return ScoredRun(summary, quality, passes)


def test_a_distance_that_averages_seeds_is_refused_at_registration():
    with pytest.raises(ValueError, match="not 'mean'"):
        register_statistic("a_distance_by_mean", distance=True, pooled="mean")(lambda v: v.mean(-1))


def test_seeds_of_a_distributional_metric_are_joined_not_averaged():
    # each seed is an independent draw of the same sampler, as wide as the reference: averaging the
    # three per input narrows the distribution (SD / sqrt 3) and inflates the W1 to the reference
    rng = np.random.default_rng(0)
    reference = rng.normal(0, 1, 400)
    seeds = [w1_run(rng.normal(0, 1, 400), reference, seed) for seed in range(3)]
    pooled = merge_seeds(seeds)[0]
    joined = float(stat_w1(np.concatenate([s.quality.columns[0] for s in seeds]), reference))
    averaged = float(stat_w1(np.mean([s.quality.columns[0] for s in seeds], 0), reference))
    assert pooled.quality() == pytest.approx(joined)
    assert averaged > 3 * joined     # what pooling by the mean gave


def test_a_three_seed_run_is_compared_with_a_one_seed_run_on_the_seed_both_have():
    rng = np.random.default_rng(1)
    reference = rng.normal(0, 1, 300)
    three = [w1_run(rng.normal(0, 1, 300), reference, seed, "three") for seed in range(3)]
    one = w1_run(rng.normal(0, 1, 300), reference, 0, "one")
    runs = {r.summary["config"]["strategy_spec"]: r for r in merge_seeds(three + [one])}
    assert runs["three"].summary["matched_seeds"] == [0]
    assert runs["three"].quality() == pytest.approx(three[0].quality())
    assert runs["three"].passes.columns[0].shape == (300,) and len(runs["three"].summary["seed_values"]) == 3


def test_the_interval_of_a_reference_metric_widens_with_a_tiny_reference_sample():
    # a reference of 8 values: the difference's interval must hold that sample's own noise, so it is
    # wider than the interval that holds the reference fixed, and wider than with a reference of 800
    rng = np.random.default_rng(2)
    a, b = rng.normal(0, 1, 500), rng.normal(0.3, 1, 500)
    widths = {}
    for m in (8, 800):
        reference = np.random.default_rng(3).normal(0, 1, m)
        first, second = w1_run(a, reference, 0).quality, w1_run(b, reference, 0).quality
        test = paired_difference(first, second)
        widths[m] = test["ci_high"] - test["ci_low"]
        plain = np.asarray(replicate_indices(500))      # no replicate numbers: the reference held fixed
        fixed = BootstrapTest.of(first(plain) - second(plain), first() - second(), distance=True)
        widths[m, "fixed"] = np.subtract(*fixed.interval()[::-1])
    assert widths[8] > 1.5 * widths[8, "fixed"] and widths[8] > 1.5 * widths[800]


def test_both_runs_of_a_replicate_see_the_same_reference_resample():
    rng = np.random.default_rng(4)
    reference = rng.normal(0, 1, 50)
    run = w1_run(rng.normal(0, 1, 100), reference, 0)
    idx = replicate_indices(100, 300)
    whole = run.quality(idx)
    in_blocks = np.concatenate([run.quality(idx.block(s, s + 70)) for s in range(0, 300, 70)])
    assert np.array_equal(whole, in_blocks)           # replicate r's reference draw whatever the block
    fixed = run.quality(np.asarray(idx))              # plain indices: the reference held fixed
    assert not np.allclose(whole, fixed)


def test_protein_runs_on_reference_a_carry_their_headline_against_reference_c():
    import json
    from pathlib import Path

    from bench.report.verdicts import load_runs
    folder = Path("results/protein")
    summaries = [json.loads(p.read_text()) for p in sorted(folder.glob("remdm_sigma_cap_eta_0.0_steps_12-seed*.json"))]
    runs, _ = load_runs(summaries, folder)
    (run,) = runs
    assert run.summary["pooled_seeds"] == [0, 1, 2] and run.quality.joined and run.second.joined
    on_c = run.second.extra["reference_values"]
    assert len(on_c) == 500 and not np.allclose(on_c, run.quality.extra["reference_values"])
    assert run.second() != pytest.approx(run.quality())
