"""The protein degradation ladder and the headline metric it chose (tasks/protein/ladder.py).

On the real reference samples: the headline (windowed composition JSD, W1) must rank the floor
best and the degraded sets worse beyond the paired CI, while pooled composition JSD, the old
headline, must fail (it is blind to shuffling and to substitutions drawn from the composition).
"""
import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from bench.errors import BenchError
from bench.paired import per_input, stat_w1, window_jsd
from bench.runner import check_arguments, set_temperature
from tasks.protein import ladder as L
from tasks.protein import metrics as pm
from tasks.protein.fasta import AMINO_ACIDS, read_fasta


@pytest.fixture(scope="module")
def reference():
    return read_fasta(L.REFERENCE_A).sequences


@pytest.fixture(scope="module")
def ladder_sets(reference):
    """The floor and its model-free degradations, all 500 sequences (cheap to build)."""
    sets = L.natural_sets(read_fasta(L.REFERENCE_B).sequences, reference)
    return {name: sets[name] for name in ("floor", "substituted 30%", "substituted 100%", "shuffled")}


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
    strength = [rows[n]["value"] for n in ("floor", "substituted 30%", "substituted 100%")]
    assert strength == sorted(strength)          # monotone in the substitution's strength


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
    from bench.runner import result_paths
    base = {"task": "protein", "strategy_spec": "sequential", "seed": 0, "temperature": 1.0}
    assert result_paths(tmp_path, base)[0] != result_paths(tmp_path, {**base, "temperature": 0.0})[0]


@pytest.mark.slow
def test_full_ladder_with_the_model_sets(reference):
    """The whole ladder, one-pass and argmax sets decoded by the shipped model (minutes; cached)."""
    floor = read_fasta(L.REFERENCE_B).sequences
    sets = L.natural_sets(floor, reference)
    decoded = L.model_sets([len(s) for s in floor])
    sets.update({"one pass": decoded["one pass"], "argmax sequential": decoded["argmax sequential"]})
    metric = L.candidate_metrics(reference, with_judge=False)[0]
    rows, _, _, failed = L.ladder(sets, [metric])["window_jsd"]
    assert set(failed) <= {"substituted 10%"}   # the one rung no definition resolves at n = 500
