"""Issue 28, checked registration: a second definition of a registered name, a strategy that is
not a Strategy or not a dataclass, or a class without its own name, is refused at import in one
line naming both places; the same definition imported again is harmless."""
import importlib
import sys
import textwrap
from dataclasses import dataclass

import pytest

from bench.core import Strategy, Task
from bench.errors import BenchError
from bench.registry import STRATEGIES, TASKS, load_plugins, register_command, register_strategy, register_task
from conftest import ROOT


def test_a_second_module_registering_a_shipped_name_is_refused_naming_both():
    load_plugins()

    @dataclass
    class TopK(Strategy):
        name = "topk"

    with pytest.raises(BenchError, match=r"strategy 'topk' is registered twice: by strategies\.topk\.TopK and by "
                                         r"test_registry_checks\..*TopK"):
        register_strategy(TopK)
    assert STRATEGIES["topk"].__module__ == "strategies.topk"


def test_a_task_name_taken_twice_is_refused():
    load_plugins()

    class Other(Task):
        name = "sudoku"

    with pytest.raises(BenchError, match="task 'sudoku' is registered twice"):
        register_task(Other)
    assert TASKS["sudoku"].__module__ == "tasks.sudoku.task"


def test_a_command_name_taken_twice_is_refused():
    def first(args):
        return 0

    def second(args):
        return 0

    register_command("twice-test", "x", lambda parser: None)(first)
    with pytest.raises(BenchError, match="command 'twice-test' is registered twice"):
        register_command("twice-test", "x", lambda parser: None)(second)


def test_a_strategy_that_is_not_a_dataclass_is_refused():
    class Plain(Strategy):
        name = "plain-test"

    with pytest.raises(BenchError, match="must be a dataclass"):
        register_strategy(Plain)


@pytest.mark.parametrize("base", [object, Task])
def test_a_strategy_of_another_base_is_refused(base):
    @dataclass
    class Wrong(base):
        name = "wrong-test"

    with pytest.raises(BenchError, match=r"must subclass bench\.core\.Strategy"):
        register_strategy(Wrong)


def test_a_class_without_a_name_of_its_own_is_refused():
    @dataclass
    class Nameless(Strategy):
        pass

    with pytest.raises(BenchError, match="needs a class attribute name"):
        register_strategy(Nameless)


def test_the_same_module_imported_again_registers_itself_again():
    load_plugins()
    importlib.reload(sys.modules["strategies.topk"])
    assert STRATEGIES["topk"].__module__ == "strategies.topk"


def test_a_duplicate_plugin_is_a_one_line_error_at_the_command_line(tmp_path):
    (tmp_path / "dupe_plugin.py").write_text(textwrap.dedent('''
        from dataclasses import dataclass
        from bench.core import Strategy
        from bench.registry import register_strategy

        @register_strategy
        @dataclass
        class Mine(Strategy):
            name = "topk"
    '''))
    import os
    import subprocess
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "UNMASK_BENCH_PLUGINS": "dupe_plugin"}
    done = subprocess.run([sys.executable, "-m", "bench", "list"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: strategy 'topk' is registered twice: by ")
    assert "strategies.topk.TopK" in lines[0] and "dupe_plugin.Mine" in lines[0]
