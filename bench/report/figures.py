"""The report's figures: Pareto plots (mean passes against the headline metric) of result
summaries, in two sizes, PNG and PDF; one colour per strategy name from a fixed palette."""
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import matplotlib.colors
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from bench.report.sweeps import metric_of, point_label, reference_run, sweep_lines  # noqa: E402
from bench.settings import verdicts_for  # noqa: E402

plt.rcParams.update({"pdf.fonttype": 42, "ps.fonttype": 42})  # TrueType fonts embedded in PDF/PS


@dataclass(frozen=True)
class Layout:
    """A figure size: file-name suffix, width and height (inches), font size, legend below."""
    suffix: str
    width: float
    height: float
    font: float
    legend_below: bool


LAYOUTS = [Layout("", 6.8, 3.6, 8, False),        # two-column (full text width)
           Layout("_1col", 3.3, 3.2, 6.5, True)]  # one column


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


# tab10, then tab20's lighter shades: the colours handed out in turn (then again from the start)
PALETTE = [matplotlib.colors.to_hex(c) for c in plt.get_cmap("tab10").colors + plt.get_cmap("tab20").colors[1::2]]


def strategy_colours(names):
    """{strategy name: colour}: the palette in turn to the distinct ``names`` in sorted order, so
    every figure of one report gives a strategy the same colour (the names of all its results)."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(set(names)))}


def line_colours(lines):
    """``strategy_colours`` of the strategies of ``lines`` (a figure drawn on its own)."""
    return strategy_colours(run["strategy"] for runs in lines.values() for run in runs)


def reference_of(results, task):
    """The reference run of ``task``'s figures: its declared reference strategy, else the line with
    the most mean passes (``reference_run``); None where there is none."""
    verdicts = verdicts_for(task)
    return reference_run(results, verdicts.reference if verdicts else None)


def error_bars(runs, name):
    """Values and [below, above] CI distances of metric ``name`` over ``runs``. A basic-bootstrap CI
    of a biased statistic (a plug-in distance on a small set) can lie wholly on one side of its value: the
    bar then reaches from the value to the far end of the interval."""
    ms = [metric_of(r, name) for r in runs]
    return ([m["value"] for m in ms],
            [[max(0.0, m["value"] - m["ci_low"]) for m in ms], [max(0.0, m["ci_high"] - m["value"]) for m in ms]])


def draw_lines(ax, lines, headline, layout, *, colours=None, reference=None):
    """One line with CI bars per sweep, in its strategy's colour (``colours``, else
    ``line_colours``; a new dash pattern for each further line of the same strategy, e.g. another
    order); the lines of the ``reference`` strategy as stars."""
    colours = colours or line_colours(lines)
    seen = Counter()
    for name, runs in lines.items():
        xs, xerr = error_bars(runs, "passes")
        ys, yerr = error_bars(runs, headline)
        strategy = runs[0]["strategy"]
        star = strategy == reference
        ax.errorbar(xs, ys, xerr=xerr, yerr=yerr, color=colours[strategy], label=name,
                    linestyle=["-", "--", ":", "-."][seen[strategy] % 4], marker="*" if star else "o",
                    markersize=(9 if star else 3.5) * layout.font / 8, linewidth=1, elinewidth=0.6, capsize=1.5,
                    zorder=3 if star else 2)
        seen[strategy] += 1


def draw_reference(ax, reference, headline):
    """A dotted line at the reference run's quality: the level the speed-up table asks for."""
    ax.axhline(metric_of(reference, headline)["value"], color="0.5", linestyle=":", linewidth=0.8,
               label=f"{reference['strategy']} quality", zorder=1)


def draw_frontier(ax, results, headline):
    passes = [metric_of(r, "passes")["value"] for r in results]
    quality = [metric_of(r, headline) for r in results]
    front = pareto_front(list(zip(passes, [q["value"] for q in quality])), quality[0]["higher_is_better"])
    ax.plot([passes[i] for i in front], [quality[i]["value"] for i in front], color="0.55", alpha=0.35,
            linewidth=5, solid_capstyle="round", label="Pareto frontier", zorder=1)  # visible under lines


def label_box(ax, xy, text, font):
    """Display-space box (x0, x1, y0, y1) of a point's label, right of the point or, at the
    right edge of the axes, left of it; and the offset and alignment that put it there."""
    px, py = ax.transData.transform(xy)
    scale = ax.figure.dpi / 72  # display pixels per point
    width, height, pad = len(text) * font * 0.6 * scale, font * 1.2 * scale, 2 * scale
    if px + pad + width > ax.get_window_extent().x1:
        return (px - pad - width, px - pad, py + pad, py + pad + height), (-2, 2), "right"
    return (px + pad, px + pad + width, py + pad, py + pad + height), (2, 2), "left"


