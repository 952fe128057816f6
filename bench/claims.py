"""The verdict tables and the claims file of a task: strategies x pass budgets, frontier areas,
speed-up with non-inferiority to sequential, ablations; every comparative sentence generated
here with its difference, CI and p-value (README and docs quote ``claims_<task>.md``)."""
from dataclasses import dataclass

import numpy as np

from bench.paired import better_sign, paired_difference
from bench.presets import VERDICTS, Verdicts
from bench.sweeps import reference_run, sweep_lines
from bench.verdicts import (
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


@dataclass
class TaskVerdicts:
    task: str
    headline: str
    higher_is_better: bool
    n_inputs: int
    budgets: tuple
    margin: float
    cells: dict          # line -> {budget: BudgetCell | None}
    leads: list          # Lead per budget
    areas: dict          # line -> BudgetCell | None
    speedup: list        # SpeedupRow per line
    ablations: list      # (idea, [same-parameter pair dicts], [(budget, diff dict)])
    left_out: int
    seeds: int = 1       # seeds pooled per input


@dataclass
class SpeedupRow:
    line: str
    run: object
    verdict: str
    diff: dict
    ratio: float         # run passes / sequential passes


def number_text(value, digits=3):
    return "-" if value is None or np.isnan(value) else f"{value:.{digits}g}"


def ci_text(value, low, high, digits=3, signed=False):
    head = f"{value:+.{digits}g}" if signed and not np.isnan(value) else number_text(value, digits)
    return f"{head} [{number_text(low, digits)}, {number_text(high, digits)}]"


def p_text(p):
    return "-" if p is None or np.isnan(p) else ("< 0.001" if p < 0.001 else f"{p:.3f}")


def speedup_rows(runs, lines, margin):
    """Per line: the cheapest run non-inferior to sequential, else its run closest to it."""
    summaries = [r.summary for r in runs]
    reference_summary = reference_run(summaries)
    if reference_summary is None:
        return []
    reference = next(r for r in runs if r.summary is reference_summary)
    rows = []
    for name, line_runs in lines.items():
        if reference in line_runs:
            continue
        tested = [(run, *non_inferiority(run, reference, margin)) for run in line_runs]
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
    """The verdict settings of a task that names none (bench.presets.VERDICTS): the budgets of
    BUDGET_GRID that lie within the runs' mean passes, non-inferiority at margin 0 (a run must not
    be worse than sequential beyond its CI), no ablations."""
    passes = [run.passes() for run in runs]
    budgets = tuple(b for b in BUDGET_GRID if min(passes) <= b <= max(passes)) or (round(min(passes)),)
    return Verdicts(budgets=budgets, margin=0.0)


def task_verdicts(group, task, root):
    """Everything the verdict tables and claims of ``task`` need, or None when no run's headline
    can be recomputed from its records (results made before per-input recipes: `bench rescore`)."""
    runs, left_out = load_runs(group, root)
    if len(runs) < 2:
        return None
    config = VERDICTS.get(task) or default_verdicts(runs)
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
                        speedup_rows(runs, lines, config.margin), ablations, left_out,
                        max(len(r.summary.get("pooled_seeds", [0])) for r in runs))


def cell_text(cell, bold=True):
    if cell is None:
        return "-"
    text = ci_text(cell.value, cell.low, cell.high)
    return f"**{text}**" if bold and cell.best else text


def budget_rows(v, numeric=False):
    """Header and rows of the strategies x budgets table (plus the frontier area)."""
    low, high = min(v.budgets), max(v.budgets)
    header = ["strategy"] + [f"{v.headline} at {b} passes" for b in v.budgets] + [f"area {low}-{high}"]
    rows = []
    for name, by_budget in v.cells.items():
        cells = [by_budget[b] for b in v.budgets] + [v.areas[name]]
        if all(c is None for c in cells):
            continue                       # a single run (sequential) or a sweep outside every budget
        if numeric:
            rows.append([name] + [x for c in cells for x in ((c.value, c.low, c.high) if c else (None,) * 3)])
        else:
            rows.append([name] + [cell_text(c) for c in cells])
    if numeric:
        header = ["strategy"] + [f"{h}{s}" for h in header[1:] for s in ("", "_ci_low", "_ci_high")]
    return header, rows


