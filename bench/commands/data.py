"""`bench data TARGET`: build a data set a task names."""
from bench.registry import register_command


def add_arguments(parser):
    parser.add_argument("target", help="what to build")
    parser.add_argument("--test-set", action="store_true",
                        help="also rewrite the committed test set, where one is built")
    parser.add_argument("--validation-set", action="store_true",
                        help="also rewrite the committed validation set (where choices are made), where one is built")


@register_command("data", "build a data set a task names (`bench list` names them)", add_arguments)
def data(args):
    from bench.training import build_data
    build_data(args.target, args)
