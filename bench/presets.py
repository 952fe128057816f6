"""Named run presets: tiers of work, each task's part of a tier declared by the task itself.

A task's ``presets.py`` (bench.settings) gives its strategy specs and input limit for each tier;
a preset is a tier plus the seeds it runs. ``quick``: every strategy family at one setting on a
few inputs (minutes on 2 cores; docs/running.md); ``default``: what the README's tables and claims are
made from (its cost from an empty folder: docs/running.md); ``paper``: the full grids, with 3
seeds for every run that draws random numbers; ``ci``: the regression gate's small runs;
``validation``: the default specs on each task's validation split (its own inputs, seed and
results folder), where `bench report` makes the choices its claims confirm on the test inputs.
docs/running.md "Presets: tiers of work" gives each one's time, docs/lab.md the measurements.

``python -m bench run`` without ``--strategies`` runs the ``default`` tier for each chosen task;
``--preset NAME`` picks another; ``--tasks``, ``--strategies``, ``--limit`` and ``--seed``
override the preset's fields. A task that declares no specs for a tier (a task folder just
added) runs every registered strategy at its default spec there.
"""
from dataclasses import dataclass

from bench.errors import BenchError
from bench.registry import STRATEGIES, TASKS, canonical, closest, load_plugins, lookup, parse_strategy, split_specs
from bench.run import DEFAULT_OUT
from bench.settings import SPLIT_TIER, all_task_settings, calibrated_specs, task_settings

VALIDATION_OUT = "validation"   # where the validation preset writes unless --out says otherwise
RETRAINED_OUT = "retrained"     # where the retrained preset writes unless --out says otherwise


@dataclass(frozen=True)
class Preset:
    """A tier of work and the seeds it runs.

    Attributes:
        name: what ``--preset`` calls it (and the tier whose specs and limits it takes).
        about: one line for ``bench list``.
        seeds: every seed the preset runs.
        any_task: with --tasks, a task that declares nothing for the tier runs every registered
            strategy (``sweep_of``); without, the preset runs only the tasks that declare it.
        split: ``test`` (the task's own inputs) or ``validation`` (the inputs, seed and limit of
            its declared Validation, and the default tier's specs).
        out: the folder it writes into unless --out says otherwise ("": --out's default), so that
            its runs never mix with the test runs the tables are made from.
    """
    name: str
    about: str
    seeds: tuple = (0,)
    any_task: bool = True
    split: str = "test"
    out: str = ""


PRESETS = {p.name: p for p in [
    Preset("quick", "every strategy family at one setting on a few inputs per task (minutes on 2 cores)"),
    Preset("default", "what the README's tables and claims are made from: each task's default sweep on its full "
                      "data (over an hour on 2 cores from an empty folder: docs/running.md)"),
    # A run that draws nothing (argmax values and a deterministic strategy: most of Sudoku's
    # sweep) runs its first seed only, since the others would repeat its records. `bench report`
    # pools the seeds of a run in its verdicts.
    Preset("paper", "every strategy's full sweep on the full data; 3 seeds for every run that draws random numbers",
           seeds=(0, 1, 2)),
    Preset("ci", "small and deterministic: the CI regression gate (baseline in baselines/ci/)", any_task=False),
    Preset("validation", f"the default specs on each task's validation split, into {VALIDATION_OUT}/: where "
                         f"`bench report` chooses what its claims test", any_task=False, split="validation",
           out=VALIDATION_OUT),
    # A task's helpers (trained networks a strategy reads) retrained under other seeds: the runs that
    # read them, on the test inputs, apart from the tables, where each ablation's claim is checked
    # on every retrained helper (bench.report.retrained).
    Preset("retrained", f"each task's runs on its helpers retrained under other seeds, into {RETRAINED_OUT}/: "
                        f"where `bench report` checks its ablations on every retrained helper", any_task=False,
           out=RETRAINED_OUT),
]}


