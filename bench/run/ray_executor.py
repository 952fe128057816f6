"""`bench run --executor ray`: runs cut into cells, the cells run as Ray tasks, the records merged.

A cell is one shard of one run: (task, strategy spec, seed) x a contiguous range of batches
(``--shards N`` cuts each run's batches into N ranges). The driver (this process) checks
everything the local executor checks, on the CPU, before any work: data, models (one forward
pass), helpers, the output folder. Then, for each run that is not complete, it holds the run's
lock (``bench.run.cell.cell_lock``), gathers the batches earlier attempts finished into the run's
``.partial.jsonl`` and sends the batches still missing out as cells. Each cell decodes its
batches through ``bench.run.cell.decode_batches`` (the local executor's code: the same batches, the same
random numbers) into a shard file of its own (``NAME.shard-A-B.partial.jsonl``), so a retried or
rerun cell skips the batches it already wrote. Once a run's cells are done the driver merges
their records into the partial file and writes the run's ``.jsonl`` and summary exactly as
``bench.run.cell.decode_run`` does for one process: the records are those of ``--executor local`` (only
each batch's wall time differs). Runs found complete are verified (``--verify``) by a cell too,
one per run, on the device their results came from (the local executor verifies a task's
complete runs together in shared forward calls, bench.run.verify.verify_runs; here each cell is
a process of its own, and cells run in parallel).

Resources: one GPU (and one CPU) per cell when the device is cuda, else one CPU per cell with one
torch thread. A worker that dies is replaced and its cell retried (``MAX_RETRIES``). Workers
need the project importable (the same install on every node) and the results folder on a file
system they share with the driver; each cell works in the driver's current folder.
"""
import contextlib
import json
import os
import sys
from pathlib import Path

from bench.allocator import keep_freed_memory
from bench.device import Placement, check_device_text, model_placement, place, placement, resolve_dtype
from bench.errors import BenchError
from bench.models import load_model
from bench.registry import make_task, parse_strategy
from bench.results import append_batch, records_path, run_id, run_records
from bench.run.cell import (
    Run,
    TaskRuns,
    command_line,
    completed_batches,
    decode_batches,
    decode_run,
    done_rows,
    find_or_lock,
    print_complete,
    print_task_end,
    print_task_start,
    remake_command,
)
from bench.run.checks import check_arguments, check_executor
from bench.run.local import load_tasks, seed_strategies
from bench.run.verify import verify_run

MAX_RETRIES = 3   # a cell whose worker dies is run again this many times
SHARD_GLOB = ".shard-*.partial.jsonl"


# --- the cells' side ------------------------------------------------------------------------------

LOADED = {}   # per worker process: (task, data, model, device, dtype) -> (task, placed model)


def worker_run(cell):
    """The Run of a cell (its strategy bound), loading the task and model once per worker
    process. The config must be the driver's: a node with other code, data or weights is an
    error, not a silent difference."""
    key = (cell["task"], cell["data"], cell["model"], cell["device"], cell["dtype"])
    if key not in LOADED:
        task = make_task(cell["task"], data=cell["data"], model=cell["task_model"])
        LOADED[key] = task, place(load_model(task, cell["model"]), Placement(cell["device"], cell["dtype"]))
    task, model = LOADED[key]
    eval_set = task.eval_set(cell["limit"], cell["seed"])
    strategy = parse_strategy(cell["spec"])
    strategy.bind(task, model)
    run = Run(task, model, eval_set, strategy, cell["label"], cell["seed"], cell["limit"],
              batch_size=cell["batch_size"], out=cell["out"], verify=cell.get("verify", 0))
    config = run.config
    if run_id(config) != run_id(cell["config"]):
        differ = sorted(k for k in set(config) | set(cell["config"]) if config.get(k) != cell["config"].get(k))
        raise BenchError(f"{cell['label']}: this worker's run config differs from the driver's in "
                         f"{', '.join(differ)} (another checkout, data or weights on this node?)")
    return run


def run_cell(cell):
    """Run one cell in a Ray worker: ('done', what the device was), ('verified', note) or
    ('error', one line)."""
    os.chdir(cell["cwd"])
    keep_freed_memory()        # as the bench command does for itself
    import torch
    torch.set_num_threads(cell["threads"])
    try:
        run = worker_run(cell)
        if cell["kind"] == "verify":
            summary = json.loads(cell["summary"])
            found = summary, run_records(summary, records_path(cell["summary_path"], summary))
            return "verified", verify_run(run, found, cell["remake"])
        decode_batches(run, Path(cell["partial"]), plan=cell["batches"])
        return "done", model_placement(run.model).describe()
    except BenchError as err:
        return "error", str(err)


# --- the driver's side ------------------------------------------------------------------------------

