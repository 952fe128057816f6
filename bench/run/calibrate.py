"""`bench calibrate`: set one strategy knob so that a run's mean passes hit a budget.

Comparing strategies at equal passes by interpolating each sweep between its runs makes a
verdict depend on the interpolation (issue 29). Calibrating instead: on the task's validation
split, bisect one continuous parameter of a strategy until the mean passes over the inputs lie
within ``tolerance`` (2%) of the budget; the setting found is then run on the test inputs like
any spec. Mean passes must move monotonically with the parameter over the range given (the two
ends say which way); the bisection is on a log scale for a positive range. Nothing is written:
the command prints the spec to freeze into a preset (docs/report.md, "Calibrating a knob").
"""
import math
from dataclasses import dataclass, field

import torch

from bench.decode import decode
from bench.errors import BenchError
from bench.settings import BUDGET_TOLERANCE as TOLERANCE  # mean passes within 2% of the budget
from bench.settings import calibration_entries

MAX_STEPS = 30
MIN_WIDTH = 1e-4   # a bracket narrower than this (relative, or absolute for a range from 0) is not split


@dataclass
class Calibration:
    """The knob value found, its mean passes, whether they lie within tolerance, and every probe."""
    value: float
    passes: float
    within: bool
    probes: list = field(default_factory=list)   # (value, mean passes) in the order tried


def to_axis(value, positive):
    return math.log(value) if positive else value


def from_axis(x, positive):
    return math.exp(x) if positive else x


def next_probe(low, high, budget, passes_at):
    """The knob value to try between bracket ends ``low`` and ``high``: where the line through
    their (knob, passes) points meets the budget, in logs for a positive range (mean passes move
    about as a power of the knob), kept in the bracket's middle 80% so that a bent curve still
    halves it; the midpoint where the two ends give equal passes."""
    positive = low > 0
    x0, x1 = to_axis(low, positive), to_axis(high, positive)
    y0, y1, y = (math.log(max(v, 1e-9)) for v in (passes_at[low], passes_at[high], budget))
    t = 0.5 if y1 == y0 else min(max((y - y0) / (y1 - y0), 0.1), 0.9)
    return from_axis(x0 + t * (x1 - x0), positive)


def bracket(probes, budget, falling):
    """The two probes closest around ``budget`` (low knob, high knob); None where none lie on a side."""
    over = [v for v, p in probes if (p > budget) == falling]     # knob values whose passes lie on the low-knob side
    under = [v for v, p in probes if (p > budget) != falling]
    if not over or not under:
        return None
    return max(over), min(under)


def calibrate(measure, low, high, budget, tolerance=TOLERANCE, max_steps=MAX_STEPS, known=()):
    """The Calibration of ``measure`` (knob value -> mean passes) to ``budget`` over [low, high].

    ``known``: (value, mean passes) pairs already measured on the same inputs (a sweep's runs);
    where two of them bracket the budget the range's ends are not decoded. A one-line BenchError
    where the budget lies outside the passes the two ends give."""
    if not (low < high and budget > 0):
        raise BenchError(f"need low < high and a budget above 0, got range {low:g}..{high:g}, budget {budget:g}")
    probes = [(v, p) for v, p in known if low <= v <= high]
    ordered = sorted(probes)
    falling = len(ordered) >= 2 and ordered[-1][1] < ordered[0][1]
    if bracket(probes, budget, falling) is None:
        probes += [(low, measure(low)), (high, measure(high))]
        ends = sorted(p for p in (probes[-2][1], probes[-1][1]))
        if not ends[0] * (1 - tolerance) <= budget <= ends[1] * (1 + tolerance):
            raise BenchError(f"budget {budget:g} passes is outside what the knob's range gives "
                             f"({ends[0]:.2f}..{ends[1]:.2f} mean passes over {low:g}..{high:g}); widen the range")
        falling = probes[-1][1] < probes[-2][1]     # passes fall as the knob grows, or rise
    for _ in range(max_steps):
        best = min(probes, key=lambda p: abs(p[1] - budget))
        ends = bracket(probes, budget, falling)
        if abs(best[1] / budget - 1) <= tolerance or ends is None:
            break
        if ends[1] - ends[0] <= MIN_WIDTH * max(abs(ends[0]), 1.0):
            break                # mean passes jump across the budget here (a step function)
        value = next_probe(*ends, budget, dict(probes))
        probes.append((value, measure(value)))
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


