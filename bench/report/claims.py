"""The claims of a task, computed: strategies x pass budgets, frontier areas, speed-up with
non-inferiority to the task's reference run, ablations; each with its paired difference, CI and
p-value (``bench.report.render`` writes them as tables and ``claims_<task>.md``).

Every p-value a claims file prints is one family: they are Holm-adjusted together
(``adjust_family``), and a claim is shown only where its adjusted p is below ALPHA.

Where the task has runs on its validation split (`bench run --preset validation`), the choices a
claim rests on are made there (``choose``): which two lines a budget's lead compares (the best and
the runner-up on validation) and which run of each line the speed-up tests (its cheapest run
non-inferior on validation, else its closest); the test inputs only confirm them."""
from dataclasses import dataclass, field, replace

import numpy as np

from bench.multiplicity import ALPHA, family_size, holm
from bench.paired import better_sign
from bench.report.ablations import ablation_at_budgets, ablation_pairs, distinct_pairs
from bench.report.retrained import merge_ends, retrained_ablations
from bench.report.sweeps import reference_run, sweep_lines
from bench.report.verdicts import (
    areas,
    budget_table,
    calibrated_table,
    joint_indices,
    load_runs,
    make_line,
    mark_best,
    non_inferiority,
    runs_at_budgets,
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
    ablations: list      # (idea, [same-parameter pair dicts], [difference dict per budget])
    left_out: int
    seeds: int = 1       # seeds pooled per input
    reference: str = "reference"   # the strategy name of the reference run (what the text calls it)
    family: int = 0      # p-values in the claims file, Holm-adjusted together (``adjust_family``)
    runs: list = field(default_factory=list)   # every ScoredRun (seeds pooled), with its Cost
    reference_run: object = None               # the reference ScoredRun, None where there is none
    choices: object = None                     # the Choices made on validation, None: made on these inputs
    lower_tested: int = 0                      # claims tested at a bounded run's lower end too (``both_ends``)
    second_tested: int = 0                     # claims tested against the task's second reference too
    at_budget: dict | None = None              # calibrated table: {budget: {line: run label}}; None: interpolated
    retrained: dict = field(default_factory=dict)   # {idea: [(folder, pairs, at_budgets)]} (bench.report.retrained)


@dataclass
class Choices:
    """What a task's claims test, chosen on its validation split.

    Attributes:
        source: where they were chosen ('1000 validation inputs, data ..., seed 0').
        leads: {budget: (best line, runner-up line)} on validation.
        speedup: {line: label of the run the speed-up tests}.
        rows: the validation SpeedupRows (for the choices file).
        values: {budget: {line: validation value}}.
        at_budget: calibrated tables: {budget: {line: label of its run whose mean passes hit the
            budget on validation}}; None for interpolated tables.
        passes: {run label: its mean passes on validation} of the runs ``at_budget`` names.
    """
    source: str
    leads: dict
    speedup: dict
    rows: list = field(default_factory=list)
    values: dict = field(default_factory=dict)
    at_budget: dict | None = None
    passes: dict = field(default_factory=dict)


@dataclass
class SpeedupRow:
    line: str
    run: object
    verdict: str
    diff: dict
    ratio: float         # run passes / reference passes
    reference: object = None   # the reference ScoredRun

    @property
    def batched_ratio(self):
        """Run batched steps / reference batched steps (NaN without both Costs)."""
        if self.run.cost is None or self.reference is None or self.reference.cost is None:
            return np.nan
        return self.run.cost.batched_steps / self.reference.cost.batched_steps


def speedup_rows(runs, lines, tolerance, reference_name=None, chosen=None):
    """Per line: the cheapest run non-inferior to the reference run (``reference_run``), else its
    run closest to it; ``chosen`` ({line: run label}, made on validation) names the run instead.
    A line of several runs that ``chosen`` names none of (run on test only) tests its run of most
    passes: picking by the test's own outcome would be a choice made on test."""
    summaries = [r.summary for r in runs]
    reference_summary = reference_run(summaries, reference_name)
    if reference_summary is None:
        return []
    reference = next(r for r in runs if r.summary is reference_summary)
    rows = []
    for name, line_runs in lines.items():
        if reference in line_runs:
            continue
        candidates = line_runs if chosen is None else ([run for run in line_runs if run.label == chosen.get(name)]
                                                       or [max(line_runs, key=lambda run: run.passes())])
        tested = [(run, *non_inferiority(run, reference, tolerance)) for run in candidates]
        passing = [t for t in tested if t[1] == "yes"]
        sign = better_sign(reference.quality.higher_is_better)
        run, verdict, diff = passing[0] if passing else max(tested, key=lambda t: sign * t[2]["diff"])
        rows.append(SpeedupRow(name, run, verdict, diff, run.passes() / reference.passes(), reference))
    return speedup_order(rows)


def speedup_order(rows):
    """Speed-up rows: non-inferior first, then not shown, then worse; cheapest first within each."""
    order = {"yes": 0, "not shown": 1, "no": 2}
    return sorted(rows, key=lambda r: (order[r.verdict], r.ratio))


def family_tests(v):
    """Every test dict whose p a claims file prints, in the order it prints them: the budget leads,
    the speed-up rows (one-sided at the margin), each ablation at budgets and run by run."""
    tests = [lead.test for lead in v.leads] + [row.diff for row in v.speedup]
    for _, pairs, at_budgets in v.ablations:
        tests += at_budgets + [pair["quality"] for pair in pairs]
    return tests


def adjust_family(v):
    """Holm-adjust the p-values of ``v``'s claims together (each test dict gets ``p_holm``), then
    mark the budget table's best and withdraw a non-inferiority the adjustment does not keep."""
    tests = family_tests(v)
    for test, adjusted in zip(tests, holm([t["p"] for t in tests])):
        test["p_holm"] = float(adjusted)
    v.family = family_size([t["p"] for t in tests])
    mark_best(v.cells, v.leads, v.higher_is_better)
    for row in v.speedup:
        if row.verdict == "yes" and not row.diff["p_holm"] < ALPHA:
            row.verdict = "not shown"
    v.speedup = speedup_order(v.speedup)
    return v


BUDGET_GRID = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)   # passes, for tasks without settings


