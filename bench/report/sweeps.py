"""Result summaries read for the report: a metric of a summary, runs grouped into sweep lines (one
strategy across its parameter values) and the reference run; from result summaries only."""
from bench.results.summary import mean_passes, metric_of


def lower_estimate(result, metric):
    """The summary metric holding ``result``'s lower estimate of ``metric`` (its task's
    ``order_lower``), or None where the task declares none or the run has none."""
    from bench.settings import task_settings
    settings = task_settings(result["task"])
    return metric_of(result, settings.drawn.lower.get(metric, "")) if settings is not None else None


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def varying(runs, numeric):
    """Parameter names whose (numeric, or else non-numeric) values differ across ``runs``."""
    names = sorted({k for r in runs for k in r["config"]["strategy_params"]})
    values = {n: {repr(r["config"]["strategy_params"].get(n)) for r in runs} for n in names}
    kinds = {n: all(is_number(r["config"]["strategy_params"].get(n)) for r in runs) for n in names}
    return [n for n in names if len(values[n]) > 1 and kinds[n] == numeric]


def primary_param(run):
    """The parameter a strategy's sweep varies: its first numeric one (k, gamma, tau, T), or None."""
    return next((k for k, v in run["config"]["strategy_params"].items() if is_number(v)), None)


def sweep_lines(results):
    """{line name: runs sorted by mean passes}. A line is a strategy name plus every parameter
    but the swept one (``primary_param``) that differs between its runs (``NAME order=VALUE``,
    ``NAME lam=0.0``; a parameter left empty, as a default file is, is not named); the swept one
    moves along the line."""
    by_name = {}
    for r in results:
        by_name.setdefault(r["strategy"], []).append(r)
    lines = {}
    for name, runs in by_name.items():
        swept = primary_param(runs[0])
        fixed = [k for k in varying(runs, numeric=False) + varying(runs, numeric=True) if k != swept]
        for r in runs:
            params = r["config"]["strategy_params"]
            extra = " ".join(f"{k}={params[k]}" for k in sorted(fixed) if params[k] != "")
            lines.setdefault(f"{name} {extra}".strip(), []).append(r)
    return {key: sorted(runs, key=mean_passes) for key, runs in sorted(lines.items())}


def point_label(run, line):
    """The swept parameters of one point ('k=5'); '' for a line of one point."""
    return ",".join(f"{k}={run['config']['strategy_params'][k]:g}" for k in varying(line, numeric=True))


def reference_run(results, reference=None):
    """The run every figure and table compares with. ``reference`` (a task's declared strategy
    name): its run with the most mean passes, or None where it has no run. No reference declared:
    the most expensive run of the line whose runs have the most mean passes on average (the rule
    that reveals least per pass). Runs of equal passes (the reference under another order) go to
    the first by spec, so the choice does not depend on the order the files were read in."""
    if reference is not None:
        candidates = [r for r in results if r["strategy"] == reference]
    else:
        lines = list(sweep_lines(results).values())
        candidates = max(lines, key=average_passes) if lines else []
    return min(candidates, key=lambda r: (-mean_passes(r), r["config"]["strategy_spec"]), default=None)


def average_passes(line):
    return sum(map(mean_passes, line)) / len(line)
