"""Claims and tables rendered: Markdown, CSV, LaTeX and plain-text tables of result summaries,
the strategies x budgets and speed-up tables and the sentences of ``claims_<task>.md`` (from the
``TaskVerdicts`` that ``bench.report.claims`` computes)."""
import csv
import io
import re
from pathlib import Path

import numpy as np

from bench.multiplicity import ALPHA
from bench.paired import better_sign
from bench.report.verdicts import MAX_OUTSIDE, TOLERANCE
from bench.results.summary import OUTSIDE, metric_names, metric_of, metric_text, render_text, summary_rows  # noqa: F401
from bench.settings import task_settings


def markdown(header, rows):
    """A Markdown table of string cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def csv_text(header, rows):
    """CSV of the cells (numbers as given)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows([header, *rows])
    return buffer.getvalue()


def tex_escape(text):
    """Text safe inside a LaTeX table cell."""
    return re.sub(r"[\\&%$#_{}]", lambda m: r"\textbackslash{}" if m[0] == "\\" else "\\" + m[0], text)


def latex(header, rows):
    """A booktabs tabular (needs \\usepackage{booktabs}) of string cells."""
    body = [" & ".join(tex_escape(str(c)) for c in r) + r" \\" for r in rows]
    return "\n".join([rf"\begin{{tabular}}{{l{'r' * (len(header) - 1)}}}", r"\toprule",
                      " & ".join(map(tex_escape, header)) + r" \\", r"\midrule", *body, r"\bottomrule",
                      r"\end{tabular}"])


def numeric_rows(results):
    """Header and rows of plain numbers for CSV: every metric's value and CI bounds."""
    names = ["passes"] + metric_names(results)
    header = ["label", "strategy", "spec", "seed", "n"]
    header += [f"{n}{part}" for n in names for part in ("", "_ci_low", "_ci_high")] + ["wall_seconds"]
    rows = []
    for r in sorted(results, key=lambda r: metric_of(r, "passes")["value"], reverse=True):
        cells = [r["label"], r["strategy"], r["config"]["strategy_spec"], r["config"]["seed"], r["n_samples"]]
        for n in names:
            m = metric_of(r, n) or {}
            cells += [m.get("value"), m.get("ci_low"), m.get("ci_high")]
        rows.append(cells + [r["wall_seconds"]])
    return header, rows


def number_text(value, digits=3):
    return "-" if value is None or np.isnan(value) else f"{value:.{digits}g}"


def ci_text(value, low, high, digits=3, signed=False):
    """'+0.014 [-0.006, 0.035]', with a note where the estimate lies outside its interval (a skewed
    bootstrap: ``BootstrapTest.summary`` says so in its method)."""
    head = f"{value:+.{digits}g}" if signed and not np.isnan(value) else number_text(value, digits)
    outside = not (np.isnan(value) or np.isnan(low) or np.isnan(high) or low <= value <= high)
    note = OUTSIDE if outside else ""
    return f"{head} [{number_text(low, digits)}, {number_text(high, digits)}]" + note


def p_text(p):
    return "-" if p is None or np.isnan(p) else ("< 0.001" if p < 0.001 else f"{p:.3f}")


def p_pair(test, name=None):
    """'Tango score (McNemar) p 0.006, Holm p 0.21': a test's raw and family-adjusted p."""
    head = f"{name or test['test']} p {p_text(test['p'])}"
    return head + (f", Holm p {p_text(test['p_holm'])}" if "p_holm" in test else "")


def lower_text(test):
    """'; at the drawn orders' lower end: -0.2 [-0.4, 0.1], p 0.3' for a claim on a run whose headline
    is only a bound, and '; on the second reference ...' for a claim also tested against a task's second
    reference sample (bench.report.claims.both_ends: the p counted is the larger), else ''."""
    rule = "the larger p" if "one-sided" in test["test"] else "the larger p, 1 on opposite signs"
    out = ""
    ends = (("lower_end", "at the drawn orders' lower end"), ("second_reference", "on the second reference"))
    for key, where in ends:
        end = test.get(key)
        if end is not None:
            out += (f"; {where} {ci_text(end['diff'], end['ci_low'], end['ci_high'], signed=True)}, "
                    f"p {p_text(end['p'])} (counted: {rule})")
    return out


