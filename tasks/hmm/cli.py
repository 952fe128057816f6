"""`bench orders`: the exact tasks' lower estimate of KL for runs that draw their order
(tasks/hmm/orders.py). Loaded to build the command line, so it imports no model code at the top."""
from bench.registry import register_command


def add_arguments(parser):
    parser.add_argument("--results", default="results", help="results folder (default: results)")
    parser.add_argument("--tasks", default="hmm,hmm_mdm", help="comma-separated, of hmm and hmm_mdm (default: both)")
    parser.add_argument("--orders", type=int, default=64, help="M, orders drawn per sample: even, at least 2 "
                                                                 "(default: 64)")
    parser.add_argument("--only", default="", help="only the runs whose label contains this text")
    parser.add_argument("--skip", default="", help="not the runs whose label contains this text")


@register_command("orders", "exact tasks: a lower estimate of KL(q||p) for runs that draw their order", add_arguments)
def orders_command(args):
    from tasks.hmm.orders import estimate_orders
    names = [t.strip() for t in args.tasks.split(",") if t.strip()]
    estimate_orders(args.results, names, args.orders, args.only, args.skip)