def default_verdicts(runs):
    """The verdict settings of a task that names none (tasks/<name>/presets.py): the budgets of
    BUDGET_GRID that lie within the runs' mean passes, non-inferiority at margin 0 (a run must not
    be worse than the reference beyond its CI), no declared reference (``reference_run`` picks the
    line with the most mean passes), no ablations."""
    passes = [run.passes() for run in runs]
    budgets = tuple(b for b in BUDGET_GRID if min(passes) <= b <= max(passes)) or (round(min(passes)),)
    return Verdicts(budgets, 0.0, None)   # margin 0, no declared reference


def scored_lines(group, task, root):
    """(runs, left out, verdict settings, bootstrap indices, {line: runs}, [Line]) of a group of
    results, or None when fewer than two runs' headlines can be recomputed from their records."""
    runs, left_out = load_runs(group, root)
    if len(runs) < 2:
        return None
    config = verdicts_for(task) or default_verdicts(runs)
    idx = joint_indices(runs)
    by_summary = {id(r.summary): r for r in runs}
    lines = {name: [by_summary[id(s)] for s in line if id(s) in by_summary]
             for name, line in sweep_lines([r.summary for r in runs]).items()}
    lines = {name: line for name, line in lines.items() if line}
    return runs, left_out, config, idx, lines, [make_line(name, line, idx) for name, line in lines.items()]


def choose(group, task, root, where):
    """The Choices made on a task's validation runs ``group``, or None where they cannot be scored:
    per budget the best line and the runner-up by point value, per line the run its speed-up tests."""
    scored = scored_lines(group, task, root)
    if scored is None:
        return None
    runs, _, config, _, lines, made = scored
    sign = better_sign(runs[0].quality.higher_is_better)
    at_budget = runs_at_budgets(made, config.budgets) if config.calibrated else None
    by_label = {run.label: run for run in runs}
    values = ({budget: {line: by_label[label].quality() for line, label in named.items()}
               for budget, named in at_budget.items()} if config.calibrated else
              {budget: {line.name: line.at(budget)[0] for line in made} for budget in config.budgets})
    leads = {}
    for budget, at in values.items():
        ranked = sorted((name for name, value in at.items() if not np.isnan(value)), key=lambda n: -sign * at[n])
        if len(ranked) >= 2:
            leads[budget] = (ranked[0], ranked[1])
    rows = speedup_rows(runs, lines, config.margin, config.reference)
    source = f"{len(runs)} runs on {len(runs[0].passes.columns[0])} validation inputs {where}"
    passes = {label: by_label[label].passes() for named in (at_budget or {}).values() for label in named.values()}
    return Choices(source, leads, {row.line: row.run.label for row in rows}, rows, values, at_budget, passes)


def task_verdicts(group, task, root, choices=None, retrained=None):
    """Everything the verdict tables and claims of ``task`` need, or None when no run's headline
    can be recomputed from its records (results made before per-input recipes: `bench rescore`).
    ``choices`` (made on validation by ``choose``) fixes what the leads and speed-ups test. Where
    runs' headlines are only bounds (``ScoredRun.lower``), every claim is tested at both ends
    (``both_ends``) before the family is adjusted. ``retrained`` ((results, folder) of runs on
    helpers retrained under other seeds) checks each ablation on each of them, outside the family."""
    scored = scored_lines(group, task, root)
    if scored is None:
        return None
    v = verdicts_of(scored, task, choices)
    if any(run.lower is not None for run in scored[0]):
        v.lower_tested = both_ends(v, verdicts_of(at_lower_end(scored), task, same_choices(v)))
    if scored[0] and all(run.second is not None for run in scored[0]):
        v.second_tested = both_ends(v, verdicts_of(at_second_reference(scored), task, same_choices(v)),
                                    "second_reference")
    if retrained:
        runs, _, config, idx, _, _ = scored
        extra = [r for r in load_runs(*retrained)[0] if len(r.passes.columns[0]) == v.n_inputs]
        v.retrained = retrained_ablations(runs, extra, config.ablations, idx, config.budgets)
    return adjust_family(v)


