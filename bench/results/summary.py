"""Reading and completing run summaries, shared by whoever makes them (`bench run`, `bench
rescore`) and whoever reads them (the report, calibration, the plan): a metric of a summary, its
mean passes, the passes spent besides decoding, the natural-variation marks, the plain-text table
`bench run` prints."""
from bench.arness import arness_metrics
from bench.stats import mean_metric


def metric_of(result, name):
    """The metric ``name`` of a summary, or None."""
    return next((m for m in result["metrics"] if m["name"] == name), None)


def batch_size_of(summary):
    """The batch size a run was decoded at: its ``execution`` (its config's, for runs made before
    the identity left it out), or None."""
    return (summary.get("execution") or {}).get("batch_size", summary["config"].get("batch_size"))


def mean_passes(run):
    return metric_of(run, "passes")["value"]


def forward_passes(run):
    """Mean forward passes per input as a user pays them: decoding passes plus those a strategy
    spent besides (its ``*_passes`` metrics: ``aux_pass_metrics``)."""
    return sum(m["value"] for m in run["metrics"] if m["name"] == "passes" or m["name"].endswith("_passes"))


def aux_pass_metrics(records, strategy=None):
    """Passes a strategy spent besides decoding (an oracle's probing), reported apart: the record
    field its ``aux_passes_metric`` names (without a strategy: any field ``*_passes`` besides
    ``passes``, as `bench rescore` finds them in stored records)."""
    if not records:
        return []
    names = ([strategy.aux_passes_metric] if strategy is not None and strategy.aux_passes_metric else
             [] if strategy is not None else sorted(k for k in records[0] if k.endswith("_passes")))
    return [mean_metric(name, [r[name] for r in records], False,
                        "passes per sample spent besides decoding (not decoding passes)", field=name)
            for name in names if name in records[0]]


def record_metrics(records, strategy=None):
    """The metrics every task's runs get from their records besides the task's own: passes spent
    besides decoding (``aux_pass_metrics``) and the reveal order's ARness (bench.arness; only
    where the records carry the order)."""
    return aux_pass_metrics(records, strategy) + arness_metrics(records)


def mark_natural(metrics, natural):
    """Each metric of ``natural`` (a task's ``natural_variation``) gets ``natural_bound`` and
    ``within_natural``: no worse than what natural inputs of the run's size score 95% of the time."""
    for metric in metrics:
        null = (natural or {}).get(metric["name"])
        if null is not None:
            worse_by = (null["bound"] - metric["value"]) * (1 if metric["higher_is_better"] else -1)
            metric.update(natural_bound=null["bound"], within_natural=bool(worse_by <= 0))
    return metrics


def metric_names(results):
    """Every metric name but passes, in first-seen order over all results."""
    names = {m["name"]: None for r in results for m in r["metrics"] if m["name"] != "passes"}
    return list(names)


OUTSIDE = " (estimate outside its bootstrap interval: skewed replicates)"


def metric_text(m, digits=3):
    """'0.613 [0.583, 0.643]' or '-', with ``OUTSIDE`` where a stored value lies outside its CI."""
    if m is None:
        return "-"
    note = OUTSIDE if not m["ci_low"] <= m["value"] <= m["ci_high"] else ""
    return f"{m['value']:.{digits}f} [{m['ci_low']:.{digits}f}, {m['ci_high']:.{digits}f}]{note}"


def summary_rows(results):
    """Header and rows: strategy, mean passes, each metric but passes, wall seconds."""
    names = metric_names(results)
    header = ["strategy", "n", "mean passes"] + names + ["wall s"]
    rows = []
    for r in sorted(results, key=mean_passes, reverse=True):
        rows.append([r["label"], str(r["n_samples"]), metric_text(metric_of(r, "passes"), 2)]
                    + [metric_text(metric_of(r, n)) for n in names] + [f"{r['wall_seconds']:.1f}"])
    return header, rows


def padded(cells, widths):
    """One plain-text table line: each cell left-aligned to its column's width."""
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths))


def render_text(results):
    """The plain-text table of ``results`` that `bench run` prints."""
    header, rows = summary_rows(results)
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    return "\n".join(padded(cells, widths) for cells in [header, ["-" * w for w in widths]] + rows)