@dataclass(frozen=True)
class TaskPlan:
    """One task of a run: its strategies, input limit, seeds and results folder.

    ``strategies`` holds a (label, Strategy) per run: the spec as written and the strategy it names,
    parsed once here and bound once to the task's model (bench.run.checks.prepare), so that the
    executors never parse a spec again. Each TaskPlan has strategies of its own: binding one
    loads helpers of its task."""
    task: str
    strategies: tuple
    limit: int | None
    seeds: tuple
    data: str | None = None   # the task's input file (None: its default)
    out: str = DEFAULT_OUT    # the results folder, a preset's own where --out was left at its default

    @property
    def specs(self):
        """The runs' specs, as written."""
        return [label for label, _ in self.strategies]


def get_preset(name):
    """The preset called ``name``; a one-line BenchError listing the presets otherwise."""
    if name not in PRESETS:
        raise BenchError(f"unknown preset {name!r}{closest(name, PRESETS)}; available: {', '.join(PRESETS)}")
    return PRESETS[name]


CALIBRATED_TIERS = ("default", "paper")   # the tiers that run a task's calibrated budget runs


def sweep_of(task_name, tier="default"):
    """The specs tier ``tier`` runs on a task, as written (``sweep_runs``)."""
    return [spec for spec, _ in sweep_runs(task_name, tier)]


def sweep_runs(task_name, tier="default", model=None):
    """(spec, strategy) of each run tier ``tier`` runs on a task (under ``--model model``): what the
    task declares for it (with, in CALIBRATED_TIERS, the runs its budget calibration found), or for
    a task that declares nothing there (a task folder just added) every registered strategy at its
    default spec."""
    settings = task_settings(task_name, model)
    if settings is not None and tier in settings.tiers.specs:
        extra = calibrated_specs(settings) if tier in CALIBRATED_TIERS else []
        return distinct_runs(list(settings.tiers.specs[tier]) + extra)
    load_plugins()
    return named_runs(sorted(STRATEGIES))


def distinct_runs(specs):
    """(spec, strategy) of each run of ``specs`` once, in its first spelling: a calibrated run can
    land on a grid point whose parameters are written in another order, and `bench run` refuses a
    list that names one run twice."""
    load_plugins()
    first = {}
    for spec in specs:
        strategy = parse_strategy(spec)
        first.setdefault(canonical(strategy), (spec, strategy))
    return list(first.values())


def named_runs(specs):
    """(spec, strategy) per spec named on the command line; a one-line error where two specs name
    the same run (a preset's duplicates are dropped instead: ``distinct_runs``)."""
    parsed, seen = [], {}
    for spec in specs:
        strategy = parse_strategy(spec)
        if canonical(strategy) in seen:
            raise BenchError(f"strategies {seen[canonical(strategy)]!r} and {spec!r} are the same run "
                             f"({canonical(strategy)}); name it once")
        seen[canonical(strategy)] = spec
        parsed.append((spec, strategy))
    return parsed


def results_folder(preset_name, out):
    """Where a run writes: ``out`` (--out), or where that is left at its default, the preset's own
    folder (validation, retrained): their runs never mix with the test runs the claims are made from."""
    own = get_preset(preset_name).out if preset_name else ""
    return own if own and out == DEFAULT_OUT else out


def preset_tasks(preset):
    """The tasks a preset runs without --tasks: those that declare specs for its tier (every
    registered task for a tier with ``any_task``), the headline task first, then in the order
    their settings were declared (a task whose class says ``in_presets = False`` only where it
    declares specs)."""
    settings = all_task_settings()
    if preset.split == "validation":
        return sorted((name for name, s in settings.items() if s.tiers.validation),
                      key=lambda name: not settings[name].tiers.headline)
    declared = sorted((name for name, s in settings.items() if preset.name in s.tiers.specs),
                      key=lambda name: not settings[name].tiers.headline)
    if not preset.any_task:
        return declared
    load_plugins()
    return declared + sorted(name for name in set(TASKS) - set(declared) if TASKS[name].in_presets)


