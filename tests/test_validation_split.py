"""Choices made on a validation split, confirmed on test: the `validation` preset's plans and
folder, and `bench report` testing on test only the runs and line pairs validation chose."""
import csv
import json

import pytest

from bench.errors import BenchError
from bench.presets import VALIDATION_OUT, plan, results_folder, sweep_of
from bench.report import write_all_tables
from tests.test_report import RUNS, run, with_records

# a top-k run that reaches 8 passes, where the eb line also does: the budget's lead has two lines
SPLIT_RUNS = RUNS[:5] + [run("topk:k=7,order=confidence", 7, 0.5, {"k": 7, "order": "confidence"}, "topk:k=7")]


def test_the_validation_preset_runs_each_tasks_default_specs_on_its_own_split():
    plans = {p.task: p for p in plan("validation")}
    assert plans["sudoku"].specs == sweep_of("sudoku", "default")
    assert plans["sudoku"].data.endswith("validation_hard.csv") and plans["sudoku"].seeds == (0,)
    assert plans["hmm"].data is None and plans["hmm"].seeds[0] not in (0, 1, 2)   # a seed no tier runs
    assert all(p.data is None for p in plan("default", tasks="sudoku,hmm"))


def test_a_task_without_a_validation_split_is_a_one_line_error_naming_those_with_one(monkeypatch):
    from dataclasses import replace

    from bench.settings import TASK_SETTINGS, all_task_settings
    protein = all_task_settings()["protein"]
    monkeypatch.setitem(TASK_SETTINGS, "protein", replace(protein, tiers=replace(protein.tiers, validation=None)))
    with pytest.raises(BenchError, match="declares no validation split; tasks with one: .*sudoku"):
        plan("validation", tasks="protein")


def test_the_protein_validation_split_reads_reference_b_which_shares_no_sequence_with_reference_a():
    from tasks.protein.fasta import read_fasta
    from tasks.protein.split import REFERENCE_A, REFERENCE_B
    protein = {p.task: p for p in plan("validation")}["protein"]
    assert protein.data.endswith("reference_b.fasta") and protein.seeds[0] not in (0, 1, 2)
    a, b = read_fasta(REFERENCE_A).sequences, read_fasta(REFERENCE_B).sequences
    assert len(b) == 500 and not set(a) & set(b)


@pytest.mark.parametrize("preset,out,expected", [("validation", "results", VALIDATION_OUT),
                                                 ("validation", "/tmp/v", "/tmp/v"),
                                                 ("retrained", "results", "retrained"),
                                                 ("retrained", "/tmp/r", "/tmp/r"),
                                                 ("default", "results", "results"), (None, "results", "results")])
def test_validation_runs_go_to_their_own_folder_unless_out_is_given(preset, out, expected):
    assert results_folder(preset, out) == expected
    assert plan(preset, tasks="sudoku", strategies="sequential", out=out)[0].out == expected


def test_the_validation_puzzles_share_no_grid_with_the_test_puzzles():
    from tasks.sudoku.data import TEST_SET, VALIDATION_SET, grids_of, read_puzzles
    validation, test = read_puzzles(VALIDATION_SET), read_puzzles(TEST_SET)
    assert len(validation.puzzles) == 1000 and not grids_of(validation) & grids_of(test)


def write_split(folder, outcomes, data_id, runs=SPLIT_RUNS):
    folder.mkdir()
    for r in runs:
        r = json.loads(json.dumps(r))
        r["config"]["data_id"] = data_id
        with_records(folder, r, outcomes[r["label"]], r["metrics"][1]["value"])


def test_the_report_tests_on_test_the_run_and_the_pair_validation_chose(tmp_path):
    """On validation eb:gamma=1 is non-inferior (and cheapest), on test only eb:gamma=0.1 is: the
    claims test gamma=1 and say it is worse, instead of picking gamma=0.1 after seeing test."""
    good, bad, better = [1] * 300 + [0] * 300, [0] * 600, [1] * 330 + [0] * 270
    # Sudoku's budget table compares runs at each budget: eb and top-k both have one at 8 passes
    runs = SPLIT_RUNS[:5] + [run("topk:k=7,order=confidence", 8, 0.5, {"k": 7, "order": "confidence"}, "topk:k=7"),
                             run("eb:gamma=0.3,order=entropy", 8, 0.5, {"gamma": 0.3, "order": "entropy"},
                                 "eb:gamma=0.3")]
    write_split(tmp_path / "validation", {"sequential": good, "eb:gamma=0.1": good, "eb:gamma=1": good,
                                          "eb:gamma=0.3": good, "topk:k=2": good, "topk:k=5": good,
                                          "topk:k=7": better}, "valid", runs)
    write_split(tmp_path / "results", {"sequential": good, "eb:gamma=0.1": good, "eb:gamma=1": bad,
                                       "eb:gamma=0.3": good, "topk:k=2": bad, "topk:k=5": bad, "topk:k=7": bad},
                "test", runs)
    write_all_tables(tmp_path / "results", tmp_path / "reports")
    rows = {r["strategy"]: r for r in csv.DictReader((tmp_path / "reports" / "speedup_sudoku.csv").open())}
    assert rows["eb"]["run"] == "eb:gamma=1" and rows["eb"]["non-inferior (margin 0.01)"] == "no"
    claims = (tmp_path / "reports" / "claims_sudoku.md").read_text()
    assert "chosen on validation (7 runs on 600 validation inputs (data valid, seed 0)" in claims
    choices = (tmp_path / "reports" / "choices_sudoku.md").read_text()
    assert "- eb: `eb:gamma=1` (5.0 passes" in choices and "test inputs are not read" in choices
    assert "- At 8 passes, `topk:k=7` (8 passes) (first on validation) minus `eb:gamma=0.3` (8 passes): -" in claims
    assert "; reversed on test (shown" in claims   # validation ranked them the other way


def test_without_validation_runs_the_claims_say_their_choices_were_made_on_the_same_inputs(tmp_path):
    good = [1] * 300 + [0] * 300
    write_split(tmp_path / "results", dict.fromkeys(["sequential", "eb:gamma=0.1", "eb:gamma=1", "topk:k=2",
                                                     "topk:k=5", "topk:k=7"], good), "test")
    write_all_tables(tmp_path / "results", tmp_path / "reports")
    claims = (tmp_path / "reports" / "claims_sudoku.md").read_text()
    assert "chosen on these same inputs (the task has no validation runs)" in claims
    assert not (tmp_path / "reports" / "choices_sudoku.md").exists()
