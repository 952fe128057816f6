"""The `list` and `run` commands."""
import argparse
import sys

from bench.errors import BenchError
from bench.presets import PRESETS, plan, unswept
from bench.registry import STRATEGIES, TASKS, lookup, param_help, parse_strategy, split_specs, _load_all
from bench.runner import run_one
from bench.table import render_text


def list_everything():
    _load_all()
    print("tasks:")
    for name, cls in sorted(TASKS.items()):
        print(f"  {name:12s} {cls.__doc__.splitlines()[0]}")
        for option, text in cls.options.items():
            print(f"  {'':12s}   --{option}: {text}")
    print("strategies (name:key=value,...):")
    for name, cls in sorted(STRATEGIES.items()):
        print(f"  {name:12s} {cls.__doc__.splitlines()[0]}")
        print(f"  {'':12s}   {param_help(cls)}")
    print("presets (run --preset NAME):")
    for name, preset in PRESETS.items():
        print(f"  {name:12s} {preset.about}")
    if unswept(STRATEGIES):
        print(f"not in the default sweep (bench/presets.py SWEEPS): {', '.join(unswept(STRATEGIES))}")


def make_tasks(task_names, data, model):
    names = split_specs(task_names)
    if (data or model) and len(names) != 1:
        raise BenchError("--data and --model apply to one task; run one task at a time with them")
    return [lookup("task", name, TASKS)(data=data, model=model) for name in names]


def run_tasks(args):
    """Run a preset (``default`` unless --preset) with the command line's overrides."""
    plans = plan(args.preset, args.tasks, args.strategies, args.limit, args.seed)
    tasks = make_tasks(",".join(p.task for p in plans), args.data, args.model)
    parsed = [[(spec, parse_strategy(spec)) for spec in p.specs] for p in plans]  # all before any work
    for task, task_plan, strategies in zip(tasks, plans, parsed):
        for seed in task_plan.seeds:
            run_task(task, strategies, argparse.Namespace(**{**vars(args), "limit": task_plan.limit, "seed": seed}))
    return 0


def run_task(task, strategies, args):
    model = task.load_model()
    eval_set = task.eval_set(args.limit, args.seed)
    for problem in getattr(task, "problems", lambda: [])():
        print(f"skipped: {problem}", file=sys.stderr)
    print(f"{task.name}: {len(eval_set)} inputs, model {model.checkpoint_id}, seed {args.seed}", file=sys.stderr)
    results = [run_one(task, model, eval_set, strategy, spec, args.seed, args.limit, args.batch_size, args.out)
               for spec, strategy in strategies]
    print(f"\n{task.name} ({len(eval_set)} inputs, seed {args.seed}; 95% bootstrap CIs)")
    print(render_text(results))
    if hasattr(task, "floor"):
        floor = ", ".join(f"{m['name']} {m['value']:.4f}" for m in task.floor())
        print(f"floor (a second reference sample against the first): {floor}")
    print(f"results in {args.out}/{task.name}/")
