"""The report's Pareto figures, mean passes (log x) against a quality metric, two kinds per metric:

- the summary (``pareto_<task>``, two-column and ``_1col``): each strategy family's frontier (its
  best runs across every variant and setting) in the family's colour and marker, the reference
  run as a star with a dotted line at its quality;
- the small multiples (``pareto_<task>_families``, two-column): one panel per family, its
  variants by line style and marker, against the same grey reference lines in every panel.

A value that is only a bound (a sampled order's KL on an exact task, ``order_bounds``) is drawn
as a range, down to its lower estimate where one was made (``order_lower``), and never joins a
frontier. The Markdown tables hold every number; figures hold shapes.
"""
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

from bench.report.canvas import (
    LAYOUTS,
    ONE_COLUMN,
    TWO_COLUMN,
    family_styles,
    label_log_axis,
    legend_columns,
    place_if_free,
    save_figure,
    taken_boxes,
    variant_style,
    wrapped,
    wrapped_label,
)
from bench.report.sweeps import lower_estimate, point_label, reference_run, sweep_lines
from bench.results.summary import metric_of
from bench.settings import order_is_drawn, task_settings, verdicts_for

# how the reference lines look in every panel: the reference run, then the declared references in turn
REFERENCE_COLOUR = "black"
REFERENCE_LINES = [("0.45", (0, (4, 2))), ("0.65", (0, (4, 1, 1, 1))), ("0.75", (0, (1, 1)))]
PANEL_COLUMNS = 4       # small multiples per row (two-column width)
PANEL_HEIGHT = 1.75     # inches per row of panels


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


def error_bars(runs, name):
    """Values and [below, above] CI distances of metric ``name`` over ``runs``. A basic-bootstrap CI
    of a biased statistic (a plug-in distance on a small set) can lie wholly on one side of its value: the
    bar then reaches from the value to the far end of the interval."""
    ms = [metric_of(r, name) for r in runs]
    return ([m["value"] for m in ms],
            [[max(0.0, m["value"] - m["ci_low"]) for m in ms], [max(0.0, m["ci_high"] - m["value"]) for m in ms]])


def order_drawn(run):
    """Whether the run's strategy draws its order at random (as its family declares)."""
    return order_is_drawn(run["strategy"], run["config"]["strategy_params"])


@dataclass
class Panel:
    """What one figure draws of one metric: runs whose value is an estimate (``exact``), runs whose
    value is an upper bound (``bounded``, with the range's ``lower`` end), runs left out."""
    metric: str
    exact: list
    bounded: list
    left_out: list
    lower: float | None = None

    @property
    def quality(self):
        return metric_of((self.exact or self.bounded)[0], self.metric)


def split_runs(results, task, metric):
    """A Panel of ``results`` for ``metric`` under task ``task``'s ``order_bounds``."""
    settings = task_settings(task)
    bounds = settings.drawn.bounds if settings is not None else {}
    without = [r for r in results if metric_of(r, metric) is None]   # a run that does not estimate it
    results = [r for r in results if r not in without]
    if metric not in bounds:
        return Panel(metric, results, [], without)
    drawn = [r for r in results if order_drawn(r)]
    exact = [r for r in results if r not in drawn]
    if bounds[metric] is None:
        return Panel(metric, exact, [], without + drawn)
    return Panel(metric, exact, drawn, without, bounds[metric])


def matching_runs(results, entry):
    """The runs a figure reference names: ``name`` (every run of that strategy) or
    ``name:key=value,...`` (its runs with those parameters, e.g. the vanilla sampler's random order)."""
    name, _, given = entry.partition(":")
    wanted = dict(pair.split("=", 1) for pair in given.split(",") if pair)
    return [r for r in results if r["strategy"] == name
            and all(str(r["config"]["strategy_params"].get(k)) == v for k, v in wanted.items())]


def references_of(results, task):
    """(the reference run or None, the figure references with runs, drawn in grey in every panel)."""
    verdicts, settings = verdicts_for(task), task_settings(task)
    declared = settings.figure_references if settings is not None else ()
    return (reference_run(results, verdicts.reference if verdicts else None),
            tuple(entry for entry in declared if matching_runs(results, entry)))


def family_front(runs, metric):
    """The runs of one family on its Pareto frontier, by mean passes."""
    points = [(metric_of(r, "passes")["value"], metric_of(r, metric)["value"]) for r in runs]
    front = pareto_front(points, metric_of(runs[0], metric)["higher_is_better"])
    return sorted((runs[i] for i in front), key=lambda r: metric_of(r, "passes")["value"])


