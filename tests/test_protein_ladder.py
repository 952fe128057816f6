"""The protein degradation ladder and the headline metric it chose (tasks/protein/ladder.py).

On the real reference samples: the headline (windowed composition JSD, W1) and every panel
metric the results report must rank the floor best and the degraded sets worse beyond the paired
CI, while pooled composition JSD, the old headline, must fail (it is blind to shuffling and to
substitutions drawn from the composition), and so must the one-sided forms of the panel.
"""
import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from bench.errors import BenchError
from bench.paired import per_input
from bench.run.checks import check_arguments, set_temperature
from tasks.protein import ladder as L
from tasks.protein import metrics as pm
from tasks.protein.fasta import AMINO_ACIDS, read_fasta
from tasks.protein.judge import weights_path
from tasks.protein.statistics import stat_w1, window_jsd
from tasks.protein.task import PANEL

needs_judge = pytest.mark.skipif(not weights_path().is_file(),
                                 reason="UniRep weights not fetched (python -m bench data unirep)")


@pytest.fixture(scope="module")
def reference():
    return read_fasta(L.REFERENCE_A).sequences


@pytest.fixture(scope="module")
def ladder_sets(reference):
    """The floor and its model-free degradations, all 500 sequences (cheap to build)."""
    sets = L.natural_sets(read_fasta(L.REFERENCE_B).sequences, reference)
    return sets


@pytest.fixture(scope="module")
def scored(ladder_sets, reference):
    metrics = {m.name: m for m in L.candidate_metrics(reference, with_judge=False)}
    chosen = [metrics[n] for n in ("window_jsd", "composition_jsd", "sequence_composition_w1")]
    return L.ladder(ladder_sets, chosen), {m.name: m for m in chosen}


def test_headline_ranks_the_floor_best_and_every_degradation_worse(scored):
    results, metrics = scored
    rows, steps, passes, failed = results["window_jsd"]
    assert passes, failed
    assert min(rows, key=lambda n: rows[n]["value"]) == "floor"
    strength = [rows[n]["value"] for n in ("floor", "substituted 10%", "substituted 30%", "substituted 100%")]
    assert strength == sorted(strength)          # monotone in the substitution's strength


@pytest.fixture(scope="module")
def panel_scored(ladder_sets, reference):
    """The reported panel and the one-sided forms it replaced (the judge: about a minute, cached)."""
    with_judge = weights_path().is_file()
    metrics = [m for m in L.candidate_metrics(reference, with_judge=with_judge)
               if m.name in PANEL or m.name in ("judge_nll", "longest_run", "low_complexity_share")]
    return L.ladder(ladder_sets, metrics)


@needs_judge
def test_every_reported_panel_metric_passes_the_ladder(panel_scored):
    for name in PANEL:
        rows, _, passes, failed = panel_scored[name]
        assert passes, (name, failed)
        strength = [rows[n]["value"] for n in ("floor", "substituted 10%", "substituted 30%", "substituted 100%")]
        assert strength == sorted(strength), name


@needs_judge
def test_the_one_sided_forms_of_the_panel_fail_the_ladder(panel_scored):
    # independent residues make shorter runs and fewer low-entropy windows than natural ones:
    # as means they call the substituted sets better; the judge (a mean) fails only on argmax
    for name in ("longest_run", "low_complexity_share"):
        _, _, passes, failed = panel_scored[name]
        assert not passes and "substituted 100%" in failed
    assert panel_scored["judge_nll"][2]   # passes every model-free rung: its failure is argmax collapse


def test_panel_metrics_are_two_sided(reference):
    """A set whose runs are longer than natural ones and one whose runs are shorter are both
    further from the reference than the floor is."""
    from tasks.protein.task import PANEL as panel
    from tasks.protein.task import w1_metric
    runs = panel["longest_run_w1"][1]
    floor = read_fasta(L.REFERENCE_B).sequences[:200]
    longer = [s[:10] + s[10] * 8 + s[18:] for s in floor]            # one run of 8 or more in each
    shorter = ["".join("ACDEFGHIKLMNPQRSTVWY"[i % 20] for i in range(len(s))) for s in floor]   # no runs
    ref_values = runs(reference)
    def w1_value(seqs):
        return w1_metric("m", "", runs(seqs), ref_values)["value"]

    assert w1_value(longer) > w1_value(floor) and w1_value(shorter) > w1_value(floor)


def test_ladder_intervals_are_basic_bootstrap_intervals():
    replicates = np.array([0.0, 1.0, 2.0, 3.0, 10.0] * 20)
    low, high = np.percentile(replicates, [2.5, 97.5])
    assert L.interval(replicates, 2.0) == pytest.approx((4.0 - high, 4.0 - low))


