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
    parser.add_argument("--model-results", action="append", default=[], metavar="LABEL=DIR",
                        help="the runs of another model a task declares (its settings' other_models: the "
                             "model's label, then its results folder), its validation folder beside it; repeatable "
                             "(default: the declared folder beside --results's parent; absent: 'not run')")
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
    folders = Folders.beside(args.results, args.validation, args.retrained, model_results(args.model_results))
    report(args.results, out, args.docs if args.docs is not None else default_docs(args.results, out), folders)


def model_results(given):
    """{label: folder} of each --model-results LABEL=DIR; a malformed one or a DIR that is not a
    folder is a one-line error."""
    from pathlib import Path

    from bench.errors import BenchError
    found = {}
    for entry in given:
        label, _, folder = entry.partition("=")
        if not label or not folder:
            raise BenchError(f"--model-results {entry}: give LABEL=DIR (a label the task settings' "
                             f"other_models declare, then a results folder)")
        if not Path(folder).is_dir():
            raise BenchError(f"--model-results {entry}: no such folder; give a folder of result files "
                             f"(bench run --out)")
        found[label] = folder
    return found
