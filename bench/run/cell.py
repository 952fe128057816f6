"""One run cell: a strategy on one task's inputs at one seed (``Run``), decoded in batches into a
resumable partial file, or found complete and verified; the lines every executor prints for it.

A run found complete is checked against its records (count and checksum) and a few of its inputs
are decoded again and must reproduce the stored records (``--verify``, bench.run.verify): every
input draws its random numbers from its own stream (bench.streams), so results do not depend on
how the inputs are batched or sharded. A lock per run cell makes a second process running the
same cell wait, then find it complete.
"""
import contextlib
import fcntl
import functools
import shlex
import sys
from dataclasses import dataclass

import torch
from tqdm import tqdm

from bench.core import Task
from bench.decode import Decoding, FirstPasses, decode
from bench.device import Placement, model_placement
from bench.errors import BenchError
from bench.provenance import provenance
from bench.registry import canonical, strategy_params
from bench.results.files import (
    SCHEMA_VERSION,
    append_batch,
    check_records,
    load_json,
    metric_value_problem,
    read_batches,
    records_file_text,
    records_path,
    summary_problem,
    text_digest,
    to_json,
    write_batches,
    write_text_atomic,
)
from bench.results.identity import result_paths, run_id
from bench.results.store import Store
from bench.results.summary import mark_natural, record_metrics, render_text
from bench.run import DEFAULT_BATCH_SIZE, DEFAULT_OUT


@dataclass
class Run:
    """One run cell: ``strategy`` (named ``label`` on the command line) on ``eval_set`` of ``task``
    at ``seed``, decoded ``batch_size`` inputs at a time into ``out``. ``verify``: inputs decoded
    again when it is found complete; ``command``: the `bench run` words (without --strategies)
    that remake it (default: its task, seed, limit, batch size and --out); ``cells_on``: where
    its cells run when that is not where ``model`` is (the Ray driver's model stays on the CPU);
    ``first_passes``: the FirstPasses its task's runs share (None: each batch computes its own);
    ``shared_first_rows``: inputs whose first pass it took from there (its summary records them,
    so the plan prices its seconds per pass without the passes it did not compute)."""
    task: Task
    model: object
    eval_set: object
    strategy: object
    label: str
    seed: int
    limit: int | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    out: str = DEFAULT_OUT
    verify: int = 0
    command: list | None = None
    cells_on: Placement | None = None
    first_passes: FirstPasses | None = None
    shared_first_rows: int = 0
    executor: str = "local"

    @functools.cached_property
    def config(self):
        """Its identity (``run_config``), once its strategy is bound (helpers are part of it)."""
        return run_config(self)

    @functools.cached_property
    def paths(self):
        """(summary .json, records .jsonl, in-progress .partial.jsonl): the files of this run's
        identity under ``out`` where they exist under any name (``Store.locate``), else the names
        a new run gets. Found once: a run's files never move while it runs, and new files take
        the new names."""
        summary_path, records, partial = result_paths(self.out, self.config)
        found = Store(self.out).locate(self.config)
        if found is None or found == summary_path:
            return summary_path, records, partial
        stored, _ = load_json(found)
        return found, records_path(found, stored or {}) or found.with_suffix(".jsonl"), partial

    def batch_rows(self, done=()):
        """The eval-set rows of each batch still to decode: the inputs not in ``done`` (indices),
        in order, ``batch_size`` at a time. A batch is named by its first input."""
        done = set(done)
        todo = [i for i in range(len(self.eval_set)) if i not in done]
        return [torch.tensor(todo[i:i + self.batch_size]) for i in range(0, len(todo), self.batch_size)]

    @property
    def execution(self):
        """How it is executed (recorded in its summary, never part of its identity)."""
        return {"batch_size": self.batch_size, "executor": self.executor, "threads": torch.get_num_threads()}


