"""`bench run`: strategies on tasks, batches through the decode loop, resumable result files.

Everything a run needs is checked before any decoding (numbers, specs, the output folder, data,
models, helpers), so bad input costs one line and no work. A run found complete is checked
against its records (count and checksum) and a few of its inputs are decoded again and must
reproduce the stored records (``--verify``): every input draws its random numbers from its own
stream (bench.streams), so results do not depend on how the inputs are batched or sharded. A lock per run
cell makes a second process running the same cell wait, then find it complete.
"""
import contextlib
import fcntl
import json
import math
import re
import shlex
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from bench.core import Task
from bench.decode import decode
from bench.device import model_placement, place, placement
from bench.errors import BenchError
from bench.models import is_import_spec, load_model, probe
from bench.plan import minutes, plan_task, print_plan
from bench.presets import plan
from bench.provenance import describe_numerics, numerics, provenance
from bench.registry import canonical, make_task, parse_strategy, split_specs
from bench.results import (
    SCHEMA_VERSION,
    append_batch,
    check_records,
    load_json,
    read_batches,
    records_text,
    run_id,
    summary_problem,
    text_digest,
    to_json,
    write_batches,
    write_text_atomic,
)
from bench.stats import mean_metric
from bench.table import render_text

SEED_MAX = 2 ** 32 - 1  # numpy's and torch's generators take seeds in [0, 2**32) on every platform
DEFAULT_BATCH_SIZE = 250
VOLATILE = ("batch", "batch_seconds")  # record fields that depend on the batching or the clock
# How far a float of a record decoded again may be from the stored one: another CPU or BLAS sums
# float32 in another order (a log q of -187.068882 against -187.068891 across machines).
# Records round floats to 6 decimals, hence the absolute part; discrete fields compare exactly.
FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-5


def run_config(task, model, eval_set, strategy, seed, limit, batch_size):
    """Everything that determines a run's numbers (its identity). A model given as an import spec
    is named by it; a device and dtype other than cpu/float32 are recorded (``bench.device``)."""
    options = task.config()
    if getattr(task, "model_spec", None):   # --model package.module:factory
        options = {**options, "model": task.model_spec}
    config = {"task": task.name, "task_options": options, "strategy_spec": canonical(strategy),
              "strategy_params": asdict(strategy), "seed": seed, "limit": limit, "batch_size": batch_size,
              "data_id": eval_set.data_id, "model_id": model.checkpoint_id, "temperature": task.temperature,
              **model_placement(model).config()}
    if strategy.helper_ids():  # trained helpers (an MI estimator) are part of the identity
        config["helper_ids"] = strategy.helper_ids()
    return config


def result_paths(out_dir, config):
    """(summary .json, records .jsonl, in-progress .partial.jsonl) of a run."""
    digest = run_id(config)[:10]
    slug = re.sub(r"[^A-Za-z0-9.]+", "_", config["strategy_spec"]).strip("_")
    stem = str(Path(out_dir) / config["task"] / f"{slug}-seed{config['seed']}-{digest}")
    return Path(stem + ".json"), Path(stem + ".jsonl"), Path(stem + ".partial.jsonl")  # slugs may hold dots


# --- checks before any decoding ---------------------------------------------------------------