def draw_run_line(ax, runs, metric, **style):
    """Points of ``runs`` joined by a line, with CI bars both ways."""
    xs, xerr = error_bars(runs, "passes")
    ys, yerr = error_bars(runs, metric)
    return ax.errorbar(xs, ys, xerr=xerr, yerr=yerr, linewidth=1, elinewidth=0.5, capsize=1.2, **style)


def lower_end_of(run, panel):
    """Where a bounded run's range starts: its lower estimate's CI bottom (the task's
    ``order_lower``, where its summary holds one), else the metric's declared lower end."""
    estimate = lower_estimate(run, panel.metric)
    return estimate["ci_low"] if estimate is not None else panel.lower


def draw_bounds(ax, runs, panel, colour, marker, label=None):
    """Each bounded run as a vertical range from its lower end (``lower_end_of``) to its upper
    bound's CI top, the bound's value an open marker (``label``: the legend entry of the first)."""
    for run in runs:
        x, top = metric_of(run, "passes")["value"], metric_of(run, panel.metric)
        ax.vlines(x, lower_end_of(run, panel), top["ci_high"], color=colour, linewidth=2.2, alpha=0.45, zorder=2)
        ax.plot([x], [top["value"]], marker=marker, color=colour, markersize=3, fillstyle="none", zorder=3,
                label=label)
        label = None


def draw_reference_run(ax, reference, metric, font):
    """The reference run as a star with a dotted line at its quality."""
    value = metric_of(reference, metric)["value"]
    ax.axhline(value, color=REFERENCE_COLOUR, linestyle=":", linewidth=0.7, zorder=1)
    draw_run_line(ax, [reference], metric, color=REFERENCE_COLOUR, marker="*", markersize=font, zorder=4)


def style_axes(ax, panel, layout, *, ylabel=True, xlabel=True):
    """Log passes on x with labels that do not touch; the metric's label wrapped to the axes."""
    ax.set_xscale("log")
    ax.margins(x=0.06, y=0.06)
    ax.tick_params(labelsize=layout.font - 1 if layout.font > 7 else 7, which="both")
    if xlabel:
        ax.set_xlabel("mean forward passes per sample (log scale)", fontsize=layout.font)
    if ylabel:
        fit_ylabel(ax, quality_label(panel), layout.font)


def quality_label(panel):
    direction = "higher" if panel.quality["higher_is_better"] else "lower"
    return f"{panel.quality['label']} ({direction} is better)"


def fit_ylabel(ax, text, font):
    """The y label wrapped to the height the axes have once laid out (a long metric label would
    otherwise run off the canvas)."""
    ax.set_ylabel(text, fontsize=font)
    ax.figure.draw_without_rendering()
    height = ax.get_window_extent().height / ax.figure.dpi
    ax.set_ylabel(wrapped(text, height * 0.95, font), fontsize=font)


def figure_legend(fig, handles, layout, where="lower"):
    """A legend outside the axes with as many columns as fit: the estimate first, then fewer until
    the drawn legend lies within the canvas."""
    labels = [h.get_label() for h in handles]
    font = max(7, layout.font - 1)
    for columns in range(legend_columns(layout.width, font, labels), 0, -1):
        legend = fig.legend(handles=handles, loc=f"outside {where} center", ncols=columns, fontsize=font,
                            frameon=False, handlelength=2.2, columnspacing=1.0)
        fig.draw_without_rendering()
        box = legend.get_window_extent()
        if columns == 1 or (box.x0 >= fig.bbox.x0 and box.x1 <= fig.bbox.x1):
            return legend
        legend.remove()


def reference_handles(reference, grey, panel, font):
    handles = []
    if reference is not None:
        handles.append(Line2D([], [], color=REFERENCE_COLOUR, marker="*", markersize=font, linestyle=":",
                              label=reference["strategy"]))
    handles += [Line2D([], [], color=colour, linestyle=dash, marker="o", markersize=2, label=f"{name} frontier")
                for name, (colour, dash) in zip(grey, REFERENCE_LINES)]
    if panel.bounded:
        handles.append(Line2D([], [], color="0.4", linewidth=2.2, alpha=0.45,
                              label="upper bound (range)"))
    return handles


