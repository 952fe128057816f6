"""`bench run` (``--executor local``): every check before any decoding (bench.run.checks), then each
task's runs decoded in this process, one run cell (bench.run.cell) after another. Each task's
plan (bench.run.plan) is printed before its runs, and the time planned against the time taken after.
"""
import contextlib
import sys
import time

from bench.device import model_placement, placement
from bench.errors import BenchError
from bench.presets import get_preset, plan
from bench.run.cell import (
    TaskRuns,
    command_line,
    complete_run,
    decode_run,
    find_or_lock,
    print_complete,
    print_task_end,
    print_task_start,
)
from bench.run.checks import (
    check_arguments,
    check_executor,
    check_out_dir,
    check_split_data,
    make_tasks,
    prepare,
    set_temperature,
)
from bench.run.plan import minutes, print_whole_plan
from bench.run.verify import draws_randomly, verify_run, verify_runs


def load_tasks(args, where=None):
    """(task, its plan, its model, {seed: inputs}) of every task of the command, after every check
    (specs, --out, data, models, helpers); each plan's strategies bound to its model, placed on
    ``where``. ``args`` is only read: what it resolves to (specs, --out) is in the plans."""
    plans = plan(args.preset, args.tasks, args.strategies, args.limit, args.seed, out=args.out, model=args.model)
    check_split_data(get_preset(args.preset or "default"), ",".join(p.task for p in plans), args.data)
    tasks = set_temperature(make_tasks(",".join(p.task for p in plans), args.data, args.model,
                                       {p.task: p.data for p in plans}), getattr(args, "temperature", None))
    for task_plan in plans:
        check_out_dir(task_plan.out, [task_plan.task])
    loaded = [prepare(task, p, args.model, where) for task, p in zip(tasks, plans)]
    for task, (_, eval_sets) in zip(tasks, loaded):
        check_limit(task, args.limit, eval_sets)
    return [(task, p, model, eval_sets) for task, p, (model, eval_sets) in zip(tasks, plans, loaded)]


def check_limit(task, limit, eval_sets):
    """--limit beyond the inputs a task's data holds is a one-line error saying how many there are
    (docs/running.md): a run named "--limit 100000" that decoded 1,000 would be misnamed, and the
    whole split of a slow task is rarely what was meant."""
    held = min(len(eval_set) for eval_set in eval_sets.values())
    if limit is not None and limit > held:
        raise BenchError(f"--limit {limit}: task {task.name}'s data holds {held} inputs; "
                         f"give --limit {held} or less (or leave it out for all {held})")


def prepare_runs(args):
    """Every TaskRuns of the command, after every check (numbers, specs, --out, data, models,
    helpers): nothing is decoded before all of it passed."""
    check_arguments(args)
    check_executor(args)
    runs = []
    for task, task_plan, model, eval_sets in load_tasks(args, placement(args.device, args.dtype)):
        for seed in task_plan.seeds:
            chosen = seed_strategies(task, task_plan, seed)
            if chosen:   # a seed under which nothing draws would print a plan, a header and an empty table
                runs.append(TaskRuns(task, model, eval_sets[seed], chosen, seed, task_plan.limit, task_plan.out,
                                     task_plan.data))
    return runs


def seed_strategies(task, task_plan, seed):
    """The (label, strategy)s of the plan that run under ``seed``: all under its first seed, under
    the others only those that draw random numbers (one that draws nothing would repeat its first
    seed's records)."""
    return [s for s in task_plan.strategies if seed == task_plan.seeds[0] or draws_randomly(task, s[1])]


def run_one(run):
    """Run (or resume, or find complete and verify) one run cell made outside `bench run` (its
    strategy not bound yet); returns its summary."""
    run.strategy.bind(run.task, run.model)  # strategies with trained helpers or probing load them here
    return run_bound(run)


def run_bound(run):
    """``run_one`` for a run whose strategy is bound."""
    with contextlib.ExitStack() as locks:
        found = find_or_lock(run, locks)
        if found is None:
            return decode_run(run)
    print_complete(run, verify_run(run, found))
    return found[0]


def verify_complete(runs):
    """{id(run): summary} of the ``runs`` (bound) found complete, each verified and its line
    printed: all of them first, together (bench.run.verify.verify_runs: their few inputs each in
    shared forward calls), before any other run decodes."""
    complete = [(run, found) for run in runs if (found := complete_run(run, say=False)) is not None]
    for run, note in verify_runs(complete):
        print_complete(run, note)
    return {id(run): found[0] for run, found in complete}


def run_tasks(args):
    """Run a preset (``default`` unless --preset) with the command line's overrides, in this
    process (``--executor local``; bench.run.ray_executor runs ``--executor ray``)."""
    every_task = prepare_runs(args)
    planned = print_whole_plan(every_task, args)     # the whole plan before any run
    start_all = time.perf_counter()
    for task_runs, task_planned in zip(every_task, planned):
        start = time.perf_counter()
        run_task(task_runs, args)
        print(f"{task_runs.task.name} seed {task_runs.seed}: planned {minutes(task_planned)}, took "
              f"{minutes(time.perf_counter() - start)}", file=sys.stderr)
    if len(every_task) > 1:
        print(f"all tasks: planned {minutes(sum(planned))}, took {minutes(time.perf_counter() - start_all)}",
              file=sys.stderr)
    return 0


def run_task(task_runs, args):
    """The runs of one task and seed: those found complete verified together, then the others
    decoded (or found complete by then, another process having made them, and verified alone)."""
    where = model_placement(task_runs.model)
    print_task_start(task_runs, where)
    runs = task_runs.runs(args)   # their strategies bound when the task was loaded (bench.run.checks.prepare)
    for run in runs:
        run.command = command_line(run, args.data or task_runs.data, args.model, where)
    verified = verify_complete(runs)
    print_task_end(task_runs, [verified.get(id(run)) or run_bound(run) for run in runs], task_runs.out)
