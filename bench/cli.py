"""unmask-bench: which masked positions should a masked diffusion model reveal at each pass?

Commands: list (tasks, strategies, presets), run (strategies on tasks -> results/),
report (figures and tables from results/ only), compare (two sets of results: the regression
gate), train (a task's model or its MI estimator), mi (exact-MI labels, estimator evaluation),
data (build data sets).
"""
import argparse
import sys

from bench.errors import BenchError


def add_run(sub):
    run = sub.add_parser("run", help="run strategies on tasks and write result files")
    run.add_argument("--preset", help="ci, default or paper (bench/presets.py); the flags below override it")
    run.add_argument("--tasks", help="comma-separated task names (default: the preset's; without --preset: sudoku)")
    run.add_argument("--strategies", help="comma-separated specs, e.g. sequential,topk:k=7,order=margin "
                                          "(default: the preset's sweep per task)")
    run.add_argument("--seed", type=int, help="seed of every sampled choice (default: the preset's, 0)")
    run.add_argument("--limit", type=int, help="only the first N inputs (default: the preset's; all)")
    run.add_argument("--out", default="results", help="results folder (default: results)")
    run.add_argument("--batch-size", type=int, default=250, help="inputs decoded together (default 250)")
    run.add_argument("--data", help="input file for the task (Sudoku: CSV of puzzles)")
    run.add_argument("--model", help="model checkpoint for the task (default: the shipped one)")


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


def build_parser():
    parser = OneLineParser(prog="bench", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="tasks and strategies with their parameters and defaults")
    add_run(sub)
    add_compare(sub)
    report = sub.add_parser("report", help="Pareto plots and tables from result files only")
    report.add_argument("--results", default="results", help="results folder (default: results)")
    report.add_argument("--out", default="reports", help="figures folder (default: reports)")
    rescore = sub.add_parser("rescore", help="recompute result files' metrics from their records (no decoding)")
    rescore.add_argument("--results", default="results", help="results folder (default: results)")
    rescore.add_argument("--task", help="only this task's results (default: all)")
    train = sub.add_parser("train", help="train a task's model (weights ship in the repo)")
    train.add_argument("target", help="what to train: sudoku, protein (a task's model), mi (--task's MI estimator) "
                                      "or order (--task's learned order policy)")
    train.add_argument("settings", nargs="*", help="KEY=VALUE overrides, e.g. steps=100")
    train.add_argument("--out", help="where to write the checkpoint (default: the shipped path)")
    train.add_argument("--task", help="with target mi or order: the task whose model the helper reads")
    from bench.mi_cli import add_mi_parser
    add_mi_parser(sub)
    data = sub.add_parser("data", help="build a task's data sets (cached; the test set is committed)")
    data.add_argument("target", help="sudoku; protein (Swiss-Prot windows; needs: apt-get install "
                                     "metastudent-data mmseqs2); unirep (the protein judge's weights)")
    data.add_argument("--test-set", action="store_true", help="also rewrite the committed test set")
    return parser


def dispatch(args):
    if args.command == "list":
        from bench.commands import list_everything
        list_everything()
    elif args.command == "run":
        from bench.commands import run_tasks
        run_tasks(args)
    elif args.command == "report":
        from bench.report import report
        report(args.results, args.out)
    elif args.command == "rescore":
        from bench.rescore import rescore
        rescore(args.results, args.task)
    elif args.command == "compare":
        from bench.compare import compare
        return compare(args.base, args.new, args.fail_on)
    elif args.command == "train" and args.target == "mi":
        from bench.mi_cli import train_mi
        train_mi(args.task, args.settings, args.out)
    elif args.command == "train" and args.target == "order":
        from bench.order_train import train_order_cli
        train_order_cli(args.task, args.settings, args.out)
    elif args.command == "train":
        from bench.training import run_training
        run_training(args.target, args.settings, args.out)
    elif args.command == "mi":
        from bench.mi_cli import mi_command
        mi_command(args)
    elif args.command == "data":
        from bench.training import build_data
        build_data(args.target, args.test_set)
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
    args = parse(argv)
    try:
        return dispatch(args)
    except BenchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished runs and batches are kept; rerun the same command to resume",
              file=sys.stderr)
        return 130