def draw_summary(results, task, out_dir, layout, metric, styles):
    """The summary figure of ``metric``: every family's frontier, the reference run; PNG and PDF."""
    panel = split_runs(results, task, metric)
    reference, _ = references_of(panel.exact, task)
    fig, ax = plt.subplots(figsize=(layout.width, layout.height + 0.9), layout="constrained")
    families = draw_family_fronts(ax, panel, reference, styles, layout.font + 2)
    handles = reference_handles(reference, (), panel, layout.font) + family_handles(families, styles)
    style_axes(ax, panel, layout, ylabel=False)
    if layout is TWO_COLUMN:
        ax.set_title(f"{task}: each family's frontier, n={results[0]['n_samples']}, 95% CIs", fontsize=layout.font)
    figure_legend(fig, handles, layout)
    fit_ylabel(ax, quality_label(panel), layout.font)
    label_log_axis(ax)
    stem = f"pareto_{task}" + ("" if metric == results[0]["headline"] else f"_{metric}") + layout.suffix
    return save_figure(fig, out_dir, stem, dpi=300, caption=summary_caption(task, panel, reference))


def draw_family_fronts(ax, panel, reference, styles, star_size):
    """Each family's frontier (and its bounded runs' ranges) in its style, all but the reference
    run's family, then the reference run; the families drawn, sorted."""
    skip = {reference["strategy"]} if reference is not None else set()
    families = sorted({r["strategy"] for r in panel.exact + panel.bounded} - skip)
    for family in families:
        style = styles[family]
        runs = [r for r in panel.exact if r["strategy"] == family]
        if runs:
            draw_run_line(ax, family_front(runs, panel.metric), panel.metric, color=style.colour, marker=style.marker,
                          markersize=3.5, zorder=3)
        draw_bounds(ax, [r for r in panel.bounded if r["strategy"] == family], panel, style.colour, style.marker)
    if reference is not None:
        draw_reference_run(ax, reference, panel.metric, star_size)
    return families


def family_handles(families, styles):
    return [Line2D([], [], color=styles[f].colour, marker=styles[f].marker, markersize=3.5, label=f) for f in families]


def summary_caption(task, panel, reference):
    ref = f"; the star and dotted line are {reference['strategy']}, the reference" if reference else ""
    left = f"; {len(panel.left_out)} runs that give no estimate of it (an order drawn at random, re-masking) " \
        f"are left out" if panel.left_out else ""
    return (f"{task}: mean forward passes (log x) against {panel.quality['label']}; one line per strategy "
            f"family through its best runs (its Pareto frontier), 95% CIs both ways{ref}{left}.")


def draw_family_panel(ax, family_runs, panel, refs, style, layout):
    """One family's variants (line style and marker each) over the grey reference lines."""
    reference, grey = refs
    for (colour, dash), entry in zip(REFERENCE_LINES, grey):
        runs = matching_runs(panel.exact, entry)
        if runs and entry.partition(":")[0] != family_runs[0]["strategy"]:
            front = family_front(runs, panel.metric)
            xs, ys = ([metric_of(r, metric)["value"] for r in front] for metric in ("passes", panel.metric))
            ax.plot(xs, ys, color=colour, linestyle=dash, linewidth=1, marker="o", markersize=2, zorder=1)
    if reference is not None:
        draw_reference_run(ax, reference, panel.metric, layout.font)
    lines = sweep_lines(family_runs)
    for index, (name, runs) in enumerate(lines.items()):
        dash, marker = variant_style(index)
        exact = [r for r in runs if r in panel.exact]
        variant = wrapped_label(short_paths(name.split(" ", 1)[1])) if " " in name and len(lines) > 1 else None
        if exact:
            draw_run_line(ax, exact, panel.metric, color=style.colour, marker=marker, linestyle=dash, markersize=3,
                          label=variant, zorder=3)
        bounded = [r for r in runs if r in panel.bounded]
        bound_label = f"{variant} (bound)" if variant and not exact else None
        draw_bounds(ax, bounded, panel, style.colour, marker, label=bound_label)
    return lines


def short_paths(text):
    """A variant's parameters with each file path shortened to the folder it lies in
    (``policy=elbo`` for a file under weights/elbo/): a legend has no room for
    the whole path, and the folder says how the file was trained."""
    return " ".join(f"{k}={v.rsplit('/', 2)[-2]}" if "/" in v else f"{k}={v}"
                    for k, _, v in (part.partition("=") for part in text.split(" ")))


