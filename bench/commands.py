"""The `list` and `run` commands."""
import sys

from bench.errors import BenchError
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


def make_tasks(task_names, data, model):
    names = split_specs(task_names)
    if (data or model) and len(names) != 1:
        raise BenchError("--data and --model apply to one task; run one task at a time with them")
    return [lookup("task", name, TASKS)(data=data, model=model) for name in names]


def run_tasks(args):
    tasks = make_tasks(args.tasks, args.data, args.model)
    if args.limit is not None and args.limit < 1:
        raise BenchError(f"--limit must be at least 1, got {args.limit}")
    plans = []
    for task in tasks:  # every spec is parsed before any work starts
        specs = split_specs(args.strategies or task.default_strategies)
        plans.append((task, [(spec, parse_strategy(spec)) for spec in specs]))
    for task, strategies in plans:
        run_task(task, strategies, args)
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
