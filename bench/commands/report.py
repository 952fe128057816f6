"""`bench report`: figures and tables from result files only."""
from bench.registry import register_command

DEFAULT_RESULTS = "results"


def add_arguments(parser):
    parser.add_argument("--results", default=DEFAULT_RESULTS, help=f"results folder (default: {DEFAULT_RESULTS})")
    parser.add_argument("--out", help="figures folder, a folder you can write (default: beside the results: "
                                      "reports/ for the committed results/, DIR/reports for --results DIR)")
    parser.add_argument("--validation", help="the validation runs the claims' choices are made on (default: the "
                                             "folder validation beside --results)")
    parser.add_argument("--retrained", help="the runs on retrained helpers the ablations are checked on (default: "
                                            "the folder retrained beside --results)")
    parser.add_argument("--docs", help="folder whose .md files get their report tables rewritten between "
                                       "markers (default: the checkout when the committed results/ write the "
                                       "committed reports/, else none)")


@register_command("report", "Pareto plots and tables from result files only", add_arguments)
def report(args):
    from pathlib import Path

    from bench.errors import BenchError
    from bench.report.build import Folders, default_docs, report, report_folder
    for flag, folder in (("--validation", args.validation), ("--retrained", args.retrained)):
        if folder is not None and not Path(folder).is_dir():
            raise BenchError(f"{flag} {folder}: no such folder; give a folder of result files (bench run --out)")
    out = report_folder(args.results, args.out)
    folders = Folders.beside(args.results, args.validation, args.retrained)
    report(args.results, out, args.docs if args.docs is not None else default_docs(args.results, out), folders)
