"""Verdicts over a task's runs on shared inputs: quality at equal pass budgets, the area under each
strategy's frontier, non-inferiority to a reference run, and paired ablations. From result files only.

One joint bootstrap over the inputs every run shares gives all the intervals: each replicate
resamples input indices once, and every run's mean passes and headline metric are recomputed on
that same resample, so differences between strategies keep their pairing.
"""
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.paired import (
    N_BOOT,
    STATISTICS,
    PerInput,
    better_sign,
    chunked,
    paired_difference,
    per_input,
    replicate_indices,
)
from bench.report.sweeps import metric_of
from bench.results import run_records
from bench.stats import percentile_interval

AREA_POINTS = 25  # log-spaced budgets the frontier area averages over


@dataclass
class ScoredRun:
    """A result with its headline and passes recomputable per input."""
    summary: dict
    quality: PerInput
    passes: PerInput
    label: str = field(init=False)

    def __post_init__(self):
        self.label = self.summary["label"]


def records_index(root):
    """{records file name: path} of every JSONL under ``root`` (names carry the run hash)."""
    return {p.name: p for p in Path(root).rglob("*.jsonl") if not p.name.endswith(".partial.jsonl")}


def load_runs(results, root):
    """Runs of ``results`` whose headline can be recomputed from their records, restricted to the
    largest set sharing the same input indices; returns (runs, inputs left out as a count of runs)."""
    index, runs = records_index(root), []
    for result in results:
        path = index.get(result.get("records_file", ""))
        if path is None:
            continue
        headline = metric_of(result, result["headline"])
        if headline is None:   # a run without the task's headline (a re-masking sampler's exact-task KL)
            continue
        records = run_records(result, path)
        quality = per_input(headline, records)
        passes = per_input({"name": "passes", "higher_is_better": False,
                            "per_input": {"statistic": "mean", "fields": ["passes"]}}, records)
        if quality is not None:
            runs.append((tuple(r["index"] for r in records), ScoredRun(result, quality, passes)))
    if not runs:
        return [], len(results)
    keys = [key for key, _ in runs]
    common = max(set(keys), key=keys.count)
    kept = [run for key, run in runs if key == common]
    return merge_seeds(kept), len(results) - len(kept)


def merge_seeds(runs):
    """One ScoredRun per strategy spec, its seeds pooled input by input: a resampled input index brings
    every seed's record of that index (seeds nested in inputs). Pairing across strategies holds input
    by input even where they ran different seeds (a sampled sweep's runs may have three, a
    deterministic rule one): each side's per-input value is its own seeds' mean."""
    by_spec = {}
    for run in runs:
        by_spec.setdefault(run.summary["config"]["strategy_spec"], []).append(run)
    return [pool_seeds(group) for group in by_spec.values()]


def pool_seeds(group):
    """A ScoredRun whose per-input columns hold the seeds' records together: per-input values averaged over
    the seeds (means, mean differences, per-sequence values), counts added (ratios, pooled JSDs)."""
    if len(group) == 1:
        return group[0]

    def combine(parts):
        columns = [sum(p.columns[k] for p in parts) for k in range(len(parts[0].columns))]
        if STATISTICS[parts[0].statistic].pooled == "mean":   # per-input values averaged, counts added
            columns = [c / len(parts) for c in columns]
        return PerInput(parts[0].name, parts[0].statistic, columns, parts[0].higher_is_better, parts[0].extra)
    seeds = sorted(r.summary["config"]["seed"] for r in group)
    summary = dict(group[0].summary, pooled_seeds=seeds)
    return ScoredRun(summary, combine([r.quality for r in group]), combine([r.passes for r in group]))


def params(run):
    return run.summary["config"]["strategy_params"]


def same(value, wanted):
    """A run's parameter against a wanted one: numbers as floats, booleans and strings exactly; a run
    made before the parameter existed (None) matches nothing."""
    if value is None or isinstance(wanted, bool) or isinstance(value, bool):
        return value is wanted                       # JSON's true/false/null are singletons
    if isinstance(wanted, (int, float)):
        return float(value) == float(wanted)
    return value == wanted


def select_line(runs, strategy, where=None):
    """Runs of ``strategy`` whose parameters match ``where`` (numbers compared as floats), by passes."""
    def matches(run):
        wanted = (where or {}).items()
        return run.summary["strategy"] == strategy and all(same(params(run).get(k), v) for k, v in wanted)
    return sorted([r for r in runs if matches(r)], key=lambda r: r.passes())


def interpolate(passes, quality, budget):
    """Quality at ``budget`` on the line through (passes, quality) points, linear in log passes;
    NaN outside the points' range. Works on [R, m] replicate arrays (returns [R]) or [m] points."""
    passes, quality = np.atleast_2d(passes), np.atleast_2d(quality)
    order = np.argsort(passes, axis=1)
    x = np.log(np.take_along_axis(passes, order, 1))
    y = np.take_along_axis(quality, order, 1)
    values = np.array([np.interp(np.log(budget), xr, yr, left=np.nan, right=np.nan) for xr, yr in zip(x, y)])
    return values if len(values) > 1 else values[0]


