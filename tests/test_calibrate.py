"""`bench calibrate` (issue 29 item 2): a knob bisected until mean passes are within 2% of a budget."""
from pathlib import Path

import numpy as np
import pytest

from bench.errors import BenchError
from bench.run.calibrate import calibrate, knob_spec
from conftest import run_cli


def test_a_falling_knob_is_bisected_on_a_log_scale_to_within_two_percent():
    calls = []

    def measure(gamma):                 # passes fall as gamma grows, like EB-Sampler's
        calls.append(gamma)
        return 80.0 / (1.0 + gamma)

    found = calibrate(measure, 0.01, 100.0, 8.0)
    assert found.within and abs(found.passes / 8.0 - 1) <= 0.02 and found.value == pytest.approx(9.0, rel=0.05)
    assert len(calls) == len(found.probes) <= 20


def test_a_rising_knob_and_a_linear_range_including_zero():
    found = calibrate(lambda tau: 2.0 + 40.0 * tau, 0.0, 1.0, 22.0)   # passes rise with tau
    assert found.within and found.value == pytest.approx(0.5, abs=0.02)


def test_a_budget_outside_what_the_range_gives_is_a_one_line_error():
    with pytest.raises(BenchError, match="budget 100 passes is outside what the knob's range gives"):
        calibrate(lambda g: 80.0 / (1.0 + g), 0.1, 10.0, 100.0)
    with pytest.raises(BenchError, match="need low < high"):
        calibrate(lambda g: 1.0, 2.0, 1.0, 5.0)


def test_a_step_function_that_never_comes_within_tolerance_says_so():
    found = calibrate(lambda k: 10.0 if k < 1 else 5.0, 0.1, 10.0, 7.0, max_steps=10)
    assert not found.within and found.passes in (10.0, 5.0)


def test_the_spec_keeps_the_templates_parameters():
    assert knob_spec("eb", "gamma", 0.4371234) == "eb:gamma=0.437123"
    assert knob_spec("mi:lam=0", "gamma", 2) == "mi:lam=0,gamma=2"


def test_the_command_calibrates_eb_on_the_exact_tasks_validation_sequences():
    """A real decode: EB-Sampler's gamma on 100 validation sequences of the exact HMM task (seed 100)."""
    proc = run_cli("calibrate", "--task", "hmm", "--strategy", "eb", "--knob", "gamma", "--budget", "16",
                   "--range", "0.5,16", "--limit", "100")
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("eb:gamma=") and "on 100 validation inputs of hmm, within 2% of 16" in last
    passes = float(last.split(": ")[1].split()[0])
    assert abs(passes / 16 - 1) <= 0.02


def test_a_task_without_a_validation_split_cannot_be_calibrated(toy_plugin):
    """The toy plugin task (tests/toy) declares no settings, so no validation split either."""
    proc = run_cli("calibrate", "--task", "toy", "--strategy", "eb", "--knob", "gamma", "--budget", "16",
                   "--range", "1,30")
    assert proc.returncode == 2 and proc.stderr.strip().startswith("error: task 'toy' declares no validation split")


def test_known_probes_that_bracket_the_budget_spare_the_ranges_ends():
    calls = []

    def measure(gamma):
        calls.append(gamma)
        return 80.0 / (1.0 + gamma)

    found = calibrate(measure, 0.01, 100.0, 8.0, known=[(4.0, 16.0), (19.0, 4.0)])
    assert found.within and 0.01 not in calls and 100.0 not in calls and len(calls) <= 6


def test_a_step_function_stops_once_its_bracket_cannot_be_split():
    calls = []

    def measure(k):
        calls.append(k)
        return 10.0 if k < 1 else 5.0
    found = calibrate(measure, 0.1, 10.0, 7.0)
    assert not found.within and len(calls) < 25


def scored(label, passes, values):
    from bench.paired import PerInput
    from bench.report.verdicts import ScoredRun
    n = len(values)
    return ScoredRun({"label": label}, PerInput("accuracy", "mean", [np.asarray(values, float)], True, {}),
                     PerInput("passes", "mean", [np.full(n, float(passes))], False, {}))


