"""`bench calibrate`: a strategy knob set to hit a pass budget on the task's validation split."""
from bench.registry import register_command


def add_arguments(parser):
    parser.add_argument("--task", required=True, help="the task (its validation split: bench.settings.Validation)")
    parser.add_argument("--strategy", required=True, help="the strategy spec without the knob (NAME or NAME:k=v,...)")
    parser.add_argument("--knob", required=True, help="the continuous parameter of the strategy to set")
    parser.add_argument("--budget", type=float, required=True, help="the mean passes to hit")
    parser.add_argument("--range", required=True, metavar="LOW,HIGH", help="the knob's range to search")
    parser.add_argument("--limit", type=int, help="only the first N validation inputs (default: the split's)")


@register_command("calibrate", "set a strategy knob so that mean passes hit a budget on the validation split",
                  add_arguments)
def calibrate_command(args):
    from bench.calibrate import TOLERANCE, calibrate, knob_spec, passes_measure, split_inputs
    low, high = parse_range(args.range)
    task, model, eval_set, seed = split_inputs(args.task, args.limit)
    found = calibrate(passes_measure(task, model, eval_set, args.strategy, args.knob, seed), low, high, args.budget)
    for value, passes in found.probes:
        print(f"  {knob_spec(args.strategy, args.knob, value)}: {passes:.3f} mean passes")
    verdict = "within" if found.within else "NOT within"
    print(f"{knob_spec(args.strategy, args.knob, found.value)}: {found.passes:.3f} mean passes on "
          f"{len(eval_set.tokens)} validation inputs of {args.task}, {verdict} {TOLERANCE:.0%} of {args.budget:g}")
    return 0 if found.within else 1


def parse_range(text):
    from bench.errors import BenchError
    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError:
        raise BenchError(f"--range must be LOW,HIGH (two numbers), got {text!r}") from None
    return low, high
