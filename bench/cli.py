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

import bench.commands  # noqa: F401  (registers the core commands, as plugins' cli modules register theirs)
from bench.allocator import keep_freed_memory
from bench.errors import BenchError
from bench.registry import COMMANDS, load_plugins


class OneLineParser(argparse.ArgumentParser):
    """argparse with usage errors as one line, exit 2."""

    def error(self, message):
        self.exit(2, f"error: {message} (see: {self.prog} --help)\n")


def build_parser():
    """The parser: every command registered, core (bench.commands) and the plugins' (their ``cli``
    modules), each declaring its own arguments (these modules import no model code, so
    `bench --help`, `report` and `compare` start without torch)."""
    parser = OneLineParser(prog="bench", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    load_plugins("cli")
    for command in COMMANDS.values():
        command.add_arguments(sub.add_parser(command.name, help=command.help))
    return parser


def dispatch(args):
    """Run the command ``args`` name; its exit status (0 unless it returns another)."""
    return COMMANDS[args.command].run(args) or 0


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