def test_a_calibrated_table_compares_the_runs_within_two_percent_as_they_are():
    """Each cell is the line's run within 2% of the budget (none where no run is); the lead is the
    paired difference of the two best such runs, not an interpolation between a line's runs."""
    from bench.report.verdicts import calibrated_table, joint_indices, make_line, runs_at_budgets
    rng = np.random.default_rng(0)
    good, bad = (rng.random(400) < 0.8).astype(float), (rng.random(400) < 0.5).astype(float)
    a_runs = [scored("a:g=1", 7.9, good), scored("a:g=2", 4.0, bad)]
    b_runs = [scored("b:g=1", 8.1, bad), scored("b:g=2", 12.0, good)]
    c_runs = [scored("c:k=1", 8.4, good)]                      # 5% off: not at 8
    idx = joint_indices(a_runs)
    lines = [make_line(name, runs, idx) for name, runs in (("a", a_runs), ("b", b_runs), ("c", c_runs))]
    at_budget = runs_at_budgets(lines, (8, 12))
    assert at_budget == {8: {"a": "a:g=1", "b": "b:g=1"}, 12: {"b": "b:g=2"}}
    cells, leads = calibrated_table(lines, (8, 12), True, at_budget)
    assert cells["a"][8].value == good.mean() and cells["a"][8].passes == pytest.approx(7.9) and cells["c"][8] is None
    assert cells["a"][12] is None and len(leads) == 1            # one run at 12: no lead there
    (lead,) = leads
    assert (lead.best, lead.runner_up) == ("a", "b") and lead.runs[0].label == "a:g=1"
    assert lead.test["diff"] == pytest.approx(good.mean() - bad.mean()) and lead.test["p"] < 0.001
    assert "Tango" in lead.test["test"] or "McNemar" in lead.test["test"]


@pytest.mark.parametrize("task", ["sudoku", "antibody", "hmm", "hmm_mdm"])
def test_each_tasks_calibrated_runs_are_in_its_default_and_paper_tiers_only(task):
    """The committed calibration files hold each budget's run of each knob, within 2% on validation,
    and the presets run them in the default and paper tiers (so in validation too), not in quick or ci."""
    import json

    from bench.presets import sweep_of
    from bench.settings import calibrated_specs, task_settings
    settings = task_settings(task)
    entries = json.loads(Path(settings.claims.calibration.file).read_text())["runs"]
    found = calibrated_specs(settings)
    assert found and all(abs(e["passes"] / e["budget"] - 1) <= 0.02 for e in entries if e["within"])
    assert {e["template"] for e in entries} <= {k.template for k in settings.claims.calibration.knobs}
    default, paper = sweep_of(task, "default"), sweep_of(task, "paper")
    assert all(spec in default and spec in paper for spec in found)
    assert sweep_of(task, "quick") == list(settings.tiers.specs["quick"])     # quick adds none


def test_a_calibration_needs_a_validation_split():
    from bench.settings import BudgetCalibration, Knob, Verdicts, register_task_settings
    with pytest.raises(BenchError, match="budget calibration without a validation split"):
        register_task_settings("no_such_task", {"default": ["eb"]}, verdicts=Verdicts((8,), 0.1),
                               calibration=BudgetCalibration((Knob("eb", "gamma", 1, 10),), "x.json"))


