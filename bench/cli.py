"""unmask-bench: which masked positions should a masked diffusion model reveal at each pass?

Commands: list (tasks, strategies, helpers, presets), run (strategies on tasks -> results/), plan
(what a run will cost, before it runs),
report (figures and tables from results/ only), compare (two sets of results: the regression
gate), rescore (metrics from stored records), train (a task's model or a helper network), data
(build data sets), throughput (model passes per second); plugins add their own (`bench --help`
lists them).
"""
import argparse
import gc
import sys

from bench.allocator import keep_freed_memory
from bench.errors import BenchError
from bench.presets import DEFAULT_TASK, PRESETS, unswept
from bench.registry import COMMANDS, STRATEGIES, TASKS, TRAINERS, load_plugins, param_help


def add_run(sub):
    run = sub.add_parser("run", help="run strategies on tasks and write result files")
    add_run_arguments(run)
    run.add_argument("--executor", default="local", help="local (default: this process) or ray (cells as Ray "
                                                         "tasks; pip install -e '.[ray]')")
    run.add_argument("--shards", type=int, default=1, help="with --executor ray: cut each run's inputs into N "
                                                           "shards of whole batches, one Ray task each (default 1)")
    run.add_argument("--ray-address", help="with --executor ray: the cluster to join ('auto': the one `ray start` "
                                           "made here; default: $RAY_ADDRESS, else a new local Ray instance)")
    plan = sub.add_parser("plan", help="what a `bench run` with these arguments will cost, before running it")
    add_run_arguments(plan)
    plan.set_defaults(executor="local", shards=1, ray_address=None)


def add_run_arguments(run):
    """The arguments `bench run` and `bench plan` share."""
    run.add_argument("--preset", help="ci, default or paper (bench/presets.py); the flags below override it")
    run.add_argument("--tasks", help=f"comma-separated task names (default: the preset's; without --preset: {DEFAULT_TASK})")
    run.add_argument("--strategies", help="comma-separated specs, e.g. sequential,topk:k=7,order=margin "
                                          "(default: the preset's sweep per task)")
    run.add_argument("--seed", type=int, help="seed of every sampled choice, 0 to 2**32 - 1 (default: the preset's, 0)")
    run.add_argument("--limit", type=int, help="only the first N inputs (default: the preset's; all)")
    run.add_argument("--out", default="results", help="results folder (default: results)")
    run.add_argument("--batch-size", type=int, default=250, help="inputs decoded together, at least 1 (default 250)")
    run.add_argument("--verify", type=int, default=4, metavar="N",
                     help="runs found complete: decode N of their inputs again and check they reproduce "
                          "the stored records (default 4; 0 skips; sampled runs are not checked)")
    run.add_argument("--data", help="input file for the task (`bench list` says what each task takes)")
    run.add_argument("--model", help="model checkpoint for the task (default: the shipped one), or "
                                      "package.module:factory, a callable returning a MaskedModel")
    run.add_argument("--temperature", type=float, metavar="T",
                     help="decoding temperature of sampling tasks: 0 = argmax values, 1 = the model's marginals "
                          "(default: the task's; part of each run's identity)")
    add_placement(run)


def add_placement(parser):
    """--device and --dtype (checked where they are used, so the parser needs no torch)."""
    parser.add_argument("--device", default="cpu", help="where models run: auto (cuda when there is one), cpu "
                                                        "(default), cuda or cuda:N")
    parser.add_argument("--dtype", default="float32", help="float32 (default) or bfloat16 (autocast)")