def both_text(test, pchip):
    """'bootstrap p 0.024 and 0.086; the larger p 0.086, Holm p 1.000': a difference at a budget
    under linear and monotone cubic interpolation, and the p that counts."""
    label = "the larger" if np.sign(test["diff"]) == np.sign(pchip["diff"]) else "opposite signs: combined"
    return f"bootstrap p {p_text(test['p_linear'])} and {p_text(pchip['p'])}{lower_text(test)}; {p_pair(test, label)}"


def shown_text(test):
    """'shown' where the family-adjusted p is below ALPHA, else 'not shown'."""
    return "shown" if test.get("p_holm", np.nan) < ALPHA else "not shown"


def budget_shown_text(test):
    """``shown_text`` of a difference at a budget, 'not shown' too where more than MAX_OUTSIDE of
    its replicates fall outside a line's range."""
    return "not shown: too many replicates outside" if test["outside"] > MAX_OUTSIDE else shown_text(test)


def outside_text(share):
    return f", {share:.1%} outside" if share > 0 else ""


def cell_text(cell, bold=True):
    """'0.638 [0.609, 0.666]; p90 23, batch 33': bold where best and shown, with the share of
    replicates outside the line's range where there are any (', 23.5% outside'), a calibrated
    run's own mean passes ('; 16.1 passes'), then the 90th percentile of passes over inputs and
    the batched steps of an average batch at that budget."""
    if cell is None:
        return "-"
    text = ci_text(cell.value, cell.low, cell.high)
    passes = "" if np.isnan(cell.passes) else f"; {cell.passes:.3g} passes"
    cost = "" if np.isnan(cell.p90) else f"; p90 {cell.p90:.3g}, batch {cell.steps_per_batch:.3g}"
    return ((f"**{text}**" if bold and cell.best else text) + outside_text(cell.outside) + passes
            + seeds_text(cell.seed_values, "; seeds ") + cost)


def seeds_text(values, prefix=""):
    """'; seeds 0.51-0.53' (the lowest and highest of a run's per-seed values) where it pools
    several seeds, else ''."""
    if len(values) < 2:
        return ""
    return f"{prefix}{number_text(min(values))}-{number_text(max(values))} ({len(values)})"


def budget_rows(v, numeric=False):
    """Header and rows of the strategies x budgets table (plus the frontier area where the table
    interpolates; a calibrated table has no area, and names each cell's run by its mean passes)."""
    low, high = min(v.budgets), max(v.budgets)
    at = "calibrated to" if v.at_budget is not None else "at"
    area = [f"area {low}-{high}"] if v.areas else []
    header = ["strategy"] + [f"{v.headline} {at} {b} passes" for b in v.budgets] + area
    rows = []
    for name, by_budget in v.cells.items():
        cells = [by_budget[b] for b in v.budgets] + ([v.areas[name]] if v.areas else [])
        if all(c is None for c in cells):
            continue                       # a single run (the reference) or a sweep outside every budget
        if numeric:
            numbers = [(c.value, c.low, c.high, c.outside, c.passes, c.p90, c.steps_per_batch) if c else (None,) * 7
                       for c in cells]
            rows.append([name] + [x for seven in numbers for x in seven])
        else:
            rows.append([name] + [cell_text(c) for c in cells])
    if numeric:
        parts = ("", "_ci_low", "_ci_high", "_outside", "_passes", "_passes_p90", "_batched_steps_per_batch")
        header = ["strategy"] + [f"{h}{s}" for h in header[1:] for s in parts]
    return header, rows


