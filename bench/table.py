"""Plain-text, Markdown, CSV and LaTeX tables of result summaries."""
import csv
import io
import re


def metric_of(result, name):
    return next((m for m in result["metrics"] if m["name"] == name), None)


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


def render_text(results):
    header, rows = summary_rows(results)
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


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