def test_pooled_composition_jsd_fails_the_ladder(scored):
    results, _ = scored
    rows, _, passes, failed = results["composition_jsd"]
    assert not passes
    # substitutions are drawn from the reference composition, shuffling keeps each sequence's:
    # the pooled composition cannot see either
    assert {"shuffled", "substituted 100%"} <= set(failed)
    assert rows["shuffled"]["diff"] == pytest.approx(0, abs=1e-12)


def test_an_order_blind_metric_fails_on_shuffling(scored):
    results, _ = scored
    rows, _, passes, failed = results["sequence_composition_w1"]
    assert not passes and "shuffled" in failed
    assert rows["shuffled"]["diff"] == pytest.approx(0, abs=1e-12)


def test_verdict_fails_a_metric_that_ranks_a_degradation_better():
    metric = L.Metric("m", "", [])
    rows = {"floor": {"diff_ci": (0, 0)}, "worse": {"diff_ci": (0.1, 0.2)}, "better": {"diff_ci": (-0.2, -0.1)}}
    assert L.verdict(metric, rows, {}) == (False, ["better"])
    assert L.verdict(metric, {k: rows[k] for k in ("floor", "worse")}, {("a", "b"): (0.1, (-0.01, 0.2))}) \
        == (False, ["b vs a"])


def test_w1_is_the_exact_wasserstein_distance():
    rng = np.random.default_rng(0)
    a, b = rng.random(500), rng.random(250) ** 2
    assert stat_w1(a, b) == pytest.approx(wasserstein_distance(a, b), abs=1e-3)
    assert stat_w1(np.stack([a, a]), b).shape == (2,)     # replicates on a leading axis
    assert stat_w1(a, a) == pytest.approx(0)


def test_window_jsd_sees_local_order_that_composition_does_not():
    clustered, mixed = "A" * 20 + "L" * 20, "AL" * 20     # the same composition
    values = window_jsd([clustered, mixed], AMINO_ACIDS, 10, pm.composition_counts("AL"))
    assert values[1] == pytest.approx(0)
    assert values[0] > 0.2     # pure windows score 0.31 bits, those across the boundary less


def test_the_headline_recomputes_from_records_for_paired_tests(reference):
    from tasks.protein.task import window_metric
    sequences = read_fasta(L.REFERENCE_B).sequences[:60]
    ref_comp = np.stack([pm.composition_counts(s) for s in reference])
    summary = window_metric(sequences, reference, ref_comp)
    again = per_input(summary, [{"index": i, "sequence": s} for i, s in enumerate(sequences)])
    assert again() == pytest.approx(summary["value"])
    assert summary["ci_low"] <= summary["ci_high"]


def test_collapse_diversity_and_novelty_measures():
    assert pm.low_complexity_share("A" * 30 + "ACDEFGHIKLMNPQRSTVWY" * 2) == pytest.approx(30 / 70, abs=0.2)
    assert pm.low_complexity_share("ACDEFGHIKLMNPQRSTVWY" * 3) == 0
    assert pm.longest_run("MAAAAK") == 4
    ident = pm.pairwise_identity_matrix(["ACDEFGHIKLMN", "ACDEFGHIKLMN", "WYWYWYWYWYWY"])
    assert ident[0, 1] == 1 and ident[0, 2] == 0 and np.isnan(ident[0, 0])


class Args:
    seed, batch_size, verify, tasks, strategies = 0, 1, 0, "protein", None
    executor, shards, ray_address = "local", 1, None

    def __init__(self, temperature):
        self.temperature = temperature


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_bad_temperature_is_one_line_error(bad):
    with pytest.raises(BenchError, match="--temperature"):
        check_arguments(Args(bad))


def test_temperature_overrides_a_sampling_task_and_refuses_an_argmax_one():
    from tasks.protein.task import ProteinTask
    from tasks.sudoku.task import SudokuTask
    task = set_temperature([ProteinTask()], 0.0)[0]
    assert task.temperature == 0.0 and ProteinTask.temperature == 1.0
    with pytest.raises(BenchError, match="argmax"):
        set_temperature([SudokuTask()], 1.0)


def test_temperature_is_part_of_the_run_identity(tmp_path):
    from bench.results.identity import result_paths
    base = {"task": "protein", "strategy_spec": "sequential", "seed": 0, "temperature": 1.0}
    assert result_paths(tmp_path, base)[0] != result_paths(tmp_path, {**base, "temperature": 0.0})[0]


@pytest.mark.slow
def test_full_ladder_with_the_model_sets(reference):
    """The whole ladder, one-pass and argmax sets decoded by the shipped model (minutes; cached)."""
    floor = read_fasta(L.REFERENCE_B).sequences
    sets = L.natural_sets(floor, reference)
    decoded = L.model_sets([len(s) for s in floor])
    sets.update({"one pass": decoded["one pass"], "argmax sequential": decoded["argmax sequential"]})
    metrics = [m for m in L.candidate_metrics(reference, with_judge=weights_path().is_file()) if L.reported(m)]
    for name, (_, _, passes, failed) in L.ladder(sets, metrics).items():
        assert passes, (name, failed)