def speedup_table(v, numeric=False):
    """Header and rows: per line its cheapest run non-inferior to the reference (paired test), with
    its cost as users pay it (``cost_cells``)."""
    header = ["strategy", "run", "mean passes", f"{v.headline} - {v.reference}", "p at the margin", "Holm p",
              "test", f"passes / {v.reference}", "speed-up", f"non-inferior (margin {v.tolerance:g})",
              "passes median / p90 / max", "batched steps", "speed-up in batched steps",
              f"{v.headline} per seed (lowest-highest)"]
    rows = []
    for r in v.speedup:
        d, per_seed = r.diff, r.run.summary.get("seed_values", ())
        if numeric:
            spread = [min(per_seed), max(per_seed)] if len(per_seed) > 1 else [None, None]
            rows.append([r.line, r.run.label, r.run.passes(), d["diff"], d["ci_low"], d["ci_high"], d["p"],
                         d["p_holm"], d["test"], r.ratio, 1 / r.ratio, r.verdict] + cost_numbers(r.run.cost, r)
                        + spread)
        else:
            difference = ci_text(d["diff"], d["ci_low"], d["ci_high"], signed=True)
            rows.append([r.line, r.run.label, f"{r.run.passes():.2f}", difference, p_text(d["p"]),
                         p_text(d["p_holm"]), d["test"], f"{r.ratio:.3f}", f"{1 / r.ratio:.2f}x", r.verdict]
                        + cost_cells(r.run.cost, r) + [seeds_text(per_seed) or "-"])
    if numeric:
        header = (header[:3] + ["diff", "diff_ci_low", "diff_ci_high"] + header[4:10] + COST_NUMBERS
                  + ["seeds_lowest", "seeds_highest"])
    return header, rows


COST_NUMBERS = ["passes_median", "passes_p90", "passes_max", "batch_size", "batched_steps", "batched_speedup"]


def cost_numbers(cost, row):
    """The numeric cost columns of a speed-up row (None without a Cost)."""
    if cost is None:
        return [None] * len(COST_NUMBERS)
    return [cost.median, cost.p90, cost.max, cost.batch_size, cost.batched_steps, 1 / row.batched_ratio]


def cost_cells(cost, row):
    """'12 / 23 / 36', '132 (4 batches of 250)', '1.62x' or dashes without a Cost."""
    if cost is None:
        return ["-", "-", "-"]
    return [f"{cost.median:g} / {cost.p90:g} / {cost.max:g}",
            f"{cost.batched_steps:g} ({cost.batches} batches of {cost.batch_size})",
            "-" if np.isnan(row.batched_ratio) else f"{1 / row.batched_ratio:.2f}x"]


def cost_table(v, numeric=False):
    """Header and rows: every run's passes as users pay them (``bench.report.verdicts.Cost``) and its
    speed-up over the reference in mean passes and in batched steps."""
    reference = v.reference_run.cost if v.reference_run is not None else None
    header = ["run", "mean passes", "median", "p90", "max", "batch size", "batched steps",
              f"speed-up over {v.reference} (mean passes)", "speed-up (batched steps)"]
    rows = []
    for run in sorted(v.runs, key=lambda r: -r.cost.mean):
        c = run.cost
        ratios = (reference.mean / c.mean, reference.batched_steps / c.batched_steps) if reference else (None, None)
        if numeric:
            rows.append([run.label, c.mean, c.median, c.p90, c.max, c.batch_size, c.batched_steps, *ratios])
        else:
            rows.append([run.label, f"{c.mean:.2f}", f"{c.median:g}", f"{c.p90:g}", f"{c.max:g}", str(c.batch_size),
                         f"{c.batched_steps:g}"] + [f"{r:.2f}x" if r else "-" for r in ratios])
    return header, rows


def calibrated_lead_sentence(v, lead):
    """A lead between two calibrated runs: their paired difference, confirmed (or not) here where
    the two were chosen on validation."""
    t, (best, second) = lead.test, lead.runs
    head = (f"- At {lead.budget:g} passes, `{best.label}` ({best.passes():.3g} passes) "
            + ("(first on validation) minus " if lead.chosen else "leads ")
            + f"`{second.label}` ({second.passes():.3g} passes)" + ("" if lead.chosen else " by"))
    detail = (f"{ci_text(t['diff'], t['ci_low'], t['ci_high'], signed=True)} {v.headline} "
              f"({p_pair(t)}{lower_text(t)})")
    if lead.chosen:
        return f"{head}: {detail}; {confirmation(v, lead)} on test ({shown_text(t)})."
    return f"{head} {detail}; {shown_text(t)}."


