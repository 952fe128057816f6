"""The claims of a task, computed: strategies x pass budgets, frontier areas, speed-up with
non-inferiority to the task's reference run, ablations; each with its paired difference, CI and
p-value (``bench.report.render`` writes them as tables and ``claims_<task>.md``)."""
from dataclasses import dataclass

import numpy as np

from bench.paired import better_sign, paired_difference
from bench.report.sweeps import reference_run, sweep_lines
from bench.report.verdicts import (
    areas,
    bootstrap_p,
    budget_table,
    centred,
    interval,
    is_distance,
    joint_indices,
    load_runs,
    make_line,
    non_inferiority,
    select_line,
)
from bench.settings import Verdicts, verdicts_for


@dataclass
class TaskVerdicts:
    task: str
    headline: str
    higher_is_better: bool
    n_inputs: int
    budgets: tuple
    tolerance: float     # the non-inferiority margin (Verdicts.margin)
    cells: dict          # line -> {budget: BudgetCell | None}
    leads: list          # Lead per budget
    areas: dict          # line -> BudgetCell | None
    speedup: list        # SpeedupRow per line
    ablations: list      # (idea, [same-parameter pair dicts], [(budget, diff dict)])
    left_out: int
    seeds: int = 1       # seeds pooled per input
    reference: str = "reference"   # the strategy name of the reference run (what the text calls it)


@dataclass
class SpeedupRow:
    line: str
    run: object
    verdict: str
    diff: dict
    ratio: float         # run passes / reference passes


def speedup_rows(runs, lines, tolerance, reference_name=None):
    """Per line: the cheapest run non-inferior to the reference run (``reference_run``), else its
    run closest to it."""
    summaries = [r.summary for r in runs]
    reference_summary = reference_run(summaries, reference_name)
    if reference_summary is None:
        return []
    reference = next(r for r in runs if r.summary is reference_summary)
    rows = []
    for name, line_runs in lines.items():
        if reference in line_runs:
            continue
        tested = [(run, *non_inferiority(run, reference, tolerance)) for run in line_runs]
        passing = [t for t in tested if t[1] == "yes"]
        sign = better_sign(reference.quality.higher_is_better)
        run, verdict, diff = passing[0] if passing else max(tested, key=lambda t: sign * t[2]["diff"])
        rows.append(SpeedupRow(name, run, verdict, diff, run.passes() / reference.passes()))
    order = {"yes": 0, "not shown": 1, "no": 2}
    return sorted(rows, key=lambda r: (order[r.verdict], r.ratio))


def ablation_pairs(runs, ablation):
    """Runs of an idea and of its ablation with equal other parameters: paired differences."""
    with_idea = select_line(runs, ablation.strategy, ablation.where)
    without = select_line(runs, ablation.without, ablation.without_where)
    pairs = []
    for run in with_idea:
        swept = {k: v for k, v in run.summary["config"]["strategy_params"].items()
                 if k not in ablation.where and isinstance(v, (int, float)) and not isinstance(v, bool)}
        match = next((w for w in without if all(w.summary["config"]["strategy_params"].get(k) == v
                                                 for k, v in swept.items())), None)
        if match is not None:
            pairs.append({"run": run.label, "ablation": match.label,
                          "quality": paired_difference(run.quality, match.quality),
                          "passes": paired_difference(run.passes, match.passes)})
    return with_idea, without, pairs


def ablation_at_budgets(with_idea, without, idx, budgets):
    """[(budget, diff, low, high, p)] of the idea's line minus its ablation's at equal budgets."""
    a, b = make_line("with", with_idea, idx), make_line("without", without, idx)
    out, distance = [], is_distance([a, b])
    for budget in budgets:
        (va, ra), (vb, rb) = a.at(budget), b.at(budget)
        if not (np.isnan(va) or np.isnan(vb)):
            diff_reps = centred(ra - rb, va - vb, distance)
            out.append((budget, va - vb, *interval(diff_reps), bootstrap_p(diff_reps)))
    return out


BUDGET_GRID = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)   # passes, for tasks without settings


def default_verdicts(runs):
    """The verdict settings of a task that names none (tasks/<name>/presets.py): the budgets of
    BUDGET_GRID that lie within the runs' mean passes, non-inferiority at margin 0 (a run must not
    be worse than the reference beyond its CI), no declared reference (``reference_run`` picks the
    line with the most mean passes), no ablations."""
    passes = [run.passes() for run in runs]
    budgets = tuple(b for b in BUDGET_GRID if min(passes) <= b <= max(passes)) or (round(min(passes)),)
    return Verdicts(budgets, 0.0, None)   # margin 0, no declared reference


def task_verdicts(group, task, root):
    """Everything the verdict tables and claims of ``task`` need, or None when no run's headline
    can be recomputed from its records (results made before per-input recipes: `bench rescore`)."""
    runs, left_out = load_runs(group, root)
    if len(runs) < 2:
        return None
    config = verdicts_for(task) or default_verdicts(runs)
    reference = reference_run([r.summary for r in runs], config.reference)
    reference_name = config.reference or reference["strategy"]
    idx = joint_indices(runs)
    by_summary = {id(r.summary): r for r in runs}
    lines = {name: [by_summary[id(s)] for s in line if id(s) in by_summary]
             for name, line in sweep_lines([r.summary for r in runs]).items()}
    lines = {name: line for name, line in lines.items() if line}
    made = [make_line(name, line, idx) for name, line in lines.items()]
    higher = runs[0].quality.higher_is_better
    cells, leads = budget_table(made, config.budgets, higher)
    ablations = []
    for ablation in config.ablations:
        with_idea, without, pairs = ablation_pairs(runs, ablation)
        if pairs or (with_idea and without):
            ablations.append((ablation.idea, pairs, ablation_at_budgets(with_idea, without, idx, config.budgets)))
    return TaskVerdicts(task, runs[0].summary["headline"], higher, len(runs[0].passes.columns[0]),
                        config.budgets, config.margin, cells, leads,
                        areas(made, min(config.budgets), max(config.budgets)),
                        speedup_rows(runs, lines, config.margin, config.reference), ablations, left_out,
                        max(len(r.summary.get("pooled_seeds", [0])) for r in runs), reference_name)
