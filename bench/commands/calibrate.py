"""`bench calibrate`: a strategy knob set to hit a pass budget on the task's validation split;
with ``--budgets``, every knob the task's budget table calibrates at each of its budgets."""
from pathlib import Path

from bench.registry import register_command


def add_arguments(parser):
    parser.add_argument("--task", required=True, help="the task (its validation split: bench.settings.Validation)")
    parser.add_argument("--strategy", help="the strategy spec without the knob (NAME or NAME:k=v,...)")
    parser.add_argument("--knob", help="the continuous parameter of the strategy to set")
    parser.add_argument("--budget", type=float, help="the mean passes to hit")
    parser.add_argument("--range", metavar="LOW,HIGH", help="the knob's range to search")
    parser.add_argument("--limit", type=int, help="only the first N validation inputs (default: the split's)")
    parser.add_argument("--budgets", action="store_true",
                        help="calibrate every knob the task's budget table declares at each of its budgets, "
                             "writing the file its presets read (bench.settings.BudgetCalibration)")
    parser.add_argument("--only", help="with --budgets: only these comma-separated knob templates, as the "
                                       "task's settings name them")
    parser.add_argument("--model", help="with --budgets: the task's --model whose budget table is calibrated "
                                        "(its own settings: bench.settings.register_model_settings)")
    parser.add_argument("--validation",
                        help="with --budgets: the folder of the task's validation runs, which bracket the search "
                             "(default: validation; it must exist)")


@register_command("calibrate", "set a strategy knob so that mean passes hit a budget on the validation split",
                  add_arguments)
def calibrate_command(args):
    from bench.errors import BenchError
    from bench.run.calibrate import TOLERANCE, calibrate, knob_spec, passes_measure, split_inputs
    if args.budgets:
        return calibrate_table(args)
    if args.model is not None:
        raise BenchError("--model is read only with --budgets (the knob search of one strategy runs the task's "
                         "own model)")
    if args.validation is not None:
        raise BenchError("--validation is read only with --budgets (the knob search of one strategy "
                         "decodes the validation split itself)")
    missing = [f"--{name}" for name in ("strategy", "knob", "budget", "range") if getattr(args, name) is None]
    if missing:
        raise BenchError(f"calibrate needs {', '.join(missing)} (or --budgets for the task's budget table)")
    low, high = parse_range(args.range)
    task, model, eval_set, seed = split_inputs(args.task, args.limit)
    found = calibrate(passes_measure(task, model, eval_set, args.strategy, args.knob, seed), low, high, args.budget)
    for value, passes in found.probes:
        print(f"  {knob_spec(args.strategy, args.knob, value)}: {passes:.3f} mean passes")
    verdict = "within" if found.within else "NOT within"
    print(f"{knob_spec(args.strategy, args.knob, found.value)}: {found.passes:.3f} mean passes on "
          f"{len(eval_set.tokens)} validation inputs of {args.task}, {verdict} {TOLERANCE:.0%} of {args.budget:g}")
    return 0 if found.within else 1


def calibrate_table(args):
    """`--budgets`: every knob of the task's BudgetCalibration at each budget; exit 1 where one
    is not within tolerance."""
    from bench.errors import BenchError
    from bench.registry import split_specs
    from bench.run.calibrate import calibrate_budgets
    if any(getattr(args, name) is not None for name in ("strategy", "knob", "budget", "range", "limit")):
        raise BenchError("--budgets takes the knobs, ranges and inputs from the task's settings; "
                         "give it without --strategy, --knob, --budget, --range and --limit")
    only = split_specs(args.only) if args.only else None
    validation = Path(args.validation or "validation")
    if not validation.is_dir():
        raise BenchError(f"--validation {validation}: no such folder; give the folder of the task's validation "
                         "runs (bench run --preset validation writes validation/)")
    entries = calibrate_budgets(args.task, validation, only, model=args.model)
    return 0 if all(e["within"] for e in entries) else 1


def parse_range(text):
    from bench.errors import BenchError
    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError:
        raise BenchError(f"--range must be LOW,HIGH (two numbers), got {text!r}") from None
    return low, high