@dataclass
class TaskRuns:
    """The runs of one task and seed in one `bench run`: its model, inputs, (label, strategy)s
    (bound to the model) and the results folder its plan resolved (bench.presets.TaskPlan.out)."""
    task: Task
    model: object
    eval_set: object
    strategies: list
    seed: int
    limit: int | None
    out: str
    data: str | None = None   # the input file the plan named (a validation split), for the recorded command

    def runs(self, args, cells_on=None, share_first_pass=True):
        """A Run per strategy, with the command line's batch size and --verify; they share one
        FirstPasses (every strategy starts from the same states) unless ``share_first_pass`` is
        False (the Ray executor's cells run in other processes)."""
        shared = FirstPasses(self.model) if share_first_pass else None
        return [Run(self.task, self.model, self.eval_set, strategy, label, self.seed, self.limit,
                    batch_size=args.batch_size, out=self.out, verify=args.verify, cells_on=cells_on,
                    first_passes=shared, executor=getattr(args, "executor", "local"))
                for label, strategy in self.strategies]


def run_config(run):
    """Everything that determines a run's numbers (its identity). A model given as an import spec
    is named by it; a device and dtype other than cpu/float32 are recorded (``bench.device``)."""
    task, strategy = run.task, run.strategy
    options = task.config()
    if getattr(task, "model_spec", None):   # --model package.module:factory
        options = {**options, "model": task.model_spec}
    config = {"task": task.name, "task_options": options, "strategy_spec": canonical(strategy),
              "strategy_params": strategy_params(strategy), "seed": run.seed, "limit": run.limit,
              "data_id": run.eval_set.data_id, "model_id": run.model.checkpoint_id,
              "temperature": task.temperature, **model_placement(run.model).config()}
    if strategy.helper_ids():  # trained helpers (an MI estimator) are part of the identity
        config["helper_ids"] = strategy.helper_ids()
    if run.cells_on is not None:
        config.update(run.cells_on.config())
    return config


# --- decoding -----------------------------------------------------------------------------------

def decode_rows(run, rows):
    """(records of eval-set ``rows`` decoded together, the batch's seconds): the one path by which
    runs decode and by which their checks decode again. Each input draws from its own random
    stream, keyed by the run's seed and its eval-set index (bench.streams), so its record does not
    depend on the rows decoded with it: not on the batch size, nor on the shard."""
    shared_before = run.first_passes.hit_rows if run.first_passes is not None else 0
    result = decode(run.model, run.eval_set.tokens[rows], run.eval_set.masked[rows], run.strategy,
                    run.task.temperature, seed=run.seed, index=rows, first_pass=run.first_passes)
    if run.first_passes is not None:
        run.shared_first_rows += run.first_passes.hit_rows - shared_before
    return rows_records(run, rows, result), result.seconds


def run_decoding(run, rows):
    """A Decoding (bench.decode) of eval-set ``rows`` of ``run``, as ``decode_rows`` decodes them:
    to be advanced with others in one shared forward call a pass (``decode_shared``)."""
    eval_set = run.eval_set
    return Decoding(run.model, eval_set.tokens[rows], eval_set.masked[rows], run.strategy, run.task.temperature,
                    seed=run.seed, index=rows, first_pass=run.first_passes)


def rows_records(run, rows, result):
    """The records of eval-set ``rows`` of ``run`` from their DecodeResult."""
    task, strategy = run.task, run.strategy
    records = task.records(result.tokens, result.passes, rows, run.eval_set)
    if strategy.aux_passes_metric:
        for record, aux in zip(records, result.aux_passes.tolist()):
            record[strategy.aux_passes_metric] = aux
    if result.remasked is not None:   # a re-masking strategy: positions masked again per input
        for record, count in zip(records, result.remasked.tolist()):
            record["remasked"] = count
    if strategy.picks_by_value:   # its summed log q is not log q(x): an exact task reports no KL for it
        for record in records:
            record["picked_by_value"] = True
    if task.temperature > 0:  # sampled values: log q of each sample (an exact task's KL reads it)
        for record, log_q in zip(records, result.log_q.tolist()):
            record["log_q"] = round(log_q, 6)
    for record, order in zip(records, result.reveal_pass.tolist()):   # the reveal order (ARness reads it)
        record["reveal_pass"] = [p if p >= 0 else None for p in order]
    return records


def completed_batches(run, partial_path):
    """({first input: records} of the run's finished batches in ``partial_path``, at whatever batch
    size they were decoded). Lines that are not (another run's, edited, cut by a kill) are named
    on stderr and dropped: the partial file is rewritten to hold just the kept batches, so
    appends start on a clean line."""
    batches, discarded = read_batches(partial_path, run_id(run.config), len(run.eval_set))
    for line in discarded:
        print(f"  {line}", file=sys.stderr)
    if discarded:
        write_batches(partial_path, run_id(run.config), batches)
    return batches