def test_an_ablation_at_a_budget_pairs_the_two_calibrated_runs_and_interpolates_elsewhere():
    """Where the idea's line and its ablation's both have a run at the budget, the claim is their paired
    difference (no interpolation, ``pchip`` None); at a budget only the sweeps span, it interpolates."""
    from bench.report.ablations import ablation_at_budgets
    from bench.report.verdicts import joint_indices
    rng = np.random.default_rng(1)
    good, bad = (rng.random(300) < 0.7).astype(float), (rng.random(300) < 0.4).astype(float)
    idea = [scored("mi:g=1", 8.0, good), scored("mi:g=3", 16.0, good)]
    ablation = [scored("mi:g=1,lam=0", 8.1, bad), scored("mi:g=4,lam=0", 17.0, bad)]
    at_budget = {8: {"mi": "mi:g=1", "mi lam=0": "mi:g=1,lam=0"}}
    out = ablation_at_budgets(idea, ablation, joint_indices(idea), (8, 12), at_budget)
    paired, interpolated = out
    assert paired["pchip"] is None and paired["runs"] == ("mi:g=1", "mi:g=1,lam=0")
    assert paired["diff"] == pytest.approx(good.mean() - bad.mean())
    assert interpolated["budget"] == 12 and interpolated["pchip"] is not None


def test_two_runs_exactly_at_a_budget_are_one_test_not_two():
    """Fixed-step schedules sit exactly at their step count: there the at-budget claim is the two
    runs' paired difference, and the same pair run by run is dropped, so Holm counts it once."""
    from bench.report.ablations import ablation_at_budgets, distinct_pairs, pair_runs
    from bench.report.verdicts import joint_indices
    rng = np.random.default_rng(2)
    good, bad = (rng.random(200) < 0.7).astype(float), (rng.random(200) < 0.4).astype(float)
    idea = [scored("conf:steps=4", 4.0, good), scored("conf:steps=8", 8.0, good)]
    without = [scored("rand:steps=4", 4.0, bad), scored("rand:steps=8", 8.0, bad)]
    for run, steps in zip(idea + without, (4, 8, 4, 8)):
        run.summary["config"] = {"strategy_params": {"steps": steps}}
    at_budgets = ablation_at_budgets(idea, without, joint_indices(idea), (4, 6, 8))
    assert [t["pchip"] is None for t in at_budgets] == [True, False, True]
    assert at_budgets[0]["runs"] == ("conf:steps=4", "rand:steps=4")
    pairs = pair_runs(idea, without, {})
    assert len(pairs) == 2 and distinct_pairs(pairs, at_budgets) == []
    assert distinct_pairs(pairs, at_budgets[1:2]) == pairs


def test_a_calibrated_cell_names_its_passes_and_its_spread_over_seeds():
    from bench.report.render import cell_text
    from bench.report.verdicts import BudgetCell
    cell = BudgetCell(0.5, 0.45, 0.55, passes=16.12, seed_values=(0.49, 0.52, 0.5), p90=20, steps_per_batch=22)
    assert cell_text(cell) == "0.5 [0.45, 0.55]; 16.1 passes; seeds 0.49-0.52 (3); p90 20, batch 22"
    assert cell_text(BudgetCell(0.5, 0.45, 0.55)) == "0.5 [0.45, 0.55]"     # an interpolated cell, one seed


def test_sapiens_budget_table_is_its_own_calibration_and_model_needs_budgets():
    """Sapiens' tiers run the runs of its own calibration file (calibrated on its validation domains),
    AntiBERTy's none of them; --model without --budgets is one line."""
    import json

    from bench.presets import sweep_runs
    from bench.settings import calibrated_specs, task_settings
    sapiens, antiberty = task_settings("antibody", "sapiens"), task_settings("antibody")
    assert sapiens.claims.calibration.file != antiberty.claims.calibration.file
    entries = json.loads(Path(sapiens.claims.calibration.file).read_text())["runs"]
    assert all(abs(e["passes"] / e["budget"] - 1) <= 0.02 for e in entries if e["within"])
    found = calibrated_specs(sapiens)
    specs = [spec for spec, _ in sweep_runs("antibody", "default", "sapiens")]
    assert found and all(spec in specs for spec in found)
    assert not set(found) & set(calibrated_specs(antiberty))
    proc = run_cli("calibrate", "--task", "antibody", "--model", "sapiens", "--strategy", "eb", "--knob", "gamma",
                   "--budget", "8", "--range", "1,30")
    assert proc.returncode == 2 and "--model is read only with --budgets" in proc.stderr