def import_ray():
    try:
        import ray
    except ImportError:
        raise BenchError("--executor ray needs Ray: pip install -e '.[ray]' (or pip install 'ray[default]')") from None
    return ray


def start_ray(ray, address):
    """Join ``address`` (or $RAY_ADDRESS), or start a local Ray instance; an instance this process
    started already (a test's ray.init) is used as it is."""
    import logging
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS")
    env = {"TQDM_DISABLE": "1"}   # the driver reports progress; workers' bars would interleave
    for name in ("UNMASK_BENCH_PLUGINS", "UNMASK_BENCH_CACHE", "PYTHONPATH"):
        if os.environ.get(name):
            env[name] = os.pathsep.join(str(Path(p).resolve()) for p in os.environ[name].split(os.pathsep)) \
                if name == "PYTHONPATH" else os.environ[name]
    try:
        ray.init(address=address, include_dashboard=False, logging_level=logging.ERROR,
                 runtime_env={"env_vars": env})
    except Exception as err:  # no cluster at the address, a version mismatch, ...
        raise BenchError(f"--executor ray: cannot start or join Ray at {address or 'a new local instance'} "
                         f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})") from None


def cluster_gpus(ray):
    return int(ray.cluster_resources().get("GPU", 0))


def ray_placement(args, ray):
    """The placement of every cell: --device against the cluster's GPUs (Ray hands each cell its
    own GPU, so a cell's device is ``cuda``, never ``cuda:N``)."""
    if (args.device or "").strip().lower().startswith("cuda:"):
        raise BenchError(f"--device {args.device}: with --executor ray name --device cuda (or auto); "
                         f"Ray gives each cell a GPU of its own")
    gpus = cluster_gpus(ray)
    if not gpus and (args.device or "").strip().lower() == "cuda":
        raise BenchError("--device cuda: the Ray cluster has no GPUs (ray.cluster_resources()); "
                         "use --device cpu or auto")
    return placement(args.device, args.dtype, gpus=gpus)