def verdicts_of(scored, task, choices=None):
    """The TaskVerdicts of ``scored`` (``scored_lines``), its p-values not yet adjusted."""
    runs, left_out, config, idx, lines, made = scored
    reference = reference_run([r.summary for r in runs], config.reference)
    reference_name = config.reference or reference["strategy"]
    higher = runs[0].quality.higher_is_better
    at_budget = None
    if config.calibrated:   # the runs whose passes hit each budget: on validation where it was run
        at_budget = choices.at_budget if choices and choices.at_budget is not None else runs_at_budgets(
            made, config.budgets)
        cells, leads = calibrated_table(made, config.budgets, higher, at_budget, choices and choices.leads)
    else:
        cells, leads = budget_table(made, config.budgets, higher, choices and choices.leads)
    ablations = []
    for ablation in config.ablations:
        with_idea, without, pairs = ablation_pairs(runs, ablation)
        if pairs or (with_idea and without):
            at_budgets = ablation_at_budgets(with_idea, without, idx, config.budgets, at_budget)
            ablations.append((ablation.idea, distinct_pairs(pairs, at_budgets), at_budgets))
    return TaskVerdicts(
        task, runs[0].summary["headline"], higher, len(runs[0].passes.columns[0]), config.budgets, config.margin,
        cells, leads, {} if config.calibrated else areas(made, min(config.budgets), max(config.budgets)),
        speedup_rows(runs, lines, config.margin, config.reference, choices and choices.speedup), ablations, left_out,
        max(len(r.summary.get("pooled_seeds", [0])) for r in runs), reference_name,
        runs=runs, reference_run=next((r for r in runs if r.summary is reference), None), choices=choices,
        at_budget=at_budget)


def at_lower_end(scored):
    """``scored`` with each bounded run's headline at its lower end (same runs, lines and replicates)."""
    return swapped_quality(scored, lambda r: replace(r, quality=r.lower) if r.lower is not None else r)


def at_second_reference(scored):
    """``scored`` with every run's headline measured against the task's second reference sample (same
    runs, lines and input replicates): a claim is shown only where both references agree."""
    return swapped_quality(scored, lambda r: replace(r, quality=r.second, lower=None, second=None))


def swapped_quality(scored, swap):
    """``scored`` with each run replaced by ``swap(run)``, its lines remade on the same replicates."""
    runs, left_out, config, idx, lines, _ = scored
    swapped = {id(r): swap(r) for r in runs}
    lines = {name: [swapped[id(r)] for r in line] for name, line in lines.items()}
    return ([swapped[id(r)] for r in runs], left_out, config, idx, lines,
            [make_line(name, line, idx) for name, line in lines.items()])


def same_choices(v):
    """Choices that make another TaskVerdicts test what ``v`` tests: its leads' pairs, its speed-up runs."""
    leads = {lead.budget: (lead.best, lead.runner_up) for lead in v.leads}
    return Choices(v.choices.source if v.choices else "", leads, {row.line: row.run.label for row in v.speedup},
                   at_budget=v.at_budget)


def both_ends(v, low, key="lower_end"):
    """Merge ``low`` (the same claims with bounded runs at their lower end, or measured against a
    second reference: ``key``) into ``v``: a test that moves gets ``key`` (its difference, CI and p
    there) and, as ``p``, the larger of the two p-values (1 where a two-sided difference changes
    sign), so that it is shown only where both agree; a speed-up verdict the two disagree on is
    'not shown'. Returns how many tests moved."""
    pairs = [(a.test, b.test) for a, b in zip(sorted(v.leads, key=lambda x: x.budget),
                                              sorted(low.leads, key=lambda x: x.budget))]
    rows = {row.line: row for row in low.speedup}
    for row in v.speedup:
        pairs.append((row.diff, rows[row.line].diff))
        if rows[row.line].verdict != row.verdict:
            row.verdict = "not shown"
    for (_, pairs_a, budgets_a), (_, pairs_b, budgets_b) in zip(v.ablations, low.ablations):
        pairs += list(zip(budgets_a, budgets_b)) + [(a["quality"], b["quality"]) for a, b in zip(pairs_a, pairs_b)]
    return sum(merge_ends(test, lower, key) for test, lower in pairs)
