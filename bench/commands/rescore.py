"""`bench rescore`: result files' metrics recomputed from their records (no decoding)."""
from bench.commands.report import DEFAULT_RESULTS
from bench.registry import register_command


def add_arguments(parser):
    parser.add_argument("--results", default=DEFAULT_RESULTS, help=f"results folder (default: {DEFAULT_RESULTS})")
    parser.add_argument("--task", help="only this task's results (default: all)")
    parser.add_argument("--headline-only", action="store_true",
                        help="only point each summary's headline at the task's current one (a metric it "
                             "already stores, from an earlier rescore); nothing is recomputed")


@register_command("rescore", "recompute result files' metrics from their records (no decoding)", add_arguments)
def rescore(args):
    from bench.results.rescore import rescore
    rescore(args.results, args.task, args.headline_only)
