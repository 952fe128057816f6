"""`bench plan`: what a `bench run` will cost before it runs, and what it cost after.

For every run of the command (a preset, or --tasks/--strategies), the plan gives its expected
passes per input, its expected seconds and its physical limit, the seconds its forward passes
alone take (row-passes x the measured seconds of one row's forward pass at the run's batch shape).

- Expected passes come from a committed result of the same task, strategy and model
  (``results/``, any input count), or else from a pilot: the first PILOT_INPUTS inputs decoded.
- Expected seconds: row-passes x the forward seconds measured here x the strategy family's cost
  factor (its committed runs' seconds per row-pass relative to the cheapest family's on the same
  committed set: that one spends almost nothing besides the forward pass, so the ratio is what the
  strategy adds: estimator calls, bookkeeping, the ragged tail of a batch; ``family_factors``),
  less the first pass a run takes from the task's shared FirstPasses, plus scoring: the records
  (a judge, metrics) and the summary (bootstrap CIs), timed here on a pilot (``ScoringPrice``).
  A strategy with no committed run has factor 1 (its forward passes alone).
- A run complete in --out costs its --verify inputs decoded again and scored, at the shape they
  run at: the verification rows of all the task's complete runs in one forward call a pass.

`bench run` prints the same plan as its first lines and, per task, the planned and actual time.
"""
import functools
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from bench.decode import fill_values, forward
from bench.provenance import REPO
from bench.registry import canonical
from bench.results import Store
from bench.run.cell import complete_run, decode_rows
from bench.run.verify import SHARED_ROWS, verified_rows

PILOT_INPUTS = 4      # inputs a run without a committed reference decodes to learn its passes
SCORING_PILOT = 32    # inputs whose records are made and timed to price scoring
TIMED_CALLS = 5       # forward calls timed per shape (after one warm-up call): the fastest counts (2 varied the
#                       default tier's plan by 25% between invocations on the 2-core VM)
COMMITTED = REPO / "results"


@dataclass
class Estimate:
    """One run's plan: inputs to decode, passes per input, seconds expected and at the limit."""
    label: str
    inputs: int
    passes: float
    seconds: float
    forward_seconds: float
    source: str


def committed_references(task_name, model_id, root=COMMITTED):
    """{strategy spec: summary} of ``root``'s complete runs of a task on one model (the largest
    run of each spec, at temperature as recorded)."""
    found = Store(Path(root) / task_name).runs(quiet=True)
    references = {}
    for summary in found:
        if summary["task"] != task_name or summary["config"].get("model_id") != model_id:
            continue
        spec = summary["config"]["strategy_spec"]
        if spec not in references or summary["n_samples"] > references[spec]["n_samples"]:
            references[spec] = summary
    return references


def metric_value(summary, name):
    return next((m["value"] for m in summary["metrics"] if m["name"] == name), 0.0)


def row_passes(summary):
    """Forward passes of rows a committed run spent, probing passes included."""
    aux = sum(m["value"] for m in summary["metrics"] if m["name"].endswith("_passes"))
    return summary["n_samples"] * (metric_value(summary, "passes") + aux)


def computed_row_passes(summary):
    """Forward passes a committed run computed itself (a first pass it took from the shared
    FirstPasses, ``first_pass_shared_rows``, cost it nothing)."""
    return row_passes(summary) - summary.get("first_pass_shared_rows", 0)


def seconds_per_row_pass(summary):
    """A committed run's decoding seconds per forward pass it computed."""
    return summary["wall_seconds"] / max(computed_row_passes(summary), 1)


def forward_row_seconds(model, eval_set, rows):
    """Seconds of one row's forward pass when ``rows`` inputs are decoded together: the fastest of
    TIMED_CALLS calls on the first ``rows`` inputs in their start state, after a warm-up call."""
    index = torch.arange(rows) % len(eval_set)
    tokens, masked = eval_set.tokens[index], eval_set.masked[index]
    with torch.inference_mode():
        model(tokens, masked)
        spent = []
        for _ in range(TIMED_CALLS):
            start = time.perf_counter()
            model(tokens, masked)
            spent.append(time.perf_counter() - start)
    return min(spent) / rows


def family_factors(references):
    """{strategy name: cost factor}: the smallest seconds per row-pass among a strategy's committed
    runs, over the cheapest family's (one that spends almost nothing besides the forward pass).
    The smallest, because whatever else ran on the machine that made them only ever added time
    (committed runs of one family differ by up to 8x for that reason alone)."""
    best = {}
    for summary in references.values():
        if computed_row_passes(summary) < summary["n_samples"]:
            continue   # a one-pass run whose pass came from the shared first pass prices nothing
        name = summary["config"]["strategy_spec"].partition(":")[0]
        best[name] = min(best.get(name, float("inf")), seconds_per_row_pass(summary))
    base = min(best.values(), default=0)
    return {name: max(1.0, value / base) for name, value in best.items()} if base > 0 else {}