@dataclass
class Line:
    """One strategy's sweep with its point values and bootstrap replicates."""
    name: str
    runs: list
    passes: np.ndarray        # [m] point values
    quality: np.ndarray       # [m]
    boot_passes: np.ndarray   # [R, m]
    boot_quality: np.ndarray  # [R, m]

    def at(self, budget):
        """(point value, replicates [R]) of the quality at ``budget``."""
        return (interpolate(self.passes, self.quality, budget),
                interpolate(self.boot_passes, self.boot_quality, budget))

    def area(self, low, high):
        """(point, replicates) of the mean quality over log-spaced budgets in [low, high]."""
        grid = np.exp(np.linspace(np.log(low), np.log(high), AREA_POINTS))
        points = [self.at(b) for b in grid]
        return float(np.mean([p for p, _ in points])), np.mean([r for _, r in points], axis=0)


def make_line(name, runs, idx):
    boot_p = np.stack([chunked(r.passes, idx) for r in runs], 1) if runs else np.zeros((len(idx), 0))
    boot_q = np.stack([chunked(r.quality, idx) for r in runs], 1) if runs else np.zeros((len(idx), 0))
    return Line(name, runs, np.array([r.passes() for r in runs]), np.array([r.quality() for r in runs]),
                boot_p, boot_q)


def interval(replicates, level=0.95):
    """(low, high) percentile interval of replicates, NaN replicates left out."""
    kept = replicates[~np.isnan(replicates)]
    return percentile_interval(kept, level) if len(kept) else (np.nan, np.nan)


def centred(replicates, value, distance):
    """The replicates intervals and p-values are read from: reflected about the point value
    (2v - r: the basic bootstrap) for a plug-in distance (a statistic registered as one), whose
    replicates are biased upwards; otherwise as they are (the percentile bootstrap)."""
    return 2 * value - replicates if distance else replicates


def is_distance(lines):
    """Whether the lines' quality metric is a plug-in distance (its statistic registered as one)."""
    return any(line.runs and line.runs[0].quality.distance for line in lines)


def bootstrap_p(replicates):
    """Two-sided bootstrap p-value that the difference is 0: 2 * min share of replicates on either side."""
    kept = replicates[~np.isnan(replicates)]
    if not len(kept):
        return np.nan
    return float(min(1.0, 2 * min((kept <= 0).mean(), (kept >= 0).mean())))


@dataclass
class BudgetCell:
    value: float
    low: float
    high: float
    best: bool = False      # best at this budget with its paired CI excluding the runner-up


@dataclass
class Lead:
    """The best line at a budget against the runner-up: difference (best - runner-up), CI, p."""
    budget: float
    best: str
    runner_up: str
    diff: float
    low: float
    high: float
    p: float

    @property
    def shown(self):
        return (self.low > 0) or (self.high < 0)


def budget_table(lines, budgets, higher_is_better):
    """({line: {budget: BudgetCell}}, [Lead per budget]) with the best marked where shown."""
    cells, leads, sign, distance = {}, [], better_sign(higher_is_better), is_distance(lines)
    for budget in budgets:
        values = {line.name: line.at(budget) for line in lines}
        for name, (value, reps) in values.items():
            cells.setdefault(name, {})[budget] = (BudgetCell(value, *interval(centred(reps, value, distance)))
                                                  if not np.isnan(value) else None)
        ranked = sorted([n for n, (v, _) in values.items() if not np.isnan(v)], key=lambda n: -sign * values[n][0])
        if len(ranked) >= 2:
            diff = values[ranked[0]][0] - values[ranked[1]][0]
            diff_reps = centred(values[ranked[0]][1] - values[ranked[1]][1], diff, distance)
            lead = Lead(budget, ranked[0], ranked[1], diff, *interval(diff_reps), bootstrap_p(diff_reps))
            leads.append(lead)
            cells[ranked[0]][budget].best = lead.shown and sign * lead.diff > 0
    return cells, leads


def areas(lines, low, high):
    """{line: BudgetCell of the mean quality over [low, high]}, None where a line does not span it."""
    out, distance = {}, is_distance(lines)
    for line in lines:
        value, reps = line.area(low, high)
        out[line.name] = None if np.isnan(value) else BudgetCell(value, *interval(centred(reps, value, distance)))
    return out


def non_inferiority(run, reference, tolerance):
    """'yes' (non-inferior: the paired CI of run - reference stays within -tolerance, the
    non-inferiority margin), 'no' (worse beyond it: the whole CI is), or 'not shown'; with the
    paired difference dict."""
    result = paired_difference(run.quality, reference.quality)
    sign = better_sign(run.quality.higher_is_better)
    worst, best = sorted((sign * result["ci_low"], sign * result["ci_high"]))
    verdict = "yes" if worst > -tolerance else ("no" if best < -tolerance else "not shown")
    return verdict, result


def joint_indices(runs, n_boot=N_BOOT):
    """One [R, n] draw of input indices shared by every run."""
    return replicate_indices(len(runs[0].passes.columns[0]), n_boot)
