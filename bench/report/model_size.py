"""``model_size_<task>``: one task on models of different sizes side by side (its own model and the
``other_models`` its settings declare, say a published model and a smaller one): one panel per model,
smallest first, each family's Pareto frontier of the headline against mean passes (log x) in the
report's family styles, the reference run as a star; shared axes, so a frontier that moves is
read across panels. Each panel is titled with its model's parameter count (its runs' summaries,
``model.n_params``). Drawn only where two or more models have runs."""
import matplotlib.pyplot as plt

from bench.report.canvas import TWO_COLUMN, label_log_axis, save_figure, wrapped
from bench.report.figures import (
    draw_family_fronts,
    family_handles,
    figure_legend,
    quality_label,
    reference_handles,
    references_of,
    split_runs,
    style_axes,
)


def parameter_count(runs):
    """The model's parameter count its runs record (None where none does)."""
    counts = {r.get("model", {}).get("n_params") for r in runs} - {None}
    return max(counts) if counts else None


def count_text(n):
    return "parameters not recorded" if n is None else f"{n / 1e6:.3g}M parameters"


def by_size(groups):
    """(label, runs, parameter count) of each model, smallest first (unrecorded counts last)."""
    sized = [(label, runs, parameter_count(runs)) for label, runs in groups.items()]
    return sorted(sized, key=lambda entry: (entry[2] is None, entry[2] or 0))


def draw_model_sizes(groups, task, out_dir, styles):
    """The figure of ``groups`` ({model label: its runs of ``task``}) as PNG and PDF; [] with fewer
    than two models."""
    if len(groups) < 2:
        return []
    layout, models = TWO_COLUMN, by_size(groups)
    metric = next(iter(groups.values()))[0]["headline"]
    fig, axes = plt.subplots(1, len(models), figsize=(layout.width, layout.height + 0.9), sharex=True, sharey=True,
                             squeeze=False, layout="constrained")
    drawn, handles = set(), []
    for ax, (label, runs, n) in zip(axes.flat, models):
        panel = split_runs(runs, task, metric)
        reference, _ = references_of(panel.exact, task)
        drawn |= set(draw_family_fronts(ax, panel, reference, styles, layout.font + 2))
        handles = handles or reference_handles(reference, (), panel, layout.font)
        ax.set_title(f"{label} ({count_text(n)}), n={runs[0]['n_samples']}", fontsize=layout.font)
        style_axes(ax, panel, layout, ylabel=False)   # an x label per panel: the legend is below them
    fig.suptitle(f"{task}: each family's frontier on {len(models)} models, 95% CIs", fontsize=layout.font)
    fig.supylabel(wrapped(quality_label(panel), layout.height * 0.8, layout.font), fontsize=layout.font)
    figure_legend(fig, handles + family_handles(sorted(drawn), styles), layout)
    label_log_axis(axes.flat[-1])
    return save_figure(fig, out_dir, f"model_size_{task}", dpi=300, caption=caption(task, models, panel))


def caption(task, models, panel):
    named = ", ".join(f"{label} ({count_text(n)})" for label, _, n in models)
    return (f"{task} on models of different sizes, one panel each: {named}; one line per strategy family "
            f"through its best runs (its Pareto frontier), mean forward passes (log x) against "
            f"{panel.quality['label']}, shared axes, 95% CIs both ways; the star and dotted line are the "
            f"reference run.")
