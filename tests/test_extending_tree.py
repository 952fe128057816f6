"""Issue 28, item 7: extending is what docs/extending.md says. A new strategy is one file in
strategies/ and a new task one folder in tasks/: dropped into a copy of the tree with no other
edit, `bench list`, `bench run`, `bench report` and the test modules that enumerate every
registered strategy take them in."""
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT

RANDOM_ORDER = textwrap.dedent('''
    """Reveal k masked positions chosen uniformly at random (the vanilla random order)."""
    from dataclasses import dataclass
    from typing import ClassVar

    import torch

    from bench.core import Strategy
    from bench.registry import register_strategy


    @register_strategy
    @dataclass
    class RandomOrder(Strategy):
        """Reveal k masked positions chosen uniformly at random."""
        name: ClassVar[str] = "random_order_test"
        k: int = 1

        def samples(self):
            return True

        def select(self, state):
            scores = torch.as_tensor(state.uniform("order")).float().masked_fill(~state.masked, -1.0)
            rank = scores.argsort(1, descending=True).argsort(1)
            return state.masked & (rank < self.k)
''')


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy of the tracked tree with a new strategy file and a new task folder (the toy task,
    renamed), and nothing else edited."""
    copy = tmp_path_factory.mktemp("tree") / "unmask-bench"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file() and not name.startswith(("reports/", "baselines/")):
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    (copy / "strategies" / "random_order_test.py").write_text(RANDOM_ORDER)
    (copy / "tasks" / "toy_test").mkdir()
    (copy / "tasks" / "toy_test" / "__init__.py").write_text('"""A task folder added to the tree."""\n')
    task = (ROOT / "tests" / "toy" / "task.py").read_text().replace('name = "toy"', 'name = "toy_test"')
    (copy / "tasks" / "toy_test" / "task.py").write_text(task)
    return copy


def in_tree(tree, *args, timeout=600):
    return subprocess.run([sys.executable, *map(str, args)], cwd=tree, capture_output=True, text=True, timeout=timeout)


def test_list_run_and_report_take_the_new_strategy_and_task(tree):
    listed = in_tree(tree, "-m", "bench", "list")
    assert listed.returncode == 0, listed.stderr
    assert "random_order_test" in listed.stdout and "toy_test " in listed.stdout
    run = in_tree(tree, "-m", "bench", "run", "--tasks", "toy_test", "--strategies",
                  "sequential,random_order_test,random_order_test:k=3", "--out", tree / "scratch" / "results")
    assert run.returncode == 0, run.stderr
    assert "random_order_test:k=3" in run.stdout
    report = in_tree(tree, "-m", "bench", "report", "--results", tree / "scratch" / "results")
    assert report.returncode == 0, report.stderr
    written = tree / "scratch" / "results" / "reports"
    assert (written / "pareto_toy_test.png").exists() and (written / "table_toy_test.md").exists()
    # a task without verdict settings gets the defaults: its budget table is drawn, not left out
    assert (written / "budgets_toy_test.md").exists()


def test_the_modules_that_enumerate_strategies_take_the_new_one(tree):
    collected = in_tree(tree, "-m", "pytest", "-q", "--collect-only", "-m", "slow or not slow",
                        "-p", "no:cacheprovider", "tests/test_overhead.py", "tests/test_benchmarks.py")
    assert collected.returncode == 0, collected.stdout[-2000:]
    assert "random_order_test" in collected.stdout
    ran = in_tree(tree, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_presets.py",
                  "tests/test_benchmarks.py", "-k", "random_order_test or presets")
    assert ran.returncode == 0, ran.stdout[-3000:]
