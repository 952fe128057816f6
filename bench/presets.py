"""Named run presets: which tasks, which strategies per task, how many inputs and which seeds.

``python -m bench run`` without ``--strategies`` runs the ``default`` preset's sweep for each
chosen task; ``--preset NAME`` picks another preset; ``--tasks``, ``--strategies``, ``--limit``
and ``--seed`` override the preset's fields.
"""
from dataclasses import dataclass

from bench.errors import BenchError
from bench.registry import TASKS, closest, lookup, split_specs

# THE ONE PLACE TO ADD A STRATEGY TO THE FULL RUN: every registered strategy, per task, over a
# sweep that spans its range (from near-sequential to few passes). The `default` and `paper`
# presets run exactly these lists. New strategies go here, e.g. "mi:gamma=0.1",
# "mi_oracle:gamma=0.3", "learned:...". `python -m bench list` names registered strategies
# that are missing here.
# mi_oracle probes the model ~1,600 times per protein (an hour for 500 on 2 CPU cores), so the
# protein sweep leaves it out; README shows how it is run on the first 100 sequences.
SWEEPS = {
    "sudoku": ["sequential", "topk:k=2", "topk:k=3", "topk:k=5", "topk:k=7", "margin:k=2", "margin:k=5",
               "eb:gamma=0.1", "eb:gamma=0.3", "eb:gamma=1", "threshold:tau=0.9", "threshold:tau=0.7",
               "mi:gamma=0.1", "mi:gamma=0.3", "mi:gamma=0.6", "mi:gamma=1", "mi_oracle:gamma=0.3",
               "learned:T=5,mode=threshold", "learned:T=10,mode=threshold", "learned:T=15,mode=threshold"],
    "protein": ["sequential", "topk:k=4", "topk:k=12", "margin:k=4", "margin:k=12",
                "eb:gamma=0.1", "eb:gamma=0.3", "eb:gamma=1", "eb:gamma=3", "eb:gamma=10",
                "threshold:tau=0.9", "threshold:tau=0.7", "mi:gamma=2", "mi:gamma=6", "mi:gamma=12", "mi:gamma=24",
                "learned:T=5,mode=threshold", "learned:T=10,mode=threshold", "learned:T=15,mode=threshold"],
}


DEFAULT_TASK = "sudoku"   # what `bench run` without --preset or --tasks runs


@dataclass(frozen=True)
class Preset:
    """Tasks with their strategy specs and input limits, and the seeds to run.

    Attributes:
        name: what ``--preset`` calls it.
        about: one line for ``bench list``.
        strategies: task name -> list of strategy specs.
        limits: task name -> number of inputs (None: the full data).
        seeds: every seed the preset runs.
    """
    name: str
    about: str
    strategies: dict
    limits: dict
    seeds: tuple = (0,)


PRESETS = {p.name: p for p in [
    Preset("ci", "small and deterministic: the CI regression gate (baseline in baselines/ci/)",
           strategies={"sudoku": ["sequential", "topk:k=3", "eb:gamma=0.3", "threshold:tau=0.9"],
                       "protein": ["sequential", "topk:k=4", "eb:gamma=1", "threshold:tau=0.7"]},
           limits={"sudoku": 100, "protein": 40}),
    Preset("default", "every strategy's sweep (SWEEPS) on the full data: 1,000 puzzles, 500 proteins",
           strategies=SWEEPS, limits={"sudoku": None, "protein": None}),
    Preset("paper", "the default sweep on the full data with seeds 0, 1, 2 for error bars",
           strategies=SWEEPS, limits={"sudoku": None, "protein": None}, seeds=(0, 1, 2)),
]}


@dataclass(frozen=True)
class TaskPlan:
    """One task of a run: its strategy specs, input limit and seeds."""
    task: str
    specs: list
    limit: int | None
    seeds: tuple


def get_preset(name):
    """The preset called ``name``; a one-line BenchError listing the presets otherwise."""
    if name not in PRESETS:
        raise BenchError(f"unknown preset {name!r}{closest(name, PRESETS)}; available: {', '.join(PRESETS)}")
    return PRESETS[name]


def plan(preset_name=None, tasks=None, strategies=None, limit=None, seed=None):
    """Resolve a preset and command-line overrides into one TaskPlan per task.

    Args:
        preset_name: a key of PRESETS; None means ``default`` (with Sudoku alone unless ``tasks``).
        tasks: comma-separated task names overriding the preset's.
        strategies: comma-separated specs overriding the preset's lists (for every task).
        limit: number of inputs overriding the preset's limits.
        seed: one seed overriding the preset's seeds.

    Returns:
        A list of TaskPlan, in the order the tasks were named.
    """
    preset = get_preset(preset_name or "default")
    names = split_specs(tasks) if tasks else (list(preset.strategies) if preset_name else [DEFAULT_TASK])
    if limit is not None and limit < 1:
        raise BenchError(f"--limit must be at least 1, got {limit}")
    plans = []
    for name in names:
        lookup("task", name, TASKS)
        if strategies is None and name not in preset.strategies:
            raise BenchError(f"preset {preset.name!r} has no strategies for task {name!r}; "
                             f"give --strategies or one of its tasks: {', '.join(preset.strategies)}")
        specs = split_specs(strategies) if strategies else list(preset.strategies[name])
        task_limit = limit if limit is not None else preset.limits.get(name)
        plans.append(TaskPlan(name, specs, task_limit, (seed,) if seed is not None else preset.seeds))
    return plans


def unswept(registered):
    """Registered strategy names that the default sweep of some task leaves out."""
    swept = {spec.partition(":")[0] for specs in SWEEPS.values() for spec in specs}
    return sorted(set(registered) - swept)