def matching_params(template, knob):
    """(strategy name, {parameter: value} but ``knob``) of ``template``, defaults resolved as a run's
    identity records them, for finding a sweep's runs of the same line."""
    from bench.registry import parse_strategy, strategy_params
    strategy = parse_strategy(knob_spec(template, knob, 1.0))
    return strategy.name, {k: v for k, v in strategy_params(strategy).items() if k != knob}


def known_probes(template, knob, results, entries):
    """(knob value, mean passes) already measured on the calibration's inputs: the line's runs among
    ``results`` (validation summaries on the same inputs) and earlier ``entries``' probes of it."""
    from bench.results.summary import mean_passes
    name, fixed = matching_params(template, knob)
    probes = [tuple(p) for e in entries if e["template"] == template and e["knob"] == knob for p in e["probes"]]
    for r in results:
        params = r["config"]["strategy_params"]
        if r["strategy"] == name and all(params.get(k) == v for k, v in fixed.items()) and knob in params:
            probes.append((float(params[knob]), float(mean_passes(r))))
    return sorted(set(probes))


def write_entries(path, task_name, plan, entries):
    import json
    from pathlib import Path

    from bench.results import write_text_atomic
    data = Path(plan.data).name if plan.data else "the default"
    about = (f"written by `python -m bench calibrate --task {task_name} --budgets`: each knob set so that mean "
             f"passes lie within {TOLERANCE:.0%} of each budget on the validation split (data {data}, seed "
             f"{plan.seeds[0]}, {plan.limit or 'all'} inputs); the presets run every spec within it in the "
             f"default and paper tiers")
    write_text_atomic(path, json.dumps({"about": about, "runs": entries}, indent=1) + "\n")


def calibrate_budgets(task_name, validation_dir, only=None, progress=print, model=None):
    """Calibrate every Knob of ``task_name``'s BudgetCalibration to each of its Verdicts budgets
    on the validation split (``only``: the knobs whose template is named), writing the file after
    each one so that no finished calibration is lost (a later call keeps those within tolerance
    and searches the rest again); returns the entries. ``model``: the task's --model, whose own
    settings (``register_model_settings``) name its calibration. Bracketed by the
    validation runs under ``validation_dir`` on the same inputs and by earlier probes."""
    import time

    from bench.presets import validation_plan
    from bench.registry import make_task
    from bench.results import Store
    from bench.settings import task_settings
    settings = task_settings(task_name, model)
    if settings is None or settings.claims.calibration is None:
        raise BenchError(f"task {task_name!r} declares no budget calibration (bench.settings.BudgetCalibration)")
    cal = settings.claims.calibration
    plan = validation_plan(task_name, settings, limit=cal.limit)
    task = make_task(task_name, data=plan.data, model=model)
    network, eval_set = task.load_model(), task.eval_set(plan.limit, plan.seeds[0])
    same_inputs = [r for r in Store(validation_dir).runs()
                   if r["task"] == task_name and r["config"]["limit"] == plan.limit
                   and r["config"]["seed"] == plan.seeds[0] and r["model"]["id"] == network.checkpoint_id]
    # --only searches its knobs afresh and keeps the rest; a call without it keeps what is within tolerance
    entries = [e for e in calibration_entries(cal.file) if (e["template"] not in only if only else e["within"])]
    for knob in (k for k in cal.knobs if not only or k.template in only):
        measure = passes_measure(task, network, eval_set, knob.template, knob.knob, plan.seeds[0])
        for budget in settings.claims.verdicts.budgets:
            if any(e["template"] == knob.template and e["budget"] == budget and e["within"] for e in entries):
                continue     # found by an earlier call: kept
            start = time.perf_counter()
            known = known_probes(knob.template, knob.knob, same_inputs, entries)
            try:
                found = calibrate(measure, knob.low, knob.high, budget, known=known)
            except BenchError as err:
                progress(f"{knob.template} at {budget:g} passes: {err}")
                continue
            spec = knob_spec(knob.template, knob.knob, found.value)
            entries.append({"template": knob.template, "knob": knob.knob, "budget": budget, "spec": spec,
                            "value": found.value, "passes": found.passes, "within": found.within,
                            "probes": found.probes, "seconds": round(time.perf_counter() - start, 1)})
            write_entries(cal.file, task_name, plan, entries)
            progress(f"{spec}: {found.passes:.3f} mean passes at budget {budget:g} "
                     f"({'within' if found.within else 'NOT within'} {TOLERANCE:.0%}, "
                     f"{len(found.probes) - len(known)} decodes, {entries[-1]['seconds']:.0f} s)")
    return entries
