"""`bench report`: Pareto plots and tables drawn from result files only (never runs a model)."""
from collections import Counter
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from bench.errors import BenchError  # noqa: E402
from bench.results import find_results  # noqa: E402
from bench.table import metric_of, render_markdown  # noqa: E402

plt.rcParams.update({"pdf.fonttype": 42, "ps.fonttype": 42})


def comparison_group(results):
    """Results comparable with each other: same task, model, data, limit and seed.

    Picks the group with the most runs (newest on ties), so a quick --limit run does not mix in.
    """
    key = lambda r: (r["model"]["id"], r["config"]["data_id"], r["config"]["limit"], r["config"]["seed"])  # noqa: E731
    counts = Counter(key(r) for r in results)
    newest = {key(r): r["provenance"]["finished_at"] for r in results}
    best = max(counts, key=lambda k: (counts[k], newest[k]))
    return [r for r in results if key(r) == best], len(results) - counts[best]


def pareto_front(points, higher_is_better):
    """Indices of points (passes, quality) that no other point beats on both axes."""
    sign = 1 if higher_is_better else -1
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -sign * points[i][1]))
    front, best = [], float("-inf")
    for i in order:
        if sign * points[i][1] > best:
            front.append(i)
            best = sign * points[i][1]
    return front


def strategy_color(name):
    """One colour per strategy name, the same in every figure."""
    from bench.registry import STRATEGIES, _load_all
    _load_all()
    names = sorted(STRATEGIES)
    return plt.get_cmap("tab10")(names.index(name) % 10 if name in names else 9)


def draw_pareto(results, task, out_dir):
    """Mean passes (log x) against the headline metric, CI bars, frontier, sequential marked."""
    headline = results[0]["headline"]
    passes = [metric_of(r, "passes") for r in results]
    quality = [metric_of(r, headline) for r in results]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    labelled = set()
    for r, p, q in zip(results, passes, quality):
        legend = None if r["strategy"] in labelled else r["strategy"]
        labelled.add(r["strategy"])
        ax.errorbar(p["value"], q["value"], xerr=[[p["value"] - p["ci_low"]], [p["ci_high"] - p["value"]]],
                    yerr=[[q["value"] - q["ci_low"]], [q["ci_high"] - q["value"]]], linestyle="none", capsize=3,
                    color=strategy_color(r["strategy"]), label=legend,
                    marker="*" if r["strategy"] == "sequential" else "o",
                    markersize=12 if r["strategy"] == "sequential" else 6)
        ax.annotate(r["label"], (p["value"], q["value"]), textcoords="offset points", xytext=(5, 5), fontsize=8)
    front = pareto_front([(p["value"], q["value"]) for p, q in zip(passes, quality)], quality[0]["higher_is_better"])
    ax.plot([passes[i]["value"] for i in front], [quality[i]["value"] for i in front], "k--", lw=1,
            label="Pareto frontier")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.set_xlabel("mean forward passes per sample (log scale)")
    ax.set_ylabel(f"{quality[0]['label']} ({'higher' if quality[0]['higher_is_better'] else 'lower'} is better)")
    ax.set_title(f"{task}: passes vs quality (n={results[0]['n_samples']}, 95% CI; * = sequential)")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    paths = [Path(out_dir) / f"pareto_{task}.{ext}" for ext in ("png", "pdf")]
    for path in paths:
        fig.savefig(path, dpi=150)
    plt.close(fig)
    return paths


def report(results_dir, out_dir):
    results = find_results(results_dir)
    if not results:
        raise BenchError(f"no result files under {results_dir}; make some with: python -m bench run")
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    for task in sorted({r["task"] for r in results}):
        group, left_out = comparison_group([r for r in results if r["task"] == task])
        paths = draw_pareto(group, task, out_dir)
        table = Path(out_dir) / f"table_{task}.md"
        table.write_text(render_markdown(group) + "\n")
        note = f" ({left_out} runs of other models/data/limits/seeds left out)" if left_out else ""
        print(f"{task}: {len(group)} runs{note} -> {', '.join(map(str, paths))}, {table}")
