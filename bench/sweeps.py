"""Runs grouped into sweep lines (one strategy across its parameter values), the sequential
reference, and the speed-up-at-equal-quality table; from result summaries only."""
from bench.table import metric_of


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def varying(runs, numeric):
    """Parameter names whose (numeric, or else non-numeric) values differ across ``runs``."""
    names = sorted({k for r in runs for k in r["config"]["strategy_params"]})
    values = {n: {repr(r["config"]["strategy_params"].get(n)) for r in runs} for n in names}
    kinds = {n: all(is_number(r["config"]["strategy_params"].get(n)) for r in runs) for n in names}
    return [n for n in names if len(values[n]) > 1 and kinds[n] == numeric]


def sweep_lines(results):
    """{line name: runs sorted by mean passes}. A line is a strategy name plus any non-numeric
    parameter that differs between its runs (``topk order=margin``); numeric ones are the sweep."""
    by_name = {}
    for r in results:
        by_name.setdefault(r["strategy"], []).append(r)
    lines = {}
    for name, runs in by_name.items():
        fixed = varying(runs, numeric=False)
        for r in runs:
            extra = " ".join(f"{k}={r['config']['strategy_params'][k]}" for k in fixed)
            lines.setdefault(f"{name} {extra}".strip(), []).append(r)
    passes = lambda r: metric_of(r, "passes")["value"]  # noqa: E731
    return {key: sorted(runs, key=passes) for key, runs in sorted(lines.items())}


def point_label(run, line):
    """The swept parameters of one point ('k=5'); '' for a line of one point."""
    return ",".join(f"{k}={run['config']['strategy_params'][k]:g}" for k in varying(line, numeric=True))


def reference_run(results):
    """The sequential run (confidence order preferred) every figure and table compares with."""
    sequential = [r for r in results if r["strategy"] == "sequential"]
    sequential.sort(key=lambda r: r["config"]["strategy_params"].get("order") != "confidence")
    return sequential[0] if sequential else None


def at_least_as_good(quality, target):
    """Whether a headline metric dict is at least as good as the value ``target``."""
    return quality["value"] >= target if quality["higher_is_better"] else quality["value"] <= target


def equal_quality_run(line, headline, target):
    """The cheapest run of a line reaching ``target`` quality, else the one closest to it.

    Returns:
        (run, reached) where ``reached`` says whether the run is at least as good as ``target``.
    """
    reaching = [r for r in line if at_least_as_good(metric_of(r, headline), target)]
    if reaching:
        return reaching[0], True  # lines are sorted by passes
    return min(line, key=lambda r: abs(metric_of(r, headline)["value"] - target)), False


def fmt_significant(m):
    """'0.0019 [0.0015, 0.0027]': three significant digits, for metrics of any scale."""
    return f"{m['value']:.3g} [{m['ci_low']:.3g}, {m['ci_high']:.3g}]"


def speedup_rows(results, numeric=False):
    """Header and rows: per line, passes relative to sequential at sequential's quality.

    Quality is the headline metric's point value; a line that never reaches sequential's is
    represented by its run closest to it (marked 'no (closest)'). None without a sequential run.

    Args:
        results: result summaries of one comparable group.
        numeric: plain numbers (for CSV) instead of formatted text.
    """
    reference = reference_run(results)
    if reference is None:
        return None
    headline = reference["headline"]
    target, ref_passes = metric_of(reference, headline)["value"], metric_of(reference, "passes")["value"]
    chosen = [(name, *equal_quality_run(line, headline, target)) for name, line in sweep_lines(results).items()]
    chosen.sort(key=lambda c: (not c[2], metric_of(c[1], "passes")["value"]))  # reaching first, cheapest first
    rows = []
    for name, run, reached in chosen:
        passes, quality = metric_of(run, "passes")["value"], metric_of(run, headline)
        cells = ([passes, quality["value"], quality["ci_low"], quality["ci_high"], passes / ref_passes, reached]
                 if numeric else [f"{passes:.2f}", fmt_significant(quality), f"{passes / ref_passes:.3f}",
                                  f"{ref_passes / passes:.2f}x", "yes" if reached else "no (closest)"])
        rows.append([name, run["label"], *cells])
    quality_columns = [headline, f"{headline}_ci_low", f"{headline}_ci_high"] if numeric else [headline]
    header = (["strategy", "run", "mean passes", *quality_columns, "passes / sequential"]
              + ([] if numeric else ["speed-up"]) + ["reaches sequential quality"])
    return header, rows