def headline_tasks():
    """What `bench run` without --preset or --tasks runs: the tasks whose settings say headline."""
    chosen = [name for name, s in all_task_settings().items() if s.tiers.headline]
    if chosen:
        return chosen
    load_plugins()
    return sorted(TASKS)


def plan(preset_name=None, tasks=None, strategies=None, limit=None, seed=None, *, out=DEFAULT_OUT, model=None):
    """Resolve a preset and command-line overrides into one TaskPlan per task.

    Args:
        preset_name: a key of PRESETS; None means ``default`` (with the headline task alone unless ``tasks``).
        tasks: comma-separated task names overriding the preset's.
        strategies: comma-separated specs overriding the preset's lists (for every task).
        limit: number of inputs overriding the preset's limits.
        seed: one seed overriding the preset's seeds (``strategies`` without a preset: that seed,
            default 0, never a tier's seeds).
        out: --out (the preset's own folder replaces its default: ``results_folder``).
        model: --model; a task that declares tiers for it (``register_model_settings``) runs those.

    Returns:
        A list of TaskPlan, in the order the tasks were named.
    """
    preset = get_preset(preset_name or "default")
    names = split_specs(tasks) if tasks else (preset_tasks(preset) if preset_name else headline_tasks())
    if limit is not None and limit < 1:
        raise BenchError(f"--limit must be at least 1, got {limit}")
    plans, folder = [], results_folder(preset_name, out)
    for name in names:
        lookup("task", name, TASKS)
        settings = task_settings(name, model)
        if preset.split == "validation":
            plans.append(validation_plan(name, settings, strategies, limit, seed, out=folder, model=model))
            continue
        declared = settings is not None and preset.name in settings.tiers.specs
        if strategies is None and not declared and not preset.any_task:
            raise BenchError(f"preset {preset.name!r} has no strategies for task {name!r}; "
                             f"give --strategies or one of its tasks: {', '.join(preset_tasks(preset))}")
        # parsed per task: a strategy bound to one task's model holds that task's helpers
        runs = named_runs(split_specs(strategies)) if strategies else sweep_runs(name, preset.name, model)
        task_limit = limit if limit is not None else (settings.tiers.limits.get(preset.name) if settings else None)
        seeds = (seed,) if seed is not None else (settings.tiers.seeds.get(preset.name, preset.seeds) if settings
                                                  else preset.seeds)
        if strategies and preset_name is None:   # runs named on the command line: the seed asked for, 0 by default
            seeds = (seed if seed is not None else 0,)
        plans.append(TaskPlan(name, tuple(runs), task_limit, seeds, out=folder))
    return plans


def validation_plan(name, settings, strategies=None, limit=None, seed=None, *, out=VALIDATION_OUT, model=None):
    """The TaskPlan of task ``name`` on its validation split: its default specs (or ``strategies``)
    on its Validation's data, limit and seed (the arguments override the last two), into ``out``."""
    split = settings and settings.tiers.validation
    if not split:
        with_split = [n for n, s in all_task_settings().items() if s.tiers.validation]
        raise BenchError(f"task {name!r} declares no validation split; tasks with one: "
                         f"{', '.join(with_split) or 'none'}")
    runs = named_runs(split_specs(strategies)) if strategies else sweep_runs(name, SPLIT_TIER, model)
    return TaskPlan(name, tuple(runs), limit if limit is not None else split.limit,
                    (seed,) if seed is not None else (split.seed,), split.data, out)


def unswept(registered, tier="paper"):
    """Registered strategy names that no task's ``tier`` specs run."""
    swept = {spec.partition(":")[0] for s in all_task_settings().values() for spec in s.tiers.specs.get(tier, ())}
    return sorted(set(registered) - swept)
