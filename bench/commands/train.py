"""`bench train TARGET KEY=VALUE...`: a task's model or a helper network."""
from bench.commands.placement import add_placement
from bench.registry import register_command


def add_arguments(parser):
    parser.add_argument("target", help="a task name (its model) or a helper (`bench list` names them)")
    parser.add_argument("settings", nargs="*", help="KEY=VALUE overrides, e.g. steps=100")
    parser.add_argument("--out", help="where to write the checkpoint (default: the shipped path)")
    parser.add_argument("--task", help="with a helper target: the task whose model the helper reads")
    add_placement(parser)


@register_command("train", "train a task's model or a helper network (weights ship in the repo)", add_arguments)
def train(args):
    from bench.training import run_training
    run_training(args.target, args.settings, args.out, args.task, device=args.device, dtype=args.dtype)
