"""`bench throughput`: forward passes per second of each task's model at several batch sizes."""
from bench.commands.placement import add_placement
from bench.registry import TASKS, load_plugins, register_command

DEFAULT_BATCHES = "1,64,256,1024"
DEFAULT_SECONDS = 2.0


def add_arguments(parser):
    parser.add_argument("--tasks", help="comma-separated task names (default: every task)")
    parser.add_argument("--batches", default=DEFAULT_BATCHES, help="batch sizes (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS,
                        help="time per batch size, at least (default 2)")
    add_placement(parser)


@register_command("throughput", "forward passes per second of each task's model at several batch sizes",
                  add_arguments)
def throughput(args):
    from bench.run.throughput import throughput
    load_plugins()
    throughput(args.tasks or ",".join(sorted(TASKS)), args.batches, args.device, args.dtype, args.seconds)