def confirmation(v, lead):
    """What the test inputs say of a lead chosen on validation: confirmed (shown, same direction),
    reversed (shown, the other way) or not confirmed."""
    better = better_sign(v.higher_is_better) * lead.test["diff"] > 0
    return "confirmed" if lead.shown and better else "reversed" if lead.shown else "not confirmed"


def lead_sentence(v, lead):
    if lead.runs:
        return calibrated_lead_sentence(v, lead)
    t, c = lead.test, lead.pchip
    if lead.outside > MAX_OUTSIDE:
        verdict = f"not shown: {lead.outside:.1%} of the bootstrap replicates fall outside a line's range"
    else:
        verdict = ("shown" if lead.shown else "not shown") + ": Holm-adjusted p " + (
            "below" if lead.test.get("p_holm", np.nan) < ALPHA else "not below") + f" {ALPHA:g}"
    outside = f"; {lead.outside:.1%} of replicates outside a line's range, left out" if lead.outside > 0 else ""
    if lead.chosen:
        return chosen_lead_sentence(v, lead, verdict, outside)
    return (f"- At {lead.budget:g} passes, `{lead.best}` leads `{lead.runner_up}` by "
            f"{ci_text(t['diff'], t['ci_low'], t['ci_high'], signed=True)} {v.headline} linear in log passes, "
            f"{ci_text(c['diff'], c['ci_low'], c['ci_high'], signed=True)} monotone cubic "
            f"({both_text(t, c)}{outside}); {verdict}.")


def chosen_lead_sentence(v, lead, verdict, outside):
    """A lead whose two lines were chosen on validation: confirmed here only if shown and in the
    direction validation gave."""
    t, c = lead.test, lead.pchip
    return (f"- At {lead.budget:g} passes, `{lead.best}` (first on validation) minus `{lead.runner_up}` (second): "
            f"{ci_text(t['diff'], t['ci_low'], t['ci_high'], signed=True)} {v.headline} linear in log passes, "
            f"{ci_text(c['diff'], c['ci_low'], c['ci_high'], signed=True)} monotone cubic "
            f"({both_text(t, c)}{outside}); {confirmation(v, lead)} on test ({verdict}).")


def choice_note(v, what):
    """Where ``what`` was chosen: on the validation split (``v.choices``) or on these inputs."""
    if v.choices is None:
        return f"{what} chosen on these same inputs (the task has no validation runs)"
    return f"{what} chosen on validation ({v.choices.source}; choices_{v.task}.md), confirmed here"


def speedup_sentence(v, row):
    d = row.diff
    detail = (f"{ci_text(d['diff'], d['ci_low'], d['ci_high'], signed=True)} {v.headline}{lower_text(d)}, "
              f"{p_pair(d)}")
    if "discordant" in d:
        detail += f", {d['discordant'][0]} vs {d['discordant'][1]} discordant inputs"
    said = {"yes": f"is non-inferior to {v.reference} within {v.tolerance:g}",
            "no": f"is worse than {v.reference} by more than {v.tolerance:g} (its whole 95% CI)",
            "not shown": f"is not shown non-inferior to {v.reference} within {v.tolerance:g}"}[row.verdict]
    return (f"- `{row.run.label}` ({row.run.passes():.1f} passes, {1 / row.ratio:.2f}x fewer than "
            f"{v.reference}{batched_text(row)}) {said}: {detail}.")


def batched_text(row):
    """'; median 14, p90 23, max 36 passes; 132 batched steps, 1.62x fewer' or ''."""
    cost = row.run.cost
    if cost is None or np.isnan(row.batched_ratio):
        return ""
    return (f"; median {cost.median:g}, p90 {cost.p90:g}, max {cost.max:g} passes; {cost.batched_steps:g} "
            f"batched steps in batches of {cost.batch_size}, {1 / row.batched_ratio:.2f}x fewer")


