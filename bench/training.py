"""`bench train TARGET` and `bench data TARGET`: hand the work to the task or plugin that owns it.

`bench train TASK KEY=VALUE...` calls the task's ``train_model``; `bench train NAME --task T`
calls a plugin trainer (``bench.registry.register_trainer``: a strategy family's estimator
or policy). `bench data NAME` calls the builder a task names in ``data_builders``. `--device` and
`--dtype` are set for the trainers to read (``bench.device.selected()``): the shipped ones put the
network being trained (and the frozen model a helper reads) there.
"""
import contextlib
import contextvars
import logging
import subprocess
from dataclasses import asdict, fields
from pathlib import Path

from bench.errors import BenchError
from bench.registry import TASKS, TRAINERS, load_plugins, make_task, set_fields

# The checkpoint `bench train --same-as FILE` will compare with, checked before training: its path
# and its payload's network config, so that a task's trainer refuses another network before it
# trains (``check_same_network``); None outside `--same-as`.
SAME_AS = contextvars.ContextVar("same_as", default=None)


@contextlib.contextmanager
def same_as_file(path):
    """Check ``path`` (--same-as) is a checkpoint of a network before any training, and hold it
    for the trainer to compare its network with; a missing or foreign file is a one-line error."""
    if not path:
        yield
        return
    import torch

    from bench.checkpoints import weight_tensors
    from bench.files import CHECKPOINT_LIMIT, checked_path
    weight_tensors(path)   # exists, a regular file, a torch checkpoint with state dicts of tensors
    payload = torch.load(checked_path(path, "checkpoint", CHECKPOINT_LIMIT), map_location="cpu", weights_only=True)
    token = SAME_AS.set({"path": path, "config": payload.get("config")})
    try:
        yield
    finally:
        SAME_AS.reset(token)


def check_same_network(model_cfg, what):
    """Before training a task's model under --same-as: the file's network config must be the one
    about to be trained (else it would train, then find the tensors differ)."""
    held = SAME_AS.get()
    if held is None:
        return
    config = asdict(model_cfg)
    if held["config"] != config:
        raise BenchError(f"--same-as {held['path']} is not a checkpoint of the {what} network being trained "
                         f"(its config {held['config']!r}, this one {config!r}); nothing was trained")


def shipped(path):
    """Whether ``path`` is a file the suite ships: tracked by git in the suite's checkout (outside
    a git checkout: any existing file inside it)."""
    from bench.provenance import REPO
    path = Path(path).resolve()
    if not path.is_relative_to(REPO) or not path.exists():
        return False
    try:
        found = subprocess.run(["git", "ls-files", "--error-unmatch", str(path.relative_to(REPO))], cwd=REPO,
                               capture_output=True, text=True)
    except OSError:
        return True
    return found.returncode == 0 or "not a git repository" in found.stderr


def check_out(out, same_as, overwrite):
    """--out must not be the --same-as file (it would be compared with itself), nor a shipped
    file or its log unless --overwrite says so."""
    out = Path(out)
    if same_as and out.resolve() == Path(same_as).resolve():
        raise BenchError(f"--out {out} is the --same-as file: training would overwrite the checkpoint it is "
                         "compared with; train to another file")
    for path in (out, out.with_suffix(".log")):
        if shipped(path) and not overwrite:
            raise BenchError(f"--out {out}: {path} is a shipped file (tracked by git); give another --out, "
                             "or --overwrite to replace it on purpose")


def setup_log(log_path):
    """Log INFO lines to ``log_path`` (appending) and keep the console for the progress bar. A previous
    training's log file is closed first: in one long process (tests, notebooks) each training logs to
    its own file only."""
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "bench_training_log", False)]:
        root.removeHandler(old)
        old.close()
    handler = logging.FileHandler(log_path)
    handler.bench_training_log = True
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
    root.setLevel(logging.INFO)
    root.addHandler(handler)


def split_settings(settings, model_cls, train_cls, what):
    """(model config, training config) from KEY=VALUE strings: each key goes to the config that has it."""
    model_keys = {f.name for f in fields(model_cls)}
    model_cfg = set_fields(model_cls(), [s for s in settings if s.split("=")[0].strip() in model_keys], what)
    train_cfg = set_fields(train_cls(), [s for s in settings if s.split("=")[0].strip() not in model_keys], what)
    return model_cfg, train_cfg


def train_and_log(what, configs, train, settings, out, *, default_weights):
    """Train a task's model: KEY=VALUE ``settings`` go to whichever of the two config dataclasses
    ``configs`` = (model, training) has the key; the log goes beside the weights."""
    model_cfg, train_cfg = split_settings(settings, *configs, f"{what} training")
    check_same_network(model_cfg, what)
    out = Path(out or default_weights)
    setup_log(out.with_suffix(".log"))
    logging.getLogger(f"train.{what}").info("model %s train %s", model_cfg, train_cfg)
    train(model_cfg, train_cfg, out)
    print(f"saved {out} (log: {out.with_suffix('.log')})")


def run_training(target, settings, out, task_name, *, device="cpu", dtype="float32", model=None):
    """`bench train TARGET [--task T [--model M]] KEY=VALUE...`; the trainers read --device and
    --dtype from ``bench.device.selected()``."""
    from bench.device import placement, select
    select(placement(device, dtype))
    load_plugins()
    if target in TRAINERS:
        if not task_name:
            raise BenchError(f"bench train {target} needs --task; choose from: {', '.join(sorted(TASKS))}")
        TRAINERS[target].run(make_task(task_name, model=model), settings, out)
    elif model:
        raise BenchError(f"--model is for a helper target (the model whose helper it trains); {target!r} is not one")
    elif target in TASKS:
        make_task(target).train_model(settings, out)
    else:
        raise BenchError(f"nothing to train called {target!r}; choose from: "
                         f"{', '.join(sorted(TASKS) + sorted(TRAINERS))}")


def check_same_weights(out, shipped):
    """Print, for each file the training wrote (``out`` and those beside it), whether its weights
    equal the shipped file's; 0 where all are bit-identical, else 1."""
    from bench.checkpoints import weight_difference, written_beside
    same = True
    for made, original in written_beside(out, shipped):
        if not original.is_file():
            print(f"{made}: no shipped {original} to compare with")
            same = False
            continue
        count, identical, largest = weight_difference(made, original)
        print(f"{made} vs {original}: {count} tensors, " + ("bit-identical" if identical else
                                                            f"differ (largest absolute difference {largest:.3g})"))
        same &= identical
    return 0 if same else 1


def data_builders():
    """name -> (help, build(args)) over every task's ``data_builders``."""
    load_plugins()
    builders = {}
    for cls in TASKS.values():
        builders.update(cls().data_builders())
    return builders


def build_data(target, args):
    """`bench data NAME`."""
    builders = data_builders()
    if target not in builders:
        raise BenchError(f"no data to build for {target!r}; choose from: {', '.join(sorted(builders))}")
    builders[target][1](args)
