"""Claims and tables rendered: Markdown, CSV, LaTeX and plain-text tables of result summaries,
the strategies x budgets and speed-up tables and the sentences of ``claims_<task>.md`` (from the
``TaskVerdicts`` that ``bench.report.claims`` computes)."""
import csv
import io
import re

import numpy as np

from bench.report.sweeps import metric_of


def metric_names(results):
    """Every metric name but passes, in first-seen order over all results."""
    names = {m["name"]: None for r in results for m in r["metrics"] if m["name"] != "passes"}
    return list(names)


def metric_text(m, digits=3):
    """'0.613 [0.583, 0.643]' or '-'."""
    if m is None:
        return "-"
    return f"{m['value']:.{digits}f} [{m['ci_low']:.{digits}f}, {m['ci_high']:.{digits}f}]"


def summary_rows(results):
    """Header and rows: strategy, mean passes, each metric but passes, wall seconds."""
    names = metric_names(results)
    header = ["strategy", "n", "mean passes"] + names + ["wall s"]
    rows = []
    for r in sorted(results, key=lambda r: metric_of(r, "passes")["value"], reverse=True):
        rows.append([r["label"], str(r["n_samples"]), metric_text(metric_of(r, "passes"), 2)]
                    + [metric_text(metric_of(r, n)) for n in names] + [f"{r['wall_seconds']:.1f}"])
    return header, rows


def padded(cells, widths):
    """One plain-text table line: each cell left-aligned to its column's width."""
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths))


def render_text(results):
    header, rows = summary_rows(results)
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    return "\n".join(padded(cells, widths) for cells in [header, ["-" * w for w in widths]] + rows)


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
    head = f"{value:+.{digits}g}" if signed and not np.isnan(value) else number_text(value, digits)
    return f"{head} [{number_text(low, digits)}, {number_text(high, digits)}]"


def p_text(p):
    return "-" if p is None or np.isnan(p) else ("< 0.001" if p < 0.001 else f"{p:.3f}")


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
            continue                       # a single run (the reference) or a sweep outside every budget
        if numeric:
            rows.append([name] + [x for c in cells for x in ((c.value, c.low, c.high) if c else (None,) * 3)])
        else:
            rows.append([name] + [cell_text(c) for c in cells])
    if numeric:
        header = ["strategy"] + [f"{h}{s}" for h in header[1:] for s in ("", "_ci_low", "_ci_high")]
    return header, rows


def speedup_table(v, numeric=False):
    """Header and rows: per line its cheapest run non-inferior to the reference (paired test)."""
    header = ["strategy", "run", "mean passes", f"{v.headline} - {v.reference}", "p", "test",
              f"passes / {v.reference}", "speed-up", f"non-inferior (margin {v.tolerance:g})"]
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
    said = {"yes": f"is non-inferior to {v.reference} within {v.tolerance:g}",
            "no": f"is worse than {v.reference} by more than {v.tolerance:g}",
            "not shown": f"is not shown non-inferior to {v.reference} within {v.tolerance:g}"}[row.verdict]
    return (f"- `{row.run.label}` ({row.run.passes():.1f} passes, {1 / row.ratio:.2f}x fewer than "
            f"{v.reference}) {said}: {detail}.")


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
    out += ["", f"Speed-up at {v.reference} quality (paired non-inferiority test):"]
    out += [speedup_sentence(v, row) for row in v.speedup] or [f"- no {v.reference} run."]
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