class ScoringPrice:
    """What scoring a run costs on this machine: making its records (per input: a judge, metrics)
    and its summary (bootstrap CIs, which grow with the input count). Timed on a pilot: the first
    SCORING_PILOT inputs completed by one argmax pass, their records made; the summary timed on
    those records repeated to the run's input count."""

    def __init__(self, task, model, eval_set):
        self.task, self.eval_set = task, eval_set
        rows = torch.arange(min(SCORING_PILOT, len(eval_set)))
        tokens, masked = eval_set.tokens[rows], eval_set.masked[rows]
        with torch.inference_mode():
            filled, _ = fill_values(tokens, forward(model, tokens, masked, 0), masked, model.value_tokens)
        start = time.perf_counter()
        self.records = task.records(filled, masked.sum(1), rows, eval_set)
        self.per_input = (time.perf_counter() - start) / max(len(rows), 1)
        if task.temperature > 0:   # sampled runs' records carry log q (an exact task's KL reads it)
            for record in self.records:
                record["log_q"] = 0.0
        self.summary_seconds = {}

    def summary(self, inputs):
        if inputs not in self.summary_seconds:
            tiled = [dict(self.records[i % len(self.records)], index=i) for i in range(inputs)]
            start = time.perf_counter()
            self.task.summarize(tiled)
            self.summary_seconds[inputs] = time.perf_counter() - start
        return self.summary_seconds[inputs]

    def seconds(self, inputs, summarised=True):
        return inputs * self.per_input + (self.summary(inputs) if summarised else 0.0)


class TaskPricer:
    """Prices the runs of one task on one model: the committed references, each strategy family's
    cost factor on them and the forward seconds measured here, per batch shape (measured once)."""

    def __init__(self, task, model, eval_set):
        self.task, self.model, self.eval_set = task, model, eval_set
        self.references = committed_references(task.name, model.checkpoint_id)
        self.factors = family_factors(self.references)
        self.row_seconds = {}

    @functools.cached_property
    def scoring(self):
        """Timed when first needed (a plan of complete runs with --verify 0 scores nothing)."""
        return ScoringPrice(self.task, self.model, self.eval_set)

    def forward(self, rows):
        """Seconds of one row's pass at a call of ``rows`` rows (a shared verification's may
        exceed the inputs: the rows of many runs)."""
        rows = max(1, rows)
        if rows not in self.row_seconds:
            self.row_seconds[rows] = forward_row_seconds(self.model, self.eval_set, rows)
        return self.row_seconds[rows]

    def per_input(self, run):
        """(passes per input, row-passes per input, cost factor, source) of a run's strategy."""
        strategy = run.strategy
        reference = self.references.get(canonical(strategy))
        factor = self.factors.get(strategy.name, 1.0)
        if reference is not None:
            rows = row_passes(reference) / reference["n_samples"]
            return metric_value(reference, "passes"), rows, factor, "committed"
        count = min(PILOT_INPUTS, len(self.eval_set))
        records, _ = decode_rows(run, torch.arange(count))   # the pilot decodes as the run will
        passes = sum(r["passes"] for r in records) / count
        aux = sum(v for r in records for k, v in r.items() if k.endswith("_passes")) / count
        return passes, passes + aux, factor, f"pilot of {count}"

    def estimate(self, run, label, inputs, shape, *, shared_first=False, summarised=True):
        """``shape``: rows of the forward calls the run's passes go through (its batch; for a
        verification, the rows of all the runs verified together); ``shared_first``: the run's
        first pass comes from the task's FirstPasses (another run of the invocation computed
        it), one row-pass per input less; ``summarised``: a summary is written (a verification
        makes records only)."""
        passes, rows, factor, source = self.per_input(run)
        per_row = self.forward(shape)
        saved = inputs * per_row if shared_first else 0.0
        forward = inputs * rows * per_row
        seconds = forward * factor - saved + (self.scoring.seconds(inputs, summarised) if inputs else 0.0)
        return Estimate(label, inputs, passes, seconds, forward - saved, source)


def minutes(seconds):
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def print_plan(task_name, estimates, out=None):
    """The plan's lines for one task (on ``out``, default stderr): each run, then the total and
    the physical limit."""
    out = out or sys.stderr
    print(f"plan for {task_name}: {len(estimates)} runs", file=out)
    for e in estimates:
        print(f"  {e.label}: {e.inputs} inputs x {e.passes:.1f} passes, {minutes(e.seconds)} "
              f"(forward passes alone {minutes(e.forward_seconds)}; passes from {e.source})", file=out)
    total, limit = sum(e.seconds for e in estimates), sum(e.forward_seconds for e in estimates)
    print(f"  total {minutes(total)} expected; the forward passes alone {minutes(limit)}", file=out)
    return total


def print_whole_plan(task_runs_list, args, out=None):
    """Every task's plan, then the invocation's total; returns each task's planned seconds."""
    import torch
    out = out or sys.stderr
    planned = [print_plan(f"{t.task.name} seed {t.seed}", plan_task(t, args), out=out) for t in task_runs_list]
    print(f"total {minutes(sum(planned))} expected on this machine ({torch.get_num_threads()} torch threads)", file=out)
    return planned


def plan_task(task_runs, args):
    """Estimates of one task's runs (``task_runs``: bench.run.cell.TaskRuns) for `bench run` with
    ``args``: a run complete in --out costs its --verify inputs decoded again, at the shape they
    run at (the complete runs' verification rows together, up to SHARED_ROWS: bench.run.verify.
    verify_runs), any other its whole input set at its batch size."""
    pricer, estimates, first_done = TaskPricer(task_runs.task, task_runs.model, task_runs.eval_set), [], set()
    runs = task_runs.runs(args)
    complete = {id(run): found for run in runs if (found := complete_run(run, say=False)) is not None}
    shared = min(sum(verified_rows(run, complete[id(run)]) for run in runs if id(run) in complete), SHARED_ROWS)
    for run in runs:
        found = complete.get(id(run))
        inputs = verified_rows(run, found) if found else len(run.eval_set)
        if inputs:
            shape = shared if found else min(args.batch_size, inputs)
            label = run.label + (" (verify)" if found else "")
            first = (inputs, inputs if found else args.batch_size)   # a verification's first pass: its own rows
            estimates.append(pricer.estimate(run, label, inputs, shape, shared_first=first in first_done,
                                             summarised=not found))
            first_done.add(first)
    return estimates