def ablation_sentences(v, idea, pairs, at_budgets, same_parameters=True):
    """The idea minus its ablation at equal budgets, and (``same_parameters``) run by run."""
    lines = [f"- **{idea}**:"]
    for t in at_budgets:
        c = t["pchip"]
        if c is None:     # two runs calibrated to the budget, compared as they are
            (a, b), (pa, pb) = t["runs"], t["passes"]
            lines.append(f"  - at {t['budget']:g} passes, `{a}` ({pa:.3g} passes) minus `{b}` ({pb:.3g}): "
                         f"{ci_text(t['diff'], t['ci_low'], t['ci_high'], signed=True)} {v.headline} "
                         f"({p_pair(t)}{lower_text(t)}; {shown_text(t)}).")
            continue
        lines.append(f"  - at {t['budget']:g} passes: {ci_text(t['diff'], t['ci_low'], t['ci_high'], signed=True)} "
                     f"{v.headline} linear, {ci_text(c['diff'], c['ci_low'], c['ci_high'], signed=True)} monotone "
                     f"cubic ({both_text(t, c)}{outside_text(t['outside'])}; {budget_shown_text(t)}).")
    for pair in pairs if same_parameters else []:
        q, p = pair["quality"], pair["passes"]
        lines.append(f"  - `{pair['run']}` minus `{pair['ablation']}`: "
                     f"{ci_text(q['diff'], q['ci_low'], q['ci_high'], signed=True)} {v.headline} "
                     f"({p_pair(q)}{lower_text(q)}; {shown_text(q)}), "
                     f"{ci_text(p['diff'], p['ci_low'], p['ci_high'], signed=True)} passes.")
    if not at_budgets and not (pairs and same_parameters):
        lines.append("  - no budget where both sweeps have runs on these inputs"
                     + (f"; run by run in claims_{v.task}.md." if pairs else "."))
    return lines


def retrained_sentences(v, idea, at_budgets, pairs=True):
    """The same ablation on each helper retrained under another seed (bench.report.retrained), and
    at which budgets a shown claim holds for every helper."""
    replicates = v.retrained.get(idea)
    if not replicates:
        return []
    lines = ["  - on the helpers retrained under other seeds (`bench run --preset retrained`; raw p, outside the "
             "family: each checks the claim above, as test confirms validation):"]
    for folder, folder_pairs, folder_budgets in replicates:
        cells = [f"{t['budget']:g} passes {ci_text(t['diff'], t['ci_low'], t['ci_high'], signed=True)} "
                 f"(p {p_text(t['p'])}{outside_text(t['outside'])}{lower_text(t)})" for t in folder_budgets]
        cells += [pair_cell(pair) for pair in folder_pairs] if pairs else []
        lines.append(f"    - `{folder}`: " + ("; ".join(cells) or "no budget both lines reach") + ".")
    lines.append("    - " + holds_sentence(at_budgets, replicates))
    return lines


def pair_cell(pair):
    """'`a` minus `b` +0.1 [0.0, 0.2] (p 0.04)': one run-by-run difference, briefly."""
    q = pair["quality"]
    return (f"`{pair['run']}` minus `{pair['ablation']}` {ci_text(q['diff'], q['ci_low'], q['ci_high'], signed=True)} "
            f"(p {p_text(q['p'])}{lower_text(q)})")


def holds_sentence(at_budgets, replicates):
    """'Of the differences shown above: at 16 passes it holds for all 3 trained helpers; at 24 it
    does not (`seeds/1` +0.1, p 0.3); at 8 it is not decided (`seeds/1` does not reach 8 passes).'"""
    from bench.report.retrained import agrees, holds
    said = []
    for main in at_budgets:
        at = [next((t for t in budgets if t["budget"] == main["budget"]), None) for _, _, budgets in replicates]
        verdict = holds(main, at)
        if verdict:
            said.append(f"at {main['budget']:g} passes it holds for all {len(replicates) + 1} trained helpers")
        elif verdict is False:
            failed = [f"`{short(folder)}` {t['diff']:+.3g}, p {p_text(t['p'])}" for (folder, _, _), t in
                      zip(replicates, at) if not agrees(main, t)]
            said.append(f"at {main['budget']:g} passes it does not ({'; '.join(failed) or 'too many outside'})")
        elif main.get("p_holm", np.nan) < ALPHA:
            missing = ", ".join(f"`{short(folder)}`" for (folder, _, _), t in zip(replicates, at) if t is None)
            said.append(f"at {main['budget']:g} passes it is not decided ({missing}: no line through the budget)")
    return ("Of the differences at a budget shown above: " + "; ".join(said) if said else
            "No difference at a budget is shown above, so none is checked") + "."