def label_panel_points(fig, axes_lines, panel, styles, font):
    """Each point's swept setting ('k=5') where it fits: inside its panel, clear of every text."""
    taken = taken_boxes(fig)
    for ax, lines in axes_lines:
        for runs in lines.values():
            for run in runs:
                text = point_label(run, runs)
                if text and run in panel.exact + panel.bounded:
                    xy = (metric_of(run, "passes")["value"], metric_of(run, panel.metric)["value"])
                    place_if_free(ax, text, xy, colour=styles[run["strategy"]].colour, font=font, taken=taken)


def draw_families(results, task, out_dir, metric, styles):
    """Small multiples of ``metric``: one panel per family (all but the reference run's), shared
    axes, the same grey references in each; two-column width; PNG and PDF."""
    panel = split_runs(results, task, metric)
    refs = references_of(panel.exact, task)
    shown = panel.exact + panel.bounded
    families = sorted({r["strategy"] for r in shown} - ({refs[0]["strategy"]} if refs[0] else set()))
    if not families:
        return []
    rows = -(-len(families) // PANEL_COLUMNS)
    layout = TWO_COLUMN
    fig, axes = plt.subplots(rows, PANEL_COLUMNS, figsize=(layout.width, PANEL_HEIGHT * rows + 0.9), sharex=True,
                             sharey=True, squeeze=False, layout="constrained")
    axes_lines = []
    for ax, family in zip(axes.flat, families):
        lines = draw_family_panel(ax, [r for r in shown if r["strategy"] == family], panel, refs, styles[family],
                                  layout)
        ax.set_title(family, fontsize=layout.font, color=styles[family].colour, fontweight="bold")
        style_axes(ax, panel, layout, ylabel=False, xlabel=False)
        if len(lines) > 1:
            ax.legend(fontsize=7, frameon=False, loc="best", handlelength=1.6, handletextpad=0.4, borderaxespad=0.2,
                      labelspacing=0.3)
        axes_lines.append((ax, lines))
    for ax in axes.flat[len(families):]:
        ax.set_visible(False)
    fig.supxlabel("mean forward passes per sample (log scale)", fontsize=layout.font)
    fig.supylabel(wrapped(quality_label(panel), PANEL_HEIGHT * rows * 0.8, layout.font), fontsize=layout.font)
    figure_legend(fig, reference_handles(refs[0], refs[1], panel, layout.font), layout, where="upper")
    label_log_axis(axes.flat[len(families) - 1])   # shared x: the last panel is in the row that prints the labels
    label_panel_points(fig, axes_lines, panel, styles, 7)
    stem = f"pareto_{task}" + ("" if metric == results[0]["headline"] else f"_{metric}") + "_families"
    return save_figure(fig, out_dir, stem, dpi=300, caption=families_caption(task, panel, refs))


def families_caption(task, panel, refs):
    grey = ", ".join(refs[1])
    against = f" and the frontier of {grey} in grey" if grey else ""
    star = f"{refs[0]['strategy']} (star, dotted line)" if refs[0] else "no reference run"
    return (f"{task}: one panel per strategy family, its variants by line style and marker, each setting "
            f"labelled where it fits; every panel shows {star}{against}; shared axes: "
            f"mean forward passes (log x) against {panel.quality['label']}.")


def extra_figures(results):
    """Metrics besides the headline that the task asked to plot (recorded in its result files),
    where some result of the group has them (a run without one is left out of its figure)."""
    wanted = dict.fromkeys(m for r in results for m in r.get("extra_figures", ()))
    return [m for m in wanted if any(metric_of(r, m) is not None for r in results)]


def draw_figures(group, task, out_dir, styles=None):
    """The summary of the headline and of every extra metric in both sizes, and the headline's
    small multiples; ``styles``: family -> Style, shared by every task of one report."""
    styles = styles or family_styles(r["strategy"] for r in group)
    paths = []
    headline = group[0]["headline"]
    for metric in [headline] + extra_figures(group):
        if not split_runs(group, task, metric).exact:
            continue
        paths += [p for layout in LAYOUTS for p in draw_summary(group, task, out_dir, layout, metric, styles)]
    return paths + draw_families(group, task, out_dir, headline, styles)


__all__ = ["LAYOUTS", "ONE_COLUMN", "TWO_COLUMN", "draw_figures", "error_bars", "pareto_front", "save_figure"]
