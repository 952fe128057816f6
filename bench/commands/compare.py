"""`bench compare BASE NEW`: the regression gate."""
import argparse

from bench.registry import register_command


def add_arguments(parser):
    from bench.report.compare import DEFAULT_FAIL_ON, FAIL_ON_HELP  # numpy only, no model code
    parser.description, parser.formatter_class = FAIL_ON_HELP, argparse.RawDescriptionHelpFormatter
    parser.add_argument("base", help="baseline: a results folder or one result .json")
    parser.add_argument("new", help="the results to check: a folder or one result .json")
    parser.add_argument("--fail-on", default=DEFAULT_FAIL_ON,
                        help="METRIC:LIMIT,... allowed worsening per metric (default: %(default)s; see above)")
    parser.add_argument("--allow-missing", action="append", default=[], metavar="TASK/RUN",
                        help="a BASE run that NEW may lack (repeatable), TASK/NAME:KEY=VALUE as the table shows it; "
                             "any other missing run is a regression")


@register_command("compare", "compare two sets of results; exit 1 on a regression", add_arguments)
def compare(args):
    from bench.report.compare import compare
    return compare(args.base, args.new, args.fail_on, allow_missing=args.allow_missing)
