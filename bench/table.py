"""Plain-text and Markdown tables of result summaries."""


def metric_of(result, name):
    return next((m for m in result["metrics"] if m["name"] == name), None)


def fmt(m, digits=3):
    """'0.613 [0.583, 0.643]' or '-'."""
    if m is None:
        return "-"
    return f"{m['value']:.{digits}f} [{m['ci_low']:.{digits}f}, {m['ci_high']:.{digits}f}]"


def summary_rows(results):
    """Header and rows: strategy, mean passes, each metric but passes, wall seconds."""
    names = [m["name"] for m in results[0]["metrics"] if m["name"] != "passes"]
    header = ["strategy", "n", "mean passes"] + names + ["wall s"]
    rows = []
    for r in sorted(results, key=lambda r: metric_of(r, "passes")["value"], reverse=True):
        rows.append([r["label"], str(r["n_samples"]), fmt(metric_of(r, "passes"), 2)]
                    + [fmt(metric_of(r, n)) for n in names] + [f"{r['wall_seconds']:.1f}"])
    return header, rows


def render_text(results):
    header, rows = summary_rows(results)
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def render_markdown(results):
    header, rows = summary_rows(results)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