def shard_ranges(todo, shards):
    """``todo`` (batches, each a list of eval-set rows, in order) cut into at most ``shards``
    contiguous, non-empty runs."""
    count = min(shards, len(todo))
    return [todo[i * len(todo) // count:(i + 1) * len(todo) // count] for i in range(count)]


def shard_path(partial_path, batches):
    return partial_path.with_name(partial_path.name.replace(".partial.jsonl", "")
                                  + f".shard-{batches[0][0]}-{batches[-1][0]}.partial.jsonl")


def gather_shards(run):
    """Merge the finished batches of the run's shard files into its partial file (each batch line
    checked as the local executor checks its own), then remove the shard files; returns the
    finished batches ({first input: records})."""
    partial_path = run.paths[2]
    done = completed_batches(run, partial_path)
    rows = set(done_rows(done))
    stem = partial_path.name.replace(".partial.jsonl", "")
    for shard in sorted(partial_path.parent.glob(stem + SHARD_GLOB)):
        for first, records in sorted(completed_batches(run, shard).items()):
            batch_rows = {r["index"] for r in records}
            if not rows & batch_rows:   # a batch overlapping one already gathered is decoded again
                append_batch(partial_path, run_id(run.config), records)
                done[first], rows = records, rows | batch_rows
        shard.unlink()
    return done


class RayRun:
    """The driver's side of one run cell: the Run, its cells in flight and what they gave."""

    def __init__(self, run):
        self.run = run
        self.pending = []    # (cell, ObjectRef) of its cells in flight
        self.found = None    # (summary, records) when complete
        self.device = None   # what its cells ran on


class AsRun:
    """The driver's (CPU) copy of a model, standing for the cells' model in a summary: the
    placement its cells ran on, every other attribute the model's."""

    def __init__(self, model, where):
        self.model, self.placement = model, where

    def __getattr__(self, name):
        if name in ("model", "placement"):
            raise AttributeError(name)
        return getattr(self.model, name)


class Reported(Placement):
    """A Placement whose description is what a cell reported (the driver may have no GPU)."""

    def __init__(self, where, device):
        super().__init__(where.device, where.dtype)
        object.__setattr__(self, "reported", device)

    def describe(self):
        return self.reported or super().describe()


def base_cell(run, args, where, cwd):
    """What every cell of ``run`` (a Run) carries to its worker."""
    return {"task": run.task.name, "data": args.data, "model": args.model,
            "task_model": None if getattr(run.task, "model_spec", None) else args.model,
            "device": where.kind, "dtype": where.dtype, "out": run.out,
            "limit": run.limit, "seed": run.seed, "batch_size": run.batch_size, "spec": run.label,
            "label": run.label, "config": run.config, "cwd": cwd, "threads": 1}


class Driver:
    """Submits cells, holds the runs' locks while their cells run, and finishes the runs."""

    def __init__(self, ray, args, where):
        self.ray, self.args, self.where = ray, args, where
        self.cwd = os.getcwd()
        resources = {"num_gpus": 1, "num_cpus": 1} if where.kind == "cuda" else {"num_cpus": 1}
        self.remote = ray.remote(max_retries=MAX_RETRIES, **resources)(run_cell)
        self.locks = contextlib.ExitStack()

    def submit(self, ray_run, cell):
        ray_run.pending.append((cell, self.remote.remote(cell)))

    def start(self, ray_run):
        """Send out the cells of a run: one verify cell if it is complete, else its missing shards
        (its lock held until the command ends)."""
        run = ray_run.run
        ray_run.found = find_or_lock(run, self.locks)
        if ray_run.found is None:
            done = gather_shards(run)
            todo = [rows.tolist() for rows in run.batch_rows(done_rows(done))]
            for batches in shard_ranges(todo, self.args.shards):
                cell = {**base_cell(run, self.args, self.where, self.cwd), "kind": "decode", "batches": batches,
                        "partial": str(shard_path(run.paths[2].resolve(), batches))}
                self.submit(ray_run, cell)
        elif run.verify:
            cell = {**base_cell(run, self.args, self.where, self.cwd), "kind": "verify", "verify": run.verify,
                    "summary_path": str(run.paths[0].resolve()), "summary": json.dumps(ray_run.found[0]),
                    "remake": remake_command(run)}
            self.submit(ray_run, cell)
        else:
            print_complete(run, "not verified (--verify 0)")

    def result(self, ray_run, ref):
        """(status, value) of one cell; a one-line error where it failed."""
        try:
            status, value = self.ray.get(ref)
        except self.ray.exceptions.RayError as err:   # a worker died more often than MAX_RETRIES, ...
            raise BenchError(f"{ray_run.run.label}: a Ray cell failed ({type(err).__name__}: "
                             f"{str(err).strip().splitlines()[0][:160] if str(err).strip() else ''}); "
                             f"finished batches are kept: rerun the same command to resume") from None
        if status == "error":
            raise BenchError(value)
        return status, value

    def finish(self, ray_run):
        """Wait for the run's cells; merge and write it, or print its verification."""
        run = ray_run.run
        for cell, ref in ray_run.pending:
            status, value = self.result(ray_run, ref)
            if status == "verified":
                print_complete(run, value)
            else:
                ray_run.device = ray_run.device or value
                print(f"  {run.label}: inputs {cell['batches'][0][0]}-{cell['batches'][-1][-1]} done", file=sys.stderr)
        if ray_run.found is None:
            missing = len(run.eval_set) - len(done_rows(gather_shards(run)))
            if missing:   # never decoded here: the driver's model is on the CPU
                raise BenchError(f"{run.label}: {missing} inputs missing after its cells finished; rerun the "
                                 f"same command to decode them")
            summary = decode_run(run, AsRun(run.model, Reported(self.where, ray_run.device)))
            ray_run.found = summary, None
        return ray_run.found[0]


def task_groups(loaded, args, where):
    """(TaskRuns, its RayRuns) of every task and seed of ``loaded`` (bench.run.local.load_tasks)."""
    groups = []
    for task, task_plan, model, eval_sets in loaded:
        for seed in task_plan.seeds:
            chosen = seed_strategies(task, task_plan, seed)
            if not chosen:   # no chosen strategy draws at random: this seed would print a header and an empty table
                continue
            task_runs = TaskRuns(task, model, eval_sets[seed], chosen, seed, task_plan.limit, task_plan.out,
                                 task_plan.data)
            runs = task_runs.runs(args, cells_on=where, share_first_pass=False)
            command = command_line(runs[0], args.data or task_plan.data, args.model, where) if runs else None
            for run in runs:
                run.command = command
            groups.append((task_runs, [RayRun(run) for run in runs]))
    return groups


def run_on_ray(args):
    """`bench run --executor ray`: the local executor's checks, then every run's cells at once."""
    check_arguments(args)
    check_executor(args)
    check_device_text(args.device)   # the GPUs are counted once Ray runs, below
    resolve_dtype(args.dtype)
    if args.shards < 1:
        raise BenchError(f"--shards must be at least 1, got {args.shards}")
    ray = import_ray()
    loaded = load_tasks(args)
    start_ray(ray, args.ray_address)
    where = ray_placement(args, ray)
    driver = Driver(ray, args, where)
    groups = task_groups(loaded, args, where)
    with driver.locks:
        for _, ray_runs in groups:
            for ray_run in ray_runs:
                driver.start(ray_run)
        for task_runs, ray_runs in groups:
            cells = sum(len(r.pending) for r in ray_runs)
            print_task_start(task_runs, where, f"; Ray executor, {cells} cells")
            print_task_end(task_runs, [driver.finish(r) for r in ray_runs], task_runs.out)
    return 0
