"""`bench calibrate`: set one strategy knob so that a run's mean passes hit a budget.

Comparing strategies at equal passes by interpolating each sweep between its runs makes a
verdict depend on the interpolation (issue 29). Calibrating instead: on the task's validation
split, bisect one continuous parameter of a strategy until the mean passes over the inputs lie
within ``tolerance`` (2%) of the budget; the setting found is then run on the test inputs like
any spec. Mean passes must move monotonically with the parameter over the range given (the two
ends say which way); the bisection is on a log scale for a positive range. Nothing is written:
the command prints the spec to freeze into a preset (docs/running.md).
"""
import math
from dataclasses import dataclass, field

import torch

from bench.decode import decode
from bench.errors import BenchError

TOLERANCE = 0.02     # mean passes within 2% of the budget
MAX_STEPS = 30


@dataclass
class Calibration:
    """The knob value found, its mean passes, whether they lie within tolerance, and every probe."""
    value: float
    passes: float
    within: bool
    probes: list = field(default_factory=list)   # (value, mean passes) in the order tried


def midpoint(low, high):
    return math.sqrt(low * high) if low > 0 else (low + high) / 2


def calibrate(measure, low, high, budget, tolerance=TOLERANCE, max_steps=MAX_STEPS):
    """The Calibration of ``measure`` (knob value -> mean passes) to ``budget`` over [low, high].

    A one-line BenchError where the budget lies outside the passes the two ends give."""
    if not (low < high and budget > 0):
        raise BenchError(f"need low < high and a budget above 0, got range {low:g}..{high:g}, budget {budget:g}")
    probes = [(low, measure(low)), (high, measure(high))]
    ends = sorted(p for _, p in probes)
    if not ends[0] * (1 - tolerance) <= budget <= ends[1] * (1 + tolerance):
        raise BenchError(f"budget {budget:g} passes is outside what the knob's range gives "
                         f"({ends[0]:.2f}..{ends[1]:.2f} mean passes over {low:g}..{high:g}); widen the range")
    falling = probes[1][1] < probes[0][1]     # passes fall as the knob grows, or rise
    for _ in range(max_steps):
        best = min(probes, key=lambda p: abs(p[1] - budget))
        if abs(best[1] / budget - 1) <= tolerance:
            return Calibration(best[0], best[1], True, probes)
        value = midpoint(low, high)
        passes = measure(value)
        probes.append((value, passes))
        if (passes > budget) == falling:
            low = value
        else:
            high = value
    best = min(probes, key=lambda p: abs(p[1] - budget))
    return Calibration(best[0], best[1], abs(best[1] / budget - 1) <= tolerance, probes)


def knob_spec(template, knob, value):
    """'NAME:KNOB=VALUE' from template 'NAME' (its other parameters kept: 'NAME:a=1' gives
    'NAME:a=1,KNOB=VALUE'), the value to 6 significant digits."""
    return f"{template}{',' if ':' in template else ':'}{knob}={value:.6g}"


def passes_measure(task, model, eval_set, template, knob, seed=0, batch_size=250):
    """knob value -> mean passes of ``knob_spec(template, knob, value)``, decoding ``eval_set`` in
    batches as `bench run` does (the task's value temperature, each input's own random stream)."""
    from bench.registry import parse_strategy

    def measure(value):
        strategy = parse_strategy(knob_spec(template, knob, value))
        strategy.bind(task, model)
        passes = []
        with torch.inference_mode():
            for start in range(0, len(eval_set.tokens), batch_size):
                rows = torch.arange(start, min(start + batch_size, len(eval_set.tokens)))
                result = decode(model, eval_set.tokens[rows], eval_set.masked[rows], strategy, task.temperature,
                                seed=seed, index=rows)
                passes.append(result.passes)
        return float(torch.cat(passes).float().mean())
    return measure


def split_inputs(task_name, limit=None):
    """(task, model, inputs, seed) of ``task_name``'s validation split (its declared Validation);
    a one-line BenchError for a task without one."""
    from bench.presets import validation_plan
    from bench.registry import make_task
    from bench.settings import task_settings
    plan = validation_plan(task_name, task_settings(task_name), limit=limit)   # its specs are not used
    task = make_task(task_name, data=plan.data)
    return task, task.load_model(), task.eval_set(plan.limit, plan.seeds[0]), plan.seeds[0]