def add_compare(sub):
    from bench.compare import DEFAULT_FAIL_ON, FAIL_ON_HELP
    compare = sub.add_parser("compare", help="compare two sets of results; exit 1 on a regression",
                             description=FAIL_ON_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    compare.add_argument("base", help="baseline: a results folder or one result .json")
    compare.add_argument("new", help="the results to check: a folder or one result .json")
    compare.add_argument("--fail-on", default=DEFAULT_FAIL_ON,
                         help="METRIC:LIMIT,... allowed worsening per metric (default: %(default)s; see above)")


class OneLineParser(argparse.ArgumentParser):
    """argparse with usage errors as one line, exit 2."""

    def error(self, message):
        self.exit(2, f"error: {message} (see: {self.prog} --help)\n")


def add_core(sub):
    """The commands every installation has; plugins add theirs (bench.registry.register_command)."""
    sub.add_parser("list", help="tasks, strategies and presets with their parameters and defaults")
    add_run(sub)
    add_compare(sub)
    report = sub.add_parser("report", help="Pareto plots and tables from result files only")
    report.add_argument("--results", default="results", help="results folder (default: results)")
    report.add_argument("--out", help="figures folder, a folder you can write (default: beside the results: "
                                      "reports/ for the committed results/, DIR/reports for --results DIR)")
    report.add_argument("--docs", help="folder whose .md files get their report tables rewritten between "
                                       "markers (default: the checkout when the committed results/ write the "
                                       "committed reports/, else none)")
    rescore = sub.add_parser("rescore", help="recompute result files' metrics from their records (no decoding)")
    rescore.add_argument("--results", default="results", help="results folder (default: results)")
    rescore.add_argument("--task", help="only this task's results (default: all)")
    rescore.add_argument("--headline-only", action="store_true",
                         help="only point each summary's headline at the task's current one (a metric it "
                              "already stores, from an earlier rescore); nothing is recomputed")
    train = sub.add_parser("train", help="train a task's model or a helper network (weights ship in the repo)")
    train.add_argument("target", help="a task name (its model) or a helper (`bench list` names them)")
    train.add_argument("settings", nargs="*", help="KEY=VALUE overrides, e.g. steps=100")
    train.add_argument("--out", help="where to write the checkpoint (default: the shipped path)")
    train.add_argument("--task", help="with a helper target: the task whose model the helper reads")
    add_placement(train)
    speed = sub.add_parser("throughput", help="forward passes per second of each task's model at several batch sizes")
    speed.add_argument("--tasks", help="comma-separated task names (default: every task)")
    speed.add_argument("--batches", default="1,64,256,1024", help="batch sizes (default: %(default)s)")
    speed.add_argument("--seconds", type=float, default=2.0, help="time per batch size, at least (default 2)")
    add_placement(speed)
    data = sub.add_parser("data", help="build a data set a task names (`bench list` names them)")
    data.add_argument("target", help="what to build")
    data.add_argument("--test-set", action="store_true", help="also rewrite the committed test set, where one is built")


def build_parser():
    """The parser: core commands and those the plugins' ``cli`` modules register (these modules
    import no model code, so `bench --help`, `report` and `compare` start without torch)."""
    parser = OneLineParser(prog="bench", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    add_core(sub)
    load_plugins("cli")
    for command in COMMANDS.values():
        command.add_arguments(sub.add_parser(command.name, help=command.help))
    return parser


def task_protocols():
    """Every TaskProtocol a registered strategy requires (bench.protocols), each once."""
    found = []
    for cls in STRATEGIES.values():
        found += [p for p in cls.requires if p not in found]
    return found


def list_everything():
    """`bench list`: every task (with its data builders), strategy, helper trainer and preset."""
    load_plugins()
    print("tasks:")
    for name, cls in sorted(TASKS.items()):
        print(f"  {name:12s} {cls.__doc__.splitlines()[0]}")
        for option, text in cls.options.items():
            print(f"  {'':12s}   --{option}: {text}")
        for target, (text, _) in cls().data_builders().items():
            print(f"  {'':12s}   bench data {target}: {text}")
        supported = [p.name for p in task_protocols() if not p.missing(cls)]
        print(f"  {'':12s}   supports: {', '.join(supported) if supported else 'no helper protocol'}")
    print("strategies (name:key=value,...):")
    for name, cls in sorted(STRATEGIES.items()):
        print(f"  {name:12s} {cls.__doc__.splitlines()[0]}")
        print(f"  {'':12s}   {param_help(cls)}")
    print("helpers (bench train NAME --task T KEY=VALUE...):")
    for name, trainer in sorted(TRAINERS.items()):
        print(f"  {name:12s} {trainer.help}")
    print("presets (run --preset NAME):")
    for name, preset in PRESETS.items():
        print(f"  {name:12s} {preset.about}")
    if unswept(STRATEGIES):
        print(f"not in the default sweep (bench/presets.py SWEEPS): {', '.join(unswept(STRATEGIES))}")


def dispatch(args):
    if args.command == "list":
        list_everything()
    elif args.command == "run" and args.executor == "ray":
        from bench.executor import run_on_ray
        run_on_ray(args)
    elif args.command == "run":
        from bench.runner import run_tasks
        run_tasks(args)
    elif args.command == "plan":
        from bench.plan import run_plan
        run_plan(args)
    elif args.command == "report":
        from bench.report import default_docs, report, report_folder
        out = report_folder(args.results, args.out)
        report(args.results, out, args.docs if args.docs is not None else default_docs(args.results, out))
    elif args.command == "rescore":
        from bench.rescore import rescore
        rescore(args.results, args.task, args.headline_only)
    elif args.command == "compare":
        from bench.compare import compare
        return compare(args.base, args.new, args.fail_on)
    elif args.command == "train":
        from bench.training import run_training
        run_training(args.target, args.settings, args.out, args.task, args.device, args.dtype)
    elif args.command == "throughput":
        from bench.throughput import throughput
        load_plugins()
        throughput(args.tasks or ",".join(sorted(TASKS)), args.batches, args.device, args.dtype, args.seconds)
    elif args.command == "data":
        from bench.training import build_data
        build_data(args.target, args)
    else:
        COMMANDS[args.command].run(args)
    return 0


def parse(argv=None):
    """Parse the command line; `train` also takes KEY=VALUE settings after its options."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not (args.command == "train" and all("=" in e and not e.startswith("-") for e in extra)):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if extra:
        args.settings = args.settings + extra
    return args


def main(argv=None):
    try:
        return dispatch(parse(argv))
    except BenchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished runs and batches are kept; rerun the same command to resume",
              file=sys.stderr)
        return 130


def program():
    """The `bench` command: ``main()``, then the process ends. Objects moved out of the collector's
    sight are not walked at interpreter shutdown (0.4 s of every command that imported torch);
    atexit handlers still run. (Not in ``main``: tests call it inside one long process.) Freed
    memory is kept for reuse (bench.allocator)."""
    keep_freed_memory()
    code = main()
    gc.freeze()
    return code