def short(folder):
    """The last two parts of a helper folder ('seeds/1')."""
    return "/".join(Path(folder).parts[-2:])


def family_sentence(v):
    """How many p-values the file holds, how many are below ALPHA raw and after Holm."""
    from bench.report.claims import family_tests
    tests = family_tests(v)
    raw = sum(t["p"] < ALPHA for t in tests)
    kept = sum(t.get("p_holm", np.nan) < ALPHA for t in tests)
    return (f"Multiplicity: the {v.family} p-values below are one family, Holm-adjusted together; "
            f"{raw} are below {ALPHA:g} raw and {kept} after the adjustment. A claim is *shown* only "
            f"where its Holm-adjusted p is below {ALPHA:g}; each p is printed raw, then Holm-adjusted.")


def bounds_paragraph(v):
    """Where runs' headlines are only bounds, how their claims are tested (bench.report.claims.both_ends)."""
    bounded = [run for run in v.runs if run.lower is not None]
    if not bounded:
        return []
    estimated = sum(run.lower.name != run.quality.name for run in bounded)
    return [f"{len(bounded)} runs draw their order, so their {v.headline} is only an upper bound; {estimated} of "
            f"them carry a lower estimate (`{bounded[0].lower.name if estimated else 'none'}`, see the task's "
            f"docs), the others count at the declared lower end. Each claim on such a run is tested at both ends "
            f"and counts the larger p (1 where the two differences have opposite signs): {v.lower_tested} "
            f"claims below moved, and each is shown only where both ends agree. Between two such runs the lower "
            f"end compares their two estimates, each near its true value and low by its stated bias.", ""]


def pooling_text(v):
    """How the runs' seeds pool: ' (2 of the 9 runs ... pool 3 seeds per input ...)', or ''."""
    pooled = sum(len(run.summary.get("pooled_seeds", [0])) > 1 for run in v.runs)
    matched = sorted({tuple(run.summary["matched_seeds"]) for run in v.runs if "matched_seeds" in run.summary})
    if matched:
        return (f" ({pooled} of the {len(v.runs)} runs ran {v.seeds} seeds; {v.headline} is a distance to a "
                f"reference sample, whose value depends on how many sequences it sees, so every run is compared "
                f"on the seeds all seed-dependent runs have: seed {', '.join(map(str, matched[0]))}, seed-matched; "
                f"passes pool every seed)")
    if pooled and pooled < len(v.runs):
        return (f" ({pooled} of the {len(v.runs)} runs, those that draw, pool {v.seeds} seeds per input; the "
                f"others draw nothing and run one)")
    return f" x {v.seeds} seeds pooled per input" if v.seeds > 1 else ""


def references_paragraph(v):
    """What a claim on a task with a second reference sample must survive, or []."""
    settings = task_settings(v.task)
    second = settings.claims.second_reference if settings is not None else None
    if second is None or not all(run.second is not None for run in v.runs):
        return []
    return [f"{v.headline} is measured against a reference sample, {second.first}; its intervals and p-values "
            f"resample that sample too (jointly with the inputs). Every claim is tested again against a second, "
            f"disjoint sample, {second.second}, and counts the larger p (1 where the two differences have opposite "
            f"signs): {v.second_tested} tests below moved, and a claim is shown only where both references agree "
            f"(the second's numbers follow 'on the second reference').", ""]