def speedup_table(v, numeric=False):
    """Header and rows: per line its cheapest run non-inferior to sequential (paired test)."""
    header = ["strategy", "run", "mean passes", f"{v.headline} - sequential", "p", "test",
              "passes / sequential", "speed-up", f"non-inferior (margin {v.margin:g})"]
    rows = []
    for r in v.speedup:
        d = r.diff
        if numeric:
            rows.append([r.line, r.run.label, r.run.passes(), d["diff"], d["ci_low"], d["ci_high"], d["p"],
                         d["test"], r.ratio, 1 / r.ratio, r.verdict])
        else:
            difference = ci_text(d["diff"], d["ci_low"], d["ci_high"], signed=True)
            rows.append([r.line, r.run.label, f"{r.run.passes():.2f}", difference,
                         p_text(d["p"]), d["test"], f"{r.ratio:.3f}", f"{1 / r.ratio:.2f}x", r.verdict])
    if numeric:
        header = header[:3] + ["diff", "diff_ci_low", "diff_ci_high"] + header[4:]
    return header, rows


def lead_sentence(v, lead):
    verdict = ("shown: the paired CI excludes 0" if lead.shown
               else "not shown: the paired CI includes 0")
    return (f"- At {lead.budget:g} passes, `{lead.best}` leads `{lead.runner_up}` by "
            f"{ci_text(lead.diff, lead.low, lead.high, signed=True)} {v.headline} "
            f"(bootstrap p {p_text(lead.p)}); {verdict}.")


def speedup_sentence(v, row):
    d = row.diff
    detail = (f"{ci_text(d['diff'], d['ci_low'], d['ci_high'], signed=True)} {v.headline}, "
              f"{d['test']} p {p_text(d['p'])}")
    if "discordant" in d:
        detail += f", {d['discordant'][0]} vs {d['discordant'][1]} discordant inputs"
    said = {"yes": f"is non-inferior to sequential within {v.margin:g}",
            "no": f"is worse than sequential by more than {v.margin:g}",
            "not shown": f"is not shown non-inferior to sequential within {v.margin:g}"}[row.verdict]
    return (f"- `{row.run.label}` ({row.run.passes():.1f} passes, {1 / row.ratio:.2f}x fewer than "
            f"sequential) {said}: {detail}.")


def ablation_sentences(v, idea, pairs, at_budgets, same_parameters=True):
    """The idea minus its ablation at equal budgets, and (``same_parameters``) run by run."""
    lines = [f"- **{idea}**:"]
    for budget, diff, low, high, p in at_budgets:
        lines.append(f"  - at {budget:g} passes: {ci_text(diff, low, high, signed=True)} {v.headline} "
                     f"(bootstrap p {p_text(p)}).")
    for pair in pairs if same_parameters else []:
        q, p = pair["quality"], pair["passes"]
        lines.append(f"  - `{pair['run']}` minus `{pair['ablation']}`: "
                     f"{ci_text(q['diff'], q['ci_low'], q['ci_high'], signed=True)} {v.headline} "
                     f"({q['test']} p {p_text(q['p'])}), "
                     f"{ci_text(p['diff'], p['ci_low'], p['ci_high'], signed=True)} passes.")
    if not at_budgets and not (pairs and same_parameters):
        lines.append("  - no budget where both sweeps have runs on these inputs"
                     + (f"; run by run in claims_{v.task}.md." if pairs else "."))
    return lines


def claims_markdown(v):
    """Every comparative sentence about ``v.task``, each with its difference, CI and p-value."""
    direction = "higher" if v.higher_is_better else "lower"
    seeds = f" x {v.seeds} seeds pooled per input" if v.seeds > 1 else ""
    out = [f"Generated by `bench report` from the result files: {v.n_inputs} shared inputs{seeds}, paired tests, "
           f"95% CIs from one joint bootstrap over inputs; {v.headline}, {direction} is better.", "",
           "Equal pass budgets (each strategy's sweep interpolated in log passes):"]
    out += [lead_sentence(v, lead) for lead in v.leads] or ["- fewer than two strategies reach any budget."]
    out += ["", "Speed-up at sequential quality (paired non-inferiority test):"]
    out += [speedup_sentence(v, row) for row in v.speedup] or ["- no sequential run."]
    if v.ablations:
        out += ["", "Ablations (each idea against the same rule without it):"]
        for idea, pairs, at_budgets in v.ablations:
            out += ablation_sentences(v, idea, pairs, at_budgets)
    return "\n".join(out) + "\n"


def ablations_markdown(verdicts):
    """Each task's ablations at equal pass budgets under its name ('' when no task has any); the
    run-by-run pairs are in each task's claims."""
    out = []
    for v in verdicts:
        if v.ablations:
            out += [f"{v.task} ({v.n_inputs} inputs, {v.headline}):"]
            for idea, pairs, at_budgets in v.ablations:
                out += ablation_sentences(v, idea, pairs, at_budgets, same_parameters=False)
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n" if out else ""
