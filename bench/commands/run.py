"""`bench run` and `bench plan`, which share their arguments."""
import sys

from bench.commands.placement import add_placement
from bench.presets import PRESETS
from bench.registry import register_command
from bench.run import DEFAULT_BATCH_SIZE, DEFAULT_OUT, DEFAULT_VERIFY

DEFAULT_EXECUTOR = "local"
DEFAULT_SHARDS = 1


def add_run_arguments(parser):
    """The arguments `bench run` and `bench plan` share."""
    parser.add_argument("--preset", help=f"{', '.join(PRESETS)} (bench/presets.py; each task's part in "
                                         "tasks/<name>/presets.py); the flags below override it")
    parser.add_argument("--tasks", help="comma-separated task names (default: the preset's; without --preset: "
                                        "the headline task, the one whose presets.py says headline=True)")
    parser.add_argument("--strategies", help="comma-separated specs NAME or NAME:key=value,... (`bench list` "
                                             "names them; default: the preset's sweep per task)")
    parser.add_argument("--seed", type=int, help="seed of every sampled choice, 0 to 2**32 - 1 (default: the "
                                                 "preset's seeds; with --strategies and no --preset, 0)")
    parser.add_argument("--limit", type=int, help="only the first N inputs (default: the preset's; all)")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"results folder (default: {DEFAULT_OUT})")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
                        help=f"inputs decoded together, at least 1 (default {DEFAULT_BATCH_SIZE})")
    parser.add_argument("--verify", type=int, default=DEFAULT_VERIFY, metavar="N",
                        help=f"runs found complete: decode N of their inputs again and check they reproduce "
                             f"the stored records (default {DEFAULT_VERIFY}; 0 skips; sampled runs are not checked)")
    parser.add_argument("--data", help="input file for the task (`bench list` says what each task takes)")
    parser.add_argument("--model", help="model checkpoint for the task (default: the shipped one), or "
                                        "package.module:factory, a callable returning a MaskedModel")
    parser.add_argument("--temperature", type=float, metavar="T",
                        help="decoding temperature of sampling tasks: 0 = argmax values, 1 = the model's marginals "
                             "(default: the task's; part of each run's identity)")
    add_placement(parser)


def add_arguments(parser):
    add_run_arguments(parser)
    parser.add_argument("--executor", default=DEFAULT_EXECUTOR,
                        help="local (default: this process) or ray (cells as Ray tasks; pip install -e '.[ray]')")
    parser.add_argument("--shards", type=int, default=DEFAULT_SHARDS,
                        help=f"with --executor ray: cut each run's inputs into N shards of whole batches, one Ray "
                             f"task each (default {DEFAULT_SHARDS})")
    parser.add_argument("--ray-address", help="with --executor ray: the cluster to join ('auto': the one `ray start` "
                                              "made here; default: $RAY_ADDRESS, else a new local Ray instance)")


@register_command("run", "run strategies on tasks and write result files", add_arguments)
def run(args):
    if args.executor == "ray":
        from bench.run.ray_executor import run_on_ray
        return run_on_ray(args)
    from bench.run.local import run_tasks
    return run_tasks(args)


def add_plan_arguments(parser):
    add_run_arguments(parser)
    parser.set_defaults(executor=DEFAULT_EXECUTOR, shards=DEFAULT_SHARDS, ray_address=None)


@register_command("plan", "what a `bench run` with these arguments will cost, before running it", add_plan_arguments)
def plan(args):
    """The plan of the `bench run` these arguments make, without running it."""
    from bench.run.local import prepare_runs
    from bench.run.plan import print_whole_plan
    print_whole_plan(prepare_runs(args), args, out=sys.stdout)
    return 0