def claims_markdown(v):
    """Every comparative sentence about ``v.task``, each with its difference, CI and p-value."""
    direction = "higher" if v.higher_is_better else "lower"
    out = [f"Generated by `bench report` from the result files: {v.n_inputs} shared inputs{pooling_text(v)}, paired "
           f"tests, 95% CIs from one joint bootstrap over inputs (Tango score intervals for 0/1 outcomes); "
           f"{v.headline}, {direction} is better.", "", family_sentence(v), ""]
    out += references_paragraph(v) + bounds_paragraph(v) + [budgets_heading(v)]
    out += [lead_sentence(v, lead) for lead in v.leads] or ["- fewer than two strategies reach any budget."]
    out += ["", f"Speed-up at {v.reference} quality (paired non-inferiority test: one-sided at the margin; "
                f"{choice_note(v, 'the run of each line tested')}):"]
    out += [speedup_sentence(v, row) for row in v.speedup] or [f"- no {v.reference} run."]
    if v.ablations:
        out += ["", "Ablations (each idea against the same rule without it; the pairs are declared in the "
                    "presets, not chosen on any inputs):"]
        for idea, pairs, at_budgets in v.ablations:
            out += ablation_sentences(v, idea, pairs, at_budgets) + retrained_sentences(v, idea, at_budgets)
    return "\n".join(out) + "\n"


def budgets_heading(v):
    """How the budget leads below were made: calibrated runs, or sweeps interpolated to each budget."""
    chosen = choice_note(v, "the two lines compared at each budget")
    if v.at_budget is not None:
        where = "on validation" if v.choices is not None and v.choices.at_budget is not None else "on these inputs"
        return ("Equal pass budgets (each strategy's knob calibrated so that its run's mean passes lie within "
                f"{TOLERANCE:.0%} of the budget {where}, `bench calibrate --budgets`; each run compared as it is, "
                f"paired, no interpolation; {chosen}):")
    return ("Equal pass budgets (each strategy's sweep interpolated in log passes, linearly and by a monotone "
            f"cubic; a lead is shown where it holds under both and at most {MAX_OUTSIDE:.0%} of the bootstrap "
            f"replicates fall outside a line's range; {chosen}):")


def choices_markdown(v):
    """What ``v``'s claims test, as chosen on its validation runs, with the validation numbers."""
    c, direction = v.choices, "higher" if v.higher_is_better else "lower"
    out = [f"Generated by `bench report`: the choices `claims_{v.task}.md` tests, made on the validation split "
           f"({c.source}; {v.headline}, {direction} is better). The test inputs are not read to make them.", "",
           lead_rule(c)]
    for budget, (best, second) in c.leads.items():
        at = c.values[budget]
        out.append(f"- {budget:g} passes: `{best}` {at[best]:.4g}, then `{second}` {at[second]:.4g}")
    if c.at_budget is not None:
        out += ["", f"The run of each line at each budget (mean passes within {TOLERANCE:.0%} of it on validation; "
                    "a line without one is not in that budget's cells):"]
        for budget, named in c.at_budget.items():
            runs = ", ".join(f"`{label}` {c.passes[label]:.3g}" for label in named.values())
            out.append(f"- {budget:g} passes: {runs}")
    out += ["", f"Each line's speed-up tests its cheapest run non-inferior to {v.reference} within {v.tolerance:g} "
                "on validation (one-sided test at the margin, raw p below 0.05), else its run closest to it:"]
    for row in c.rows:
        out.append(f"- {row.line}: `{row.run.label}` ({row.run.passes():.1f} passes; on validation "
                   f"{ci_text(row.diff['diff'], row.diff['ci_low'], row.diff['ci_high'], signed=True)}, "
                   f"one-sided p {p_text(row.diff['p'])}; {row.verdict})")
    return "\n".join(out) + "\n"


def lead_rule(c):
    if c.at_budget is not None:
        return ("Each budget's lead compares the two lines whose runs calibrated to it are best there "
                "(the runs below):")
    return "Each budget's lead compares the two lines with the best point values there (interpolated in log passes):"


def ablations_markdown(verdicts):
    """Each task's ablations at equal pass budgets under its name ('' when no task has any); the
    run-by-run pairs are in each task's claims."""
    out = []
    for v in verdicts:
        if v.ablations:
            out += [f"{v.task} ({v.n_inputs} inputs, {v.headline}; Holm over the {v.family} p-values of "
                    f"claims_{v.task}.md):"]
            for idea, pairs, at_budgets in v.ablations:
                out += (ablation_sentences(v, idea, pairs, at_budgets, same_parameters=False)
                        + retrained_sentences(v, idea, at_budgets, pairs=False))
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n" if out else ""
