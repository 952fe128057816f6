"""`bench migrate FOLDER...`: result files made before the run identity split, brought to today's
format in place (bench.results.migrate)."""
from bench.registry import register_command


def add_arguments(parser):
    parser.add_argument("folders", nargs="+", help="result folders to migrate in place (e.g. results validation)")


@register_command("migrate", "bring result files of an older format to today's, in place (records unchanged)",
                  add_arguments)
def migrate(args):
    from pathlib import Path

    from bench.errors import BenchError
    from bench.results.migrate import migrate
    missing = [f for f in args.folders if not Path(f).is_dir()]
    if missing:
        raise BenchError(f"no such folder: {missing[0]}; give result folders (e.g. results validation)")
    left = migrate(args.folders)
    if left:
        raise BenchError(f"{left} result file(s) not migrated (each named above as 'not migrated'); "
                         f"remake those runs or restore their files")
