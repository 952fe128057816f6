"""The checks of `bench run` before any decoding: numbers, specs, the output folder, data,
models and helpers, so bad input costs one line and no work."""
import math
import tempfile
from pathlib import Path

from bench.device import place
from bench.errors import BenchError
from bench.models import is_import_spec, load_model, probe
from bench.registry import make_task, split_specs

SEED_MAX = 2 ** 32 - 1  # numpy's and torch's generators take seeds in [0, 2**32) on every platform


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


def same_data(given, split_data):
    """Whether --data ``given`` names the file or split ``split_data`` (paths compared resolved)."""
    if Path(given).exists() and Path(split_data).exists():
        return Path(given).resolve() == Path(split_data).resolve()
    return str(given) == str(split_data)


def check_split_data(preset, task_names, data):
    """A split's folder holds only that split: with a validation preset --data must be the task's
    validation data (or left out), and without one it must not be (its runs would mix validation
    inputs into the test results, or test inputs into the folder choices are made from)."""
    from bench.settings import task_settings
    if not data:
        return
    for name in split_specs(task_names or ""):
        settings = task_settings(name)
        split = settings.tiers.validation if settings is not None else None
        if split is None or split.data is None:
            continue
        same = same_data(data, split.data)
        if preset.split == "validation" and not same:
            raise BenchError(f"--preset {preset.name} runs task {name}'s validation split ({split.data}); --data "
                             f"{data} is other data, which would go into {preset.out or 'its folder'}/ where choices "
                             f"are made: leave --data out")
        if preset.split != "validation" and same:
            raise BenchError(f"--data {data} is task {name}'s validation split; run it with --preset validation "
                             f"(its runs go to validation/, apart from the test runs the claims are tested on)")


def make_tasks(task_names, data, model, plan_data=None):
    """The tasks named, with --data and --model (one task only) or each task's input file from its
    plan (``plan_data``: task -> path or None, a validation split)."""
    names = split_specs(task_names)
    if (data or model) and len(names) != 1:
        raise BenchError("--data and --model apply to one task; run one task at a time with them")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise BenchError(f"task {twice[0]} is named twice in --tasks; name it once")
    model = None if is_import_spec(model) else model   # a factory's model is loaded by bench.models
    plan_data = plan_data or {}
    tasks = [make_task(name, data=data or plan_data.get(name), model=model) for name in names]
    for task in tasks:
        if task.missing():
            raise BenchError(f"task {task.name} needs {', '.join(task.missing())}, not installed: {task.install}")
    return tasks


def prepare(task, task_plan, model_arg=None, where=None):
    """(model, {seed: inputs}) of one task, with every strategy of its plan bound to the model
    (helpers loaded): a bad data file, model or helper, or a model that lacks what a strategy needs
    (one forward pass on one input checks it), is an error before any decoding. The model runs on
    ``where`` (a Placement)."""
    strategies = [strategy for _, strategy in task_plan.strategies]
    eval_sets = {seed: task.eval_set(task_plan.limit, seed) for seed in task_plan.seeds}  # data first: cheaper
    model = place(load_model(task, model_arg), where)
    probe(model, strategies, next(iter(eval_sets.values())), model_name(task, model))
    for strategy in strategies:
        for protocol in strategy.requires:
            protocol.check(task, f"strategy {strategy.name}")
        strategy.bind(task, model)   # the only bind of the command: every seed's runs share it
    return model, eval_sets


def model_name(task, model):
    """'the model 0230c8aeed6b of task T' (or of --model SPEC) for error messages."""
    spec = getattr(task, "model_spec", None)
    if spec:
        return f"the model {model.checkpoint_id} (--model {spec})"
    return f"the model {model.checkpoint_id} of {task.name}"
