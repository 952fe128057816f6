"""Issue 49, item 3: a strategy spec is parsed once and its strategy bound once per task and model.

``bench.presets.plan`` gives each task a TaskPlan holding its runs as (label, Strategy) pairs and
the resolved --out; ``bench.run.checks.prepare`` binds each strategy to the task's model, and the
executors use those objects (only a Ray worker parses the one spec its cell names). The command
line's arguments are only read."""
import argparse

import pytest

from bench.cli import dispatch, parse
from bench.core import Strategy
from bench.presets import VALIDATION_OUT, plan
from bench.registry import STRATEGIES, canonical, load_plugins
from bench.run.local import prepare_runs
from conftest import run_cli


class StrategySpy:
    """Every strategy constructed and every bind call while a test runs. Each method is wrapped
    where a class defines it, so a call goes through one wrapper (no bind calls super().bind).
    The instances are kept, so that their ids are never reused."""

    def __init__(self, monkeypatch):
        self.built, self.bound = [], []
        load_plugins()
        for cls in {Strategy, *STRATEGIES.values()}:
            for method, calls in (("__init__", self.built), ("bind", self.bound)):
                if method in vars(cls):
                    monkeypatch.setattr(cls, method, recorded(vars(cls)[method], calls))

    def binds_per_strategy(self):
        """How often each strategy constructed was bound."""
        return [sum(bound is strategy for bound in self.bound) for strategy in self.built]


def recorded(method, calls):
    def record(self, *args, **kwargs):
        calls.append(self)
        return method(self, *args, **kwargs)
    return record


class ReadOnlyArgs(argparse.Namespace):
    """An argparse namespace that fails the test where anything is assigned to it."""

    def __init__(self, **given):
        for name, value in given.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AssertionError(f"args.{name} was assigned {value!r}; the command line's arguments are only read")


def test_a_task_plan_holds_its_runs_parsed_and_its_results_folder():
    (sudoku,) = plan(None, "sudoku", "topk:k=8,sequential", out="elsewhere")
    assert sudoku.specs == ["topk:k=8", "sequential"]   # the labels, as written
    assert all(isinstance(strategy, Strategy) for _, strategy in sudoku.strategies)
    assert [canonical(strategy) for _, strategy in sudoku.strategies] == ["topk:k=8,order=confidence",
                                                                           "sequential:order=confidence"]
    assert sudoku.out == "elsewhere"
    assert plan("validation", "sudoku", "topk:k=8")[0].out == VALIDATION_OUT   # --out left at its default
    (quick,) = plan("quick", "sudoku")
    assert quick.strategies and all(isinstance(strategy, Strategy) for _, strategy in quick.strategies)


def test_each_task_has_strategies_of_its_own():
    """Binding a strategy loads its task's helpers: two tasks never share one."""
    sudoku, hmm = plan(None, "sudoku,hmm", "topk:k=8")
    assert sudoku.strategies[0][1] is not hmm.strategies[0][1]


def test_a_preset_s_specs_are_parsed_once_and_bound_once(tmp_path, monkeypatch):
    spy = StrategySpy(monkeypatch)
    task_runs = prepare_runs(parse(["run", "--preset", "ci", "--tasks", "hmm", "--limit", "2", "--out", str(tmp_path)]))
    planned = {id(strategy): strategy for runs in task_runs for _, strategy in runs.strategies}
    assert len(planned) > 1
    assert sorted(map(id, spy.built)) == sorted(planned)   # no strategy constructed besides the plan's
    assert spy.binds_per_strategy() == [1] * len(planned)


@pytest.mark.parametrize("argv,seeds", [
    (["--tasks", "sudoku", "--strategies", "topk:k=8"], 1),
    # hmm samples its values, so each of the paper preset's 3 seeds runs the strategy
    (["--preset", "paper", "--tasks", "hmm", "--strategies", "topk:k=8"], 3),
])
def test_bench_run_binds_each_strategy_once_whatever_its_seeds(argv, seeds, tmp_path, monkeypatch):
    spy = StrategySpy(monkeypatch)
    proc = run_cli("run", *argv, "--limit", 2, "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(list(tmp_path.glob("*/topk*.json"))) == seeds
    assert len(spy.built) == 1 and spy.binds_per_strategy() == [1]


@pytest.mark.parametrize("command", ["run", "plan"])
def test_bench_run_and_plan_only_read_their_arguments(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)   # --out left at its default: the validation preset writes into ./validation/
    given = vars(parse([command, "--preset", "validation", "--tasks", "sudoku", "--strategies", "topk:k=8",
                        "--limit", "2"]))
    args = ReadOnlyArgs(**given)
    assert dispatch(args) == 0
    assert vars(args) == given
    written = list((tmp_path / VALIDATION_OUT / "sudoku").glob("topk*.json"))
    assert len(written) == (1 if command == "run" else 0)


def test_a_seed_under_which_no_run_draws_prints_nothing(tmp_path):
    """The paper tier's seeds 1 and 2 run only what draws random numbers: with a deterministic
    strategy alone, they print no plan, no header and no empty table (issue 49 item 4)."""
    proc = run_cli("run", "--preset", "paper", "--tasks", "sudoku", "--strategies", "topk:k=8", "--limit", 2,
                   "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "seed 0" in proc.stderr + proc.stdout
    assert "seed 1" not in proc.stderr + proc.stdout and "seed 2" not in proc.stderr + proc.stdout