def done_rows(batches):
    """The inputs that finished batches (``completed_batches``) hold."""
    return [r["index"] for records in batches.values() for r in records]


def decode_batches(run, partial_path, plan=None):
    """Decode every batch of ``plan`` (lists of eval-set rows; None: ``run.batch_rows`` of the
    inputs not yet in ``partial_path``) whose first input is not yet there, appending each as it
    finishes. A shard of a run (bench.run.ray_executor) is the plan its driver gave it."""
    done = completed_batches(run, partial_path)
    plan = [rows.tolist() for rows in run.batch_rows(done_rows(done))] if plan is None else plan
    for rows in tqdm([r for r in plan if r[0] not in done], desc=f"{run.task.name} {run.label}", unit="batch",
                     leave=False):
        new, seconds = decode_rows(run, torch.tensor(rows))
        for record in new:
            record.update(batch=rows[0], batch_seconds=seconds)
        append_batch(partial_path, run_id(run.config), new)
        done[rows[0]] = new
    return sorted((r for records in done.values() for r in records), key=lambda r: r["index"])


def model_entry(model, config):
    """The summary's model: its id, path and size, and for a checkpoint fine-tuned from another
    (its meta's ``derived_from``: the base checkpoint's id) that id, so `bench report` can pair its
    runs with the base model's on the same inputs."""
    entry = {"id": model.checkpoint_id, "path": config["task_options"].get("model"), "n_params": model.n_params}
    derived_from = (getattr(model, "meta", None) or {}).get("derived_from")
    if derived_from:
        entry["derived_from"] = derived_from
    return entry


def summarize(run, records, model):
    """The summary of ``run`` from its ``records``; ``model`` is what it names as the run's model."""
    task, config = run.task, run.config
    seconds = sum({r["batch"]: r["batch_seconds"] for r in records}.values())
    floor, natural = task.floor(), task.natural_variation(len(records))
    return {"schema_version": SCHEMA_VERSION, "task": task.name, "strategy": config["strategy_spec"].split(":")[0],
            "label": run.label, "config": config, "execution": run.execution, "headline": task.headline,
            "model": model_entry(model, config),
            "device": model_placement(model).describe(),
            "metrics": mark_natural(task.summarize(records), natural) + record_metrics(records, run.strategy),
            "n_samples": len(records), "wall_seconds": seconds, "first_pass_shared_rows": run.shared_first_rows,
            "extra_figures": list(task.extra_figures),
            "floor": floor, "floor_label": task.floor_label() if floor is not None else None,
            **({"natural_variation": natural} if natural else {}), "provenance": provenance()}


def decode_run(run, model=None):
    """Decode a run (resuming its partial file) and write its records and summary; the summary
    holds the record count and the records' checksum. ``model``: what the summary names as the
    run's model (default ``run.model``; the Ray driver names the cells' placement)."""
    summary_path, records_path, partial_path = run.paths
    records = decode_batches(run, partial_path)
    text = records_file_text(run.config, records)   # its header names the run (bench.results)
    summary = summarize(run, records, model or run.model)
    summary.update(records_file=records_path.name, records_sha256=text_digest(text))
    problem = next(filter(None, map(metric_value_problem, summary["metrics"])), None)
    if problem:   # named here; to_json would refuse it too, without the name
        raise BenchError(f"{run.task.name} {run.label}: its summary {problem}; nothing was written "
                         f"(finished batches stay in {partial_path})")
    summary_text = to_json(summary, indent=1)  # a NaN fails here, before anything is written
    write_text_atomic(records_path, text)
    write_text_atomic(summary_path, summary_text)
    partial_path.unlink(missing_ok=True)
    return summary


# --- runs found complete: integrity and locking -------------------------------------------------

def complete_run(run, say=True):
    """(summary, records) of a finished run whose records match its summary, else None. A summary
    that is unreadable, or whose records file is missing, short or altered, is named (``say``)
    and its run redone."""
    summary_path, records_path, _ = run.paths
    if not summary_path.exists():
        return None
    summary, problem = load_json(summary_path)
    problem = problem or summary_problem(summary)
    if problem is None and run_id(summary["config"]) != run_id(run.config):
        problem = "its config is not this run's"
    if problem is None:
        records, problem = check_records(summary, records_path)
        if problem is None:
            return summary, records
    if say:
        print(f"  {run.label}: {summary_path} is incomplete ({problem}); running it again", file=sys.stderr)
    return None


