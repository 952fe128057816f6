"""`bench train TARGET KEY=VALUE...`: a task's model or a helper network."""
from bench.commands.placement import add_placement
from bench.errors import BenchError
from bench.registry import register_command


def add_arguments(parser):
    parser.add_argument("target", help="a task name (its model) or a helper (`bench list` names them)")
    parser.add_argument("settings", nargs="*", help="KEY=VALUE overrides, e.g. steps=100")
    parser.add_argument("--out", help="where to write the checkpoint (default: the shipped path)")
    parser.add_argument("--task", help="with a helper target: the task whose model the helper reads")
    parser.add_argument("--model", help="with a helper target: the task's --model whose hidden states the helper "
                                        "reads (default: the task's own model)")
    parser.add_argument("--same-as", dest="same_as", metavar="SHIPPED",
                        help="after training to --out, compare its weights (and those of the files written "
                             "beside it) with SHIPPED's; exit 1 where any differ (a shipped checkpoint "
                             "reproduced from its logged command)")
    parser.add_argument("--overwrite", action="store_true",
                        help="let --out replace a shipped (git-tracked) file; without it that is refused")
    add_placement(parser)


@register_command("train", "train a task's model or a helper network (weights ship in the repo)", add_arguments)
def train(args):
    from bench.training import check_out, check_same_weights, run_training, same_as_file
    if args.same_as and not args.out:
        raise BenchError("--same-as needs --out: train to another file, then compare it with the shipped one")
    if args.out:
        check_out(args.out, args.same_as, args.overwrite)
    with same_as_file(args.same_as):
        run_training(args.target, args.settings, args.out, args.task, device=args.device, dtype=args.dtype,
                     model=args.model)
    if args.same_as:
        return check_same_weights(args.out, args.same_as)