def overlaps(box, boxes):
    return any(box[0] < b[1] and b[0] < box[1] and box[2] < b[3] and b[2] < box[3] for b in boxes)


def label_points(ax, lines, headline, layout, colours=None):
    """Each point's swept parameter ('k=5'), skipping labels that would overlap one already placed."""
    colours = colours or line_colours(lines)
    placed, font = [], layout.font - 2
    for line in lines.values():
        for run in line:
            text = point_label(run, line)
            xy = (metric_of(run, "passes")["value"], metric_of(run, headline)["value"])
            box, offset, align = label_box(ax, xy, text, font)
            if text and not overlaps(box, placed):
                placed.append(box)
                ax.annotate(text, xy, textcoords="offset points", xytext=offset, ha=align, fontsize=font,
                            color=colours[run["strategy"]])


def log_tick_formatter(leading):
    """Tick labels on a log axis only where the leading digit is in ``leading`` (fewer clash)."""
    def label(value, _):
        digit = int(f"{value:e}"[0]) if value > 0 else 0
        return f"{value:g}" if digit in leading else ""
    return matplotlib.ticker.FuncFormatter(label)


def style_axes(ax, results, headline, task, layout, *, reference=None):
    quality = metric_of(results[0], headline)
    ax.set_xscale("log")
    ax.margins(x=0.08)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(log_tick_formatter({2, 5} if layout.legend_below else {2, 3, 5}))
    ax.tick_params(labelsize=layout.font - 1, which="both")
    ax.set_xlabel("mean forward passes per sample (log scale)", fontsize=layout.font)
    direction = "higher" if quality["higher_is_better"] else "lower"
    ax.set_ylabel(f"{quality['label']}\n({direction} is better)", fontsize=layout.font)
    if not layout.legend_below:
        star = f", * = {reference}" if reference else ""
        ax.set_title(f"{task}: n={results[0]['n_samples']}, 95% CIs{star}", fontsize=layout.font)
    if layout.legend_below:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, fontsize=layout.font - 1.5,
                  frameon=False)
    else:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=layout.font - 1, frameon=False)


def draw_pareto(results, task, out_dir, layout=LAYOUTS[0], *, metric=None, colours=None):
    """Mean passes (log x) against the headline metric (or ``metric``, then in its own files):
    a line per sweep with CI bars (``colours``: strategy name -> colour), the frontier and the
    reference run's quality (``reference_of``); written as PNG and PDF."""
    headline = metric or results[0]["headline"]
    lines = sweep_lines(results)
    fig, ax = plt.subplots(figsize=(layout.width, layout.height))
    reference = reference_of(results, task)
    if reference is not None:
        draw_reference(ax, reference, headline)
    draw_frontier(ax, results, headline)
    colours = colours or line_colours(lines)
    star = reference["strategy"] if reference is not None else None
    draw_lines(ax, lines, headline, layout, colours=colours, reference=star)
    style_axes(ax, results, headline, task, layout, reference=star)
    fig.tight_layout()
    label_points(ax, lines, headline, layout, colours)
    return save_figure(fig, out_dir, f"pareto_{task}" + (f"_{metric}" if metric else "") + layout.suffix, dpi=300)


def save_figure(fig, out_dir, stem, dpi):
    """Write ``fig`` as ``out_dir/stem``.png and .pdf, close it; the two paths (every report
    section, core or plugin, saves its figures this way)."""
    paths = [Path(out_dir) / f"{stem}.{ext}" for ext in ("png", "pdf")]
    for path in paths:
        fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return paths


def extra_figures(results):
    """Metrics besides the headline that the task asked to plot (recorded in its result files),
    where every result of the group has them."""
    wanted = dict.fromkeys(m for r in results for m in r.get("extra_figures", ()))
    return [m for m in wanted if all(any(x["name"] == m for x in r["metrics"]) for r in results)]


def draw_figures(group, task, out_dir, colours=None):
    """The Pareto plots of the headline and of every extra figure, in both layouts."""
    paths = [p for layout in LAYOUTS for p in draw_pareto(group, task, out_dir, layout, colours=colours)]
    for metric in extra_figures(group):
        paths += [p for layout in LAYOUTS
                  for p in draw_pareto(group, task, out_dir, layout, metric=metric, colours=colours)]
    return paths