@contextlib.contextmanager
def cell_lock(run):
    """Hold the lock of one run cell (a .lock file beside its summary) while deciding whether to
    decode it and decoding it: a second process running the same cell waits here, then finds it
    complete. The kernel drops the lock of a killed process. The file goes once the cell is
    complete (later processes then find it complete without locking), and when the cell stops
    on an error (finished batches stay in the partial file; nothing else is left behind)."""
    summary_path = run.paths[0]
    path = summary_path.with_name(summary_path.name.removesuffix(".json") + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)   # the --out check leaves no folders behind
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"  {run.label}: another process is running it; waiting for it to finish", file=sys.stderr)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            path.unlink(missing_ok=True)


def find_or_lock(run, locks):
    """(summary, records) of ``run`` when it is complete; else None, with its lock held in ``locks``
    (a contextlib.ExitStack) until that closes: the cell is then this process's to decode."""
    found = complete_run(run)
    if found is None:
        locks.enter_context(cell_lock(run))
        found = complete_run(run, say=False)  # another process may have made it while we waited
    return found


def remake_command(run):
    """The shell command that deletes a run's files and decodes it again."""
    summary_path, records_path, _ = run.paths
    return (f"rm {shlex.quote(str(summary_path))} {shlex.quote(str(records_path))} && "
            f"{shlex.join([*(run.command or command_line(run)), '--strategies', canonical(run.strategy)])}")


def command_line(run, data=None, model=None, where=None):
    """`bench run` arguments (without --strategies) that remake ``run`` (on ``where``)."""
    task = run.task
    words = ["python", "-m", "bench", "run", "--tasks", task.name, "--seed", str(run.seed)]
    if task.temperature != type(task).temperature:   # set by --temperature
        words += ["--temperature", f"{task.temperature:g}"]
    for flag, value in (("--limit", run.limit), ("--data", data), ("--model", model)):
        words += [flag, str(value)] if value is not None else []
    if run.batch_size != DEFAULT_BATCH_SIZE:
        words += ["--batch-size", str(run.batch_size)]
    return words + (where.words() if where else []) + ["--out", str(run.out)]


# --- what every executor prints -----------------------------------------------------------------

def print_complete(run, note):
    """The line of a run found complete, with its verification's ``note``."""
    print(f"  {run.label}: complete already ({run.paths[0]}); {note}", file=sys.stderr)


def inputs_line(task, eval_set):
    """'1000 inputs', with what the task says about its data (hook ``data_summary``)."""
    about = task.data_summary()
    return f"{len(eval_set)} inputs" + (f" ({about})" if about else "")


def print_task_start(task_runs, where, extra=""):
    """What is skipped, then the line that opens the runs of ``task_runs`` (a TaskRuns) on ``where``."""
    task = task_runs.task
    for problem in task.problems():
        print(f"skipped: {problem}", file=sys.stderr)
    on = "" if where.is_default else f" on {where.device} {where.dtype}"
    print(f"{task.name}: {inputs_line(task, task_runs.eval_set)}, model {task_runs.model.checkpoint_id}{on}, "
          f"seed {task_runs.seed}{extra}", file=sys.stderr)


def print_floor(task, results):
    """The noise-floor line. A floor stored with the results under the same label is used (the
    floor may take a minute to compute, the judge's); a task with floors says when there is none."""
    label = task.floor_label()
    stored = [r["floor"] for r in results if r.get("floor") and r.get("floor_label", Task.floor_label(task)) == label]
    floor = stored[0] if stored else task.floor()
    if floor is not None:
        print(f"floor ({label}): " + ", ".join(f"{m['name']} {m['value']:.4f}" for m in floor))
    elif type(task).floor is not Task.floor:
        print(f"floor: {label}")


def print_task_end(task_runs, results, out):
    """The table of the ``results`` of ``task_runs``, its floor and the folder they are in."""
    task = task_runs.task
    print(f"\n{task.name} ({len(task_runs.eval_set)} inputs, seed {task_runs.seed}; 95% bootstrap CIs)")
    print(render_text(results))
    print_floor(task, results)
    print(f"results in {out}/{task.name}/")