def check_arguments(args):
    """One-line errors for numbers and empty lists on the command line, before anything loads."""
    if args.seed is not None and not 0 <= args.seed <= SEED_MAX:
        raise BenchError(f"--seed must be between 0 and {SEED_MAX} (2**32 - 1), got {args.seed}")
    if args.batch_size < 1:
        raise BenchError(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.verify < 0:
        raise BenchError(f"--verify must be 0 (no check) or more, got {args.verify}")
    temperature = getattr(args, "temperature", None)
    if temperature is not None and not (math.isfinite(temperature) and temperature >= 0):
        raise BenchError(f"--temperature must be a finite number >= 0 (0: argmax values), got {temperature}")
    for flag, text in (("--tasks", args.tasks), ("--strategies", args.strategies)):
        if text is not None and not split_specs(text):
            raise BenchError(f"{flag} is empty; name at least one (`python -m bench list` shows them)")
    # an empty path would mean the current folder (--out) or the task's default (--data, --model)
    for flag, text, instead in (("--out", getattr(args, "out", None), "a results folder"),
                                ("--data", getattr(args, "data", None), "a data file, or leave --data out"),
                                ("--model", getattr(args, "model", None), "a checkpoint, or leave --model out")):
        if text is not None and not text.strip():
            raise BenchError(f"{flag} is empty; name {instead}")


def check_executor(args):
    """--executor local or ray; --shards and --ray-address only with ray."""
    if args.executor not in ("local", "ray"):
        raise BenchError(f"--executor must be local or ray, got {args.executor!r}")
    if args.executor == "local" and (args.shards != 1 or args.ray_address):
        raise BenchError(f"{'--shards' if args.shards != 1 else '--ray-address'} needs --executor ray")
    if args.executor == "ray" and getattr(args, "temperature", None) is not None:
        # Ray cells rebuild their task from its name and options, which do not carry a temperature
        raise BenchError("--temperature runs with --executor local only")


def parse_specs(specs):
    """(label, strategy) per spec; a one-line error where two specs name the same run."""
    parsed, seen = [], {}
    for spec in specs:
        strategy = parse_strategy(spec)
        if canonical(strategy) in seen:
            raise BenchError(f"strategies {seen[canonical(strategy)]!r} and {spec!r} are the same run "
                             f"({canonical(strategy)}); name it once")
        seen[canonical(strategy)] = spec
        parsed.append((spec, strategy))
    return parsed


def check_out_dir(out, task_names):
    """Each task's results folder must be a folder this process can write into: checked first,
    so that a bad --out never costs decoded batches. Folders made for the check are removed
    again (every writer makes the folders it writes into), so a later error leaves nothing."""
    if not str(out).strip():
        raise BenchError("--out is empty; name a results folder")
    if Path(out).exists() and not Path(out).is_dir():
        raise BenchError(f"--out {out} is a file, not a folder")
    for name in task_names:
        folder = Path(out) / name
        made = [path for path in (folder, *folder.parents) if not path.exists()]   # deepest first
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError as err:
            raise BenchError(f"--out {out}: cannot write results into {folder} ({err.strerror or err})") from None
        finally:
            remove_empty_folders(made)


def remove_empty_folders(folders):
    """Remove ``folders`` (deepest first) while they are empty; another process may have written into one."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def set_temperature(tasks, temperature):
    """--temperature overrides each task's decoding temperature (None: keep the task's). Only tasks
    that sample values take it: an argmax task at temperature 1 would be another task."""
    if temperature is None:
        return tasks
    for task in tasks:
        if task.temperature == 0 and temperature != 0:
            raise BenchError(f"--temperature: task {task.name} decodes argmax values (temperature 0); "
                             f"only sampling tasks take another temperature")
        if temperature == 0 and getattr(task, "needs_sampling", False):
            # its metrics read log q of sampled values, which argmax decoding does not give: found
            # here, not when the run's records are summarised after decoding
            raise BenchError(f"--temperature 0: task {task.name} scores sampled values (its metrics read "
                             f"their log-probabilities); give a temperature > 0")
        task.temperature = float(temperature)   # an instance attribute: run_config records it
    return tasks


def make_tasks(task_names, data, model):
    names = split_specs(task_names)
    if (data or model) and len(names) != 1:
        raise BenchError("--data and --model apply to one task; run one task at a time with them")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise BenchError(f"task {twice[0]} is named twice in --tasks; name it once")
    model = None if is_import_spec(model) else model   # a factory's model is loaded by bench.models
    return [make_task(name, data=data, model=model) for name in names]


def prepare(task, strategies, task_plan, model_arg=None, where=None):
    """(model, {seed: inputs}) of one task, with every strategy's helpers loaded: a bad data file,
    model or helper, or a model that lacks what a strategy needs (one forward pass on one input
    checks it), is an error before any decoding. The model runs on ``where`` (a Placement)."""
    eval_sets = {seed: task.eval_set(task_plan.limit, seed) for seed in task_plan.seeds}  # data first: cheaper
    model = place(load_model(task, model_arg), where)
    probe(model, [strategy for _, strategy in strategies], next(iter(eval_sets.values())), model_name(task, model))
    for _, strategy in strategies:
        for protocol in strategy.requires:
            protocol.check(task, f"strategy {strategy.name}")
        strategy.bind(task, model)
    return model, eval_sets


def model_name(task, model):
    """'the model 0230c8aeed6b of task T' (or of --model SPEC) for error messages."""
    spec = getattr(task, "model_spec", None)
    return f"the model {model.checkpoint_id} (--model {spec})" if spec else f"the model {model.checkpoint_id} of {task.name}"


# --- decoding -----------------------------------------------------------------------------------

def decode_rows(task, model, eval_set, strategy, rows, seed):
    """(records of eval-set ``rows`` decoded together, the batch's seconds): the one path by which
    runs decode and by which their checks decode again. Each input draws from its own random
    stream, keyed by ``seed`` and its eval-set index (bench.streams), so its record does not
    depend on the rows decoded with it: not on the batch size, nor on the shard."""
    result = decode(model, eval_set.tokens[rows], eval_set.masked[rows], strategy, task.temperature, seed, rows)
    records = task.records(result.tokens, result.passes, rows, eval_set)
    if strategy.aux_passes_metric:
        for record, aux in zip(records, result.aux_passes.tolist()):
            record[strategy.aux_passes_metric] = aux
    if task.temperature > 0:  # sampled values: log q of each sample (an exact task's KL reads it)
        for record, log_q in zip(records, result.log_q.tolist()):
            record["log_q"] = round(log_q, 6)
    return records, result.seconds


def batch_rows_of(n, size):
    """The eval-set rows of each batch of a run of ``n`` inputs at batch size ``size``."""
    return [torch.arange(i, min(i + size, n)) for i in range(0, n, size)]


def completed_batches(partial_path, config, batch_rows):
    """({batch number: records} of this run's finished batches in ``partial_path``). Lines that
    are not (another run's, edited, cut by a kill) are named on stderr and dropped: the partial
    file is rewritten to hold just the kept batches, so appends start on a clean line."""
    rows = [r.tolist() for r in batch_rows]
    batches, discarded = read_batches(partial_path, run_id(config), rows)
    for line in discarded:
        print(f"  {line}", file=sys.stderr)
    if discarded:
        write_batches(partial_path, run_id(config), batches)
    return batches


def decode_batches(task, model, eval_set, strategy, config, partial_path, label, batches=None):
    """Decode every batch not yet in the partial file (of ``batches``, batch numbers; None: all),
    appending each as it finishes. A shard of a run (bench.executor) is some batches."""
    batch_rows = batch_rows_of(len(eval_set), config["batch_size"])
    done = completed_batches(partial_path, config, batch_rows)
    todo = [b for b in range(len(batch_rows)) if b not in done and (batches is None or b in batches)]
    for batch in tqdm(todo, desc=f"{task.name} {label}", unit="batch", leave=False):
        new, seconds = decode_rows(task, model, eval_set, strategy, batch_rows[batch], config["seed"])
        for record in new:
            record.update(batch=batch, batch_seconds=seconds)
        append_batch(partial_path, run_id(config), batch, new)
        done[batch] = new
    return sorted((r for records in done.values() for r in records), key=lambda r: r["index"])


def aux_pass_metrics(records, strategy=None):
    """Passes a strategy spent besides decoding (an oracle's probing), reported apart: the record
    field its ``aux_passes_metric`` names (without a strategy: any field ``*_passes`` besides
    ``passes``, as `bench rescore` finds them in stored records)."""
    if not records:
        return []
    names = ([strategy.aux_passes_metric] if strategy is not None and strategy.aux_passes_metric else
             [] if strategy is not None else sorted(k for k in records[0] if k.endswith("_passes")))
    return [mean_metric(name, [r[name] for r in records], False,
                        "passes per sample spent besides decoding (not decoding passes)", field=name)
            for name in names if name in records[0]]


def summarize(task, model, strategy, config, records, label):
    seconds = sum({r["batch"]: r["batch_seconds"] for r in records}.values())
    floor = task.floor()
    return {"schema_version": SCHEMA_VERSION, "task": task.name, "strategy": config["strategy_spec"].split(":")[0],
            "label": label, "config": config, "headline": task.headline,
            "model": {"id": model.checkpoint_id, "path": config["task_options"].get("model"),
                      "n_params": model.n_params},
            "device": model_placement(model).describe(),
            "metrics": task.summarize(records) + aux_pass_metrics(records, strategy),
            "n_samples": len(records), "wall_seconds": seconds, "extra_figures": list(task.extra_figures),
            "floor": floor, "floor_label": task.floor_label() if floor is not None else None,
            "provenance": provenance()}


def decode_run(task, model, eval_set, strategy, config, paths, label):
    """Decode a run (resuming its partial file) and write its records and summary; the summary
    holds the record count and the records' checksum."""
    summary_path, records_path, partial_path = paths
    records = decode_batches(task, model, eval_set, strategy, config, partial_path, label)
    text = records_text(records)
    summary = summarize(task, model, strategy, config, records, label)
    summary.update(records_file=records_path.name, records_sha256=text_digest(text))
    summary_text = to_json(summary, indent=1)  # a NaN fails here, before anything is written
    write_text_atomic(records_path, text)
    write_text_atomic(summary_path, summary_text)
    partial_path.unlink(missing_ok=True)
    return summary


# --- runs found complete: integrity, locking, verification ----------------------------------------

def complete_run(config, paths, label, say=True):
    """(summary, records) of a finished run whose records match its summary, else None. A summary
    that is unreadable, or whose records file is missing, short or altered, is named (``say``)
    and its run redone."""
    summary_path, records_path, _ = paths
    if not summary_path.exists():
        return None
    summary, problem = load_json(summary_path)
    problem = problem or summary_problem(summary)
    if problem is None and summary["config"] != config:
        problem = "its config is not this run's"
    if problem is None:
        records, problem = check_records(summary, records_path)
        if problem is None:
            return summary, records
    if say:
        print(f"  {label}: {summary_path} is incomplete ({problem}); running it again", file=sys.stderr)
    return None


@contextlib.contextmanager
def cell_lock(summary_path, label):
    """Hold the lock of one run cell (a .lock file beside its summary) while deciding whether to
    decode it and decoding it: a second process running the same cell waits here, then finds it
    complete. The kernel drops the lock of a killed process. The file goes once the cell is
    complete (later processes then find it complete without locking), and when the cell stops
    on an error (finished batches stay in the partial file; nothing else is left behind)."""
    path = summary_path.with_name(summary_path.name.removesuffix(".json") + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"  {label}: another process is running it; waiting for it to finish", file=sys.stderr)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            path.unlink(missing_ok=True)


def draws_randomly(task, strategy):
    """Whether a run draws random numbers: sampled values (temperature > 0) or a strategy in a
    sampling mode (learned:mode=sample draws its reveals)."""
    return task.temperature > 0 or strategy.samples()


def verify_rows(n, count):
    """``count`` of ``n`` inputs spread evenly, first and last included: what --verify decodes."""
    if count >= n:
        return list(range(n))
    return sorted({round(i * (n - 1) / max(count - 1, 1)) for i in range(count)})


def field_difference(key, stored, new, worst):
    """Why field ``key`` of a record decoded again differs from its stored value ('' when it does
    not): what is discrete (ints, bools, text, lists of them) must be equal, a float within
    FLOAT_RTOL/FLOAT_ATOL. ``worst`` ([deviation, key]) keeps the largest float deviation seen."""
    if isinstance(stored, list) and isinstance(new, list) and len(stored) == len(new):
        return next((d for a, b in zip(stored, new) if (d := field_difference(key, a, b, worst))), "")
    floats = isinstance(stored, float) or isinstance(new, float)
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (stored, new))
    if not (floats and numbers):
        same = type(stored) is type(new) and stored == new   # True == 1 in Python; not in a record
        return "" if same else f"{key} {str(new)[:40]}, stored {str(stored)[:40]}"
    deviation = abs(new - stored)
    if deviation > worst[0]:
        worst[:] = [deviation, key]
    if deviation <= FLOAT_ATOL + FLOAT_RTOL * abs(stored):
        return ""
    return (f"{key} {new!r}, stored {stored!r}: off by {deviation:.3g}, beyond the float tolerance "
            f"(rtol {FLOAT_RTOL:g}, atol {FLOAT_ATOL:g})")


def record_difference(stored, new, worst):
    """'passes 13, stored 12' for the first field of ``new`` that differs from ``stored`` beyond
    what reproduction allows (``field_difference``), or ''."""
    if stored is None:
        return "no stored record"
    new = json.loads(to_json(new))  # as it would be stored: tuples become lists
    for key in sorted(set(stored) | set(new)):
        if key in VOLATILE:
            continue
        if key not in stored or key not in new:
            return f"field {key} is {'new' if key in new else 'gone'}"
        difference = field_difference(key, stored[key], new[key], worst)
        if difference:
            return difference
    return ""


def platform_note(summary):
    """Where the run was made, when that is not where it is checked now: floats may then differ
    in their last digits (another CPU or BLAS sums in another order)."""
    made, here = summary.get("provenance", {}).get("numerics"), numerics()
    if made == here:
        return ""
    made_text = describe_numerics(made) if made else "a platform it did not record"
    return f"; made on {made_text}, checked on {describe_numerics(here)}"


def verify_run(task, model, eval_set, strategy, found, count, label, remake, seed):
    """Decode ``count`` inputs of a complete run (``found``: its summary and records) of ``seed``
    again: discrete fields must equal the stored records, floats agree within the stated
    tolerance. Returns a note for the run's line, with the largest float deviation seen. Runs that
    draw random numbers (sampled values, a sampling strategy) are checked too: each input draws
    from its own stream, so the inputs decoded alone draw what they drew in their batch."""
    summary, records = found
    if count == 0:
        return "not verified (--verify 0)"
    if task.temperature > 0 and records and "log_q" not in records[0]:
        # made before per-input streams (and log_q): its draws depended on its batch-mates
        return "not verified: made with one random generator per batch, before per-input streams; remake it to verify"
    rows = verify_rows(len(eval_set), count)
    stored = {r["index"]: r for r in records}
    new, _ = decode_rows(task, model, eval_set, strategy, torch.tensor(rows), seed)
    worst = [0.0, None]
    for record in new:
        difference = record_difference(stored.get(record["index"]), record, worst)
        if difference:
            raise BenchError(f"{label}: the stored result does not reproduce (input {record['index']}: "
                             f"{difference}){platform_note(summary)}; remake it with: {remake}")
    drawn = " (their random draws included)" if draws_randomly(task, strategy) else ""
    floats = f"; largest float deviation {worst[0]:.2g} ({worst[1]})" if worst[1] else ""
    return f"{len(rows)} inputs decoded again reproduce it{drawn}{floats}{platform_note(summary)}"


def remake_command(paths, strategy, command):
    """The shell command that deletes a run's files and decodes it again."""
    summary_path, records_path, _ = paths
    return (f"rm {shlex.quote(str(summary_path))} {shlex.quote(str(records_path))} && "
            f"{shlex.join([*command, '--strategies', canonical(strategy)])}")


def run_one(task, model, eval_set, strategy, label, seed, limit, batch_size, out_dir, verify=0, command=None):
    """Run (or resume, or find complete and verify) one strategy on one task; returns the summary.
    ``command`` is the `bench run` command line (without --strategies) that remakes the run."""
    strategy.bind(task, model)  # strategies with trained helpers or probing load them here
    config = run_config(task, model, eval_set, strategy, seed, limit, batch_size)
    paths = result_paths(out_dir, config)
    found = complete_run(config, paths, label)
    if found is None:
        with cell_lock(paths[0], label):
            found = complete_run(config, paths, label, say=False)  # another process may have made it
            if found is None:
                return decode_run(task, model, eval_set, strategy, config, paths, label)
    command = command or command_line(task, seed, limit, batch_size, out_dir)
    note = verify_run(task, model, eval_set, strategy, found, verify, label, remake_command(paths, strategy, command),
                      seed)
    print(f"  {label}: complete already ({paths[0]}); {note}", file=sys.stderr)
    return found[0]


# --- the command ----------------------------------------------------------------------------------

@dataclass
class TaskRuns:
    """The runs of one task and seed in one `bench run`: its model, inputs and (label, strategy)s."""
    task: Task
    model: object
    eval_set: object
    strategies: list
    seed: int
    limit: int | None


def prepare_runs(args):
    """Every TaskRuns of the command, after every check (numbers, specs, --out, data, models,
    helpers): nothing is decoded before all of it passed."""
    check_arguments(args)
    check_executor(args)
    where = placement(args.device, args.dtype)
    plans = plan(args.preset, args.tasks, args.strategies, args.limit, args.seed)
    tasks = set_temperature(make_tasks(",".join(p.task for p in plans), args.data, args.model),
                            getattr(args, "temperature", None))
    parsed = [parse_specs(p.specs) for p in plans]
    check_out_dir(args.out, [task.name for task in tasks])
    loaded = [prepare(task, strategies, p, args.model, where) for task, strategies, p in zip(tasks, parsed, plans)]
    runs = []
    for task, task_plan, strategies, (model, eval_sets) in zip(tasks, plans, parsed, loaded):
        for seed in task_plan.seeds:
            # a run that draws nothing would repeat its first seed's records: only the first seed runs it
            chosen = [s for s in strategies if seed == task_plan.seeds[0] or draws_randomly(task, s[1])]
            runs.append(TaskRuns(task, model, eval_sets[seed], chosen, seed, task_plan.limit))
    return runs


def run_tasks(args):
    """Run a preset (``default`` unless --preset) with the command line's overrides, in this
    process (``--executor local``; bench.executor runs ``--executor ray``). Each task's plan
    (bench.plan) is printed before its runs, and the time planned against the time taken after."""
    for runs in prepare_runs(args):
        planned = print_plan(f"{runs.task.name} seed {runs.seed}", plan_task(runs, args))
        start = time.perf_counter()
        run_task(runs, args)
        print(f"{runs.task.name} seed {runs.seed}: planned {minutes(planned)}, took "
              f"{minutes(time.perf_counter() - start)}", file=sys.stderr)
    return 0


def command_line(task, seed, limit, batch_size, out, data=None, model=None, where=None):
    """`bench run` arguments (without --strategies) that remake a run of ``task`` (on ``where``)."""
    words = ["python", "-m", "bench", "run", "--tasks", task.name, "--seed", str(seed)]
    if task.temperature != type(task).temperature:   # set by --temperature
        words += ["--temperature", f"{task.temperature:g}"]
    for flag, value in (("--limit", limit), ("--data", data), ("--model", model)):
        words += [flag, str(value)] if value is not None else []
    if batch_size != DEFAULT_BATCH_SIZE:
        words += ["--batch-size", str(batch_size)]
    return words + (where.words() if where else []) + ["--out", str(out)]


def inputs_line(task, eval_set):
    """'1000 inputs', with what the task says about its data (hook ``data_summary``)."""
    about = task.data_summary()
    return f"{len(eval_set)} inputs" + (f" ({about})" if about else "")


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


def run_task(runs, args):
    task, model, eval_set = runs.task, runs.model, runs.eval_set
    for problem in task.problems():
        print(f"skipped: {problem}", file=sys.stderr)
    where = model_placement(model)
    on = "" if where.is_default else f" on {where.device} {where.dtype}"
    print(f"{task.name}: {inputs_line(task, eval_set)}, model {model.checkpoint_id}{on}, seed {runs.seed}",
          file=sys.stderr)
    command = command_line(task, runs.seed, runs.limit, args.batch_size, args.out, args.data, args.model, where)
    results = [run_one(task, model, eval_set, strategy, spec, runs.seed, runs.limit, args.batch_size, args.out,
                       args.verify, command) for spec, strategy in runs.strategies]
    print(f"\n{task.name} ({len(eval_set)} inputs, seed {runs.seed}; 95% bootstrap CIs)")
    print(render_text(results))
    print_floor(task, results)
    print(f"results in {args.out}/{task.name}/")
