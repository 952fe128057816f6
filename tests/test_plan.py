"""Issue 34, item 1: `bench plan` prices a run before it runs (expected passes from committed
results or a pilot, times the forward seconds measured here at the run's batch shape, with the
forward passes alone as the physical limit), and `bench run` prints the plan first and the time
planned against the time taken after."""
import re

import pytest

from bench.run.plan import PILOT_INPUTS, committed_references, row_passes, seconds_per_row_pass
from conftest import run_cli


def plan_lines(done):
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_committed_run_is_priced_from_its_committed_passes(tmp_path):
    lines = plan_lines(run_cli("plan", "--tasks", "sudoku", "--strategies", "sequential,topk:k=3", "--limit", "30",
                               "--out", tmp_path / "results"))
    seq = next(line for line in lines if line.strip().startswith("sequential:"))
    assert re.search(r"30 inputs x 56\.5 passes", seq) and "passes from committed" in seq
    assert any(line.startswith("total ") and "expected on this machine" in line for line in lines)
    assert not (tmp_path / "results" / "sudoku").exists() or not any((tmp_path / "results" / "sudoku").iterdir())


def test_a_spec_without_committed_results_is_piloted(tmp_path):
    lines = plan_lines(run_cli("plan", "--tasks", "sudoku", "--strategies", "topk:k=4", "--limit", "30",
                               "--out", tmp_path / "results"))
    line = next(line for line in lines if line.strip().startswith("topk:k=4:"))
    assert f"passes from pilot of {PILOT_INPUTS}" in line


def test_a_complete_run_costs_its_verification(tmp_path):
    out = tmp_path / "results"
    assert run_cli("run", "--tasks", "sudoku", "--strategies", "topk:k=3", "--limit", "6", "--out", out).returncode == 0
    lines = plan_lines(run_cli("plan", "--tasks", "sudoku", "--strategies", "topk:k=3", "--limit", "6",
                               "--verify", "2", "--out", out))
    assert any("topk:k=3 (verify): 2 inputs" in line for line in lines)


def test_run_prints_its_plan_first_and_planned_against_taken_after(tmp_path):
    done = run_cli("run", "--tasks", "sudoku", "--strategies", "topk:k=3", "--limit", "6", "--out", tmp_path / "r")
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert err.index("plan for sudoku seed 0: 1 runs") < err.index("sudoku: 6 inputs")
    assert re.search(r"sudoku seed 0: planned \d+ s, took \d+ s", err)


def test_bad_plan_arguments_are_one_line_errors(tmp_path):
    done = run_cli("plan", "--tasks", "sudoku", "--strategies", "topk:k=0x", "--out", tmp_path / "r")
    assert done.returncode == 2 and done.stderr.startswith("error: ") and "Traceback" not in done.stderr


@pytest.mark.parametrize("task", ["sudoku", "protein"])
def test_committed_references_price_sequential_near_its_forward_cost(task):
    """Sequential spends almost nothing besides its forward passes: its seconds per row-pass is
    the unit every other strategy's cost factor is measured in."""
    from bench.registry import make_task
    model = make_task(task).load_model()
    references = committed_references(task, model.checkpoint_id)
    sequential = next(s for spec, s in references.items() if spec.startswith("sequential"))
    assert row_passes(sequential) >= sequential["n_samples"]
    assert seconds_per_row_pass(sequential) > 0


def test_a_one_pass_run_whose_pass_was_shared_prices_no_family():
    """A one-pass run that took its only pass from the shared first pass spent about nothing: as the
    cheapest family it would make every other family's factor hundreds of times too large."""
    from bench.run.plan import family_factors

    def summary(spec, passes, seconds, shared):
        return {"config": {"strategy_spec": spec}, "n_samples": 48, "wall_seconds": seconds,
                "first_pass_shared_rows": shared, "metrics": [{"name": "passes", "value": passes}]}

    references = {"sequential": summary("sequential", 87.0, 200.0, 48),
                  "topk:k=100": summary("topk:k=100", 1.0, 0.01, 48),
                  "eb:gamma=1": summary("eb:gamma=1", 18.0, 60.0, 48)}
    factors = family_factors(references)
    assert "topk" not in factors and factors["sequential"] == 1.0 and 1.0 < factors["eb"] < 2.0
