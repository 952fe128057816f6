"""MI figures for `bench report`, drawn from ``<results>/mi/<task>.mi.json`` only (made by
`bench mi eval`): exact and predicted MI maps of a few fixed states, predicted-vs-exact scatter
with the calibration bins, and a Markdown table of the estimator's numbers. Imports no model
code: `bench report` loads this module alone (``load_plugins("figures")``)."""
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from bench.registry import register_report
from bench.report.canvas import save_figure

FLOOR = 1e-4  # nats; smaller values are drawn at this floor on log axes


def read_mi_results(store):
    """Every MI evaluation file in ``store`` (its mi/ folder)."""
    found = []
    for path in store.other_files("mi/*.mi.json"):
        payload = json.loads(path.read_text())
        if payload.get("schema_version") == "mi-1":
            found.append(payload)
    return found


def shown_positions(state):
    """Positions to draw: up to the last masked one (drops protein padding)."""
    last = max(i for i, m in enumerate(state["masked"]) if m)
    return slice(0, last + 1)


def draw_grid(ax, n, side):
    """Lines between the rows of a ``side`` x ``side`` board laid out as positions (Sudoku: 9)."""
    for k in range(side, n, side):
        ax.axhline(k - 0.5, color="white", lw=0.3)
        ax.axvline(k - 0.5, color="white", lw=0.3)


def draw_maps(payload, out_dir):
    """One row per fixed state: exact MI | predicted MI, same colour scale."""
    states = payload["maps"]
    fig, axes = plt.subplots(len(states), 2, figsize=(7.0, 2.7 * len(states) + 0.4), squeeze=False,
                             layout="constrained")
    for row, state in zip(axes, states):
        keep = shown_positions(state)
        exact, predicted = (np.array(state[k])[keep, keep] for k in ("exact", "predicted"))
        top = max(exact.max(), predicted.max(), 1e-6)
        for ax, matrix, name in zip(row, (exact, predicted), ("exact (probing)", "predicted (estimator)")):
            image = ax.imshow(matrix, cmap="magma", vmin=0, vmax=top, interpolation="nearest")
            ax.set_title(f"{name}, {state['n_masked']} masked", fontsize=8)
            ax.tick_params(labelsize=7)
            if payload.get("grid"):
                draw_grid(ax, matrix.shape[0], payload["grid"])
        bar = fig.colorbar(image, ax=list(row), shrink=0.8)
        bar.set_label("MI (nats)", fontsize=8)
        bar.ax.tick_params(labelsize=7)
    fig.suptitle(f"{payload['task']}: pairwise MI of held-out states (position x position)", fontsize=9)
    caption = (f"{payload['task']}: exact pairwise MI (left, by probing the model) against the estimator's "
               f"prediction (right) on held-out states, one row per state, one colour scale per row.")
    return save_figure(fig, out_dir, f"mi_maps_{payload['task']}", dpi=150, caption=caption)


def draw_scatter(payload, out_dir):
    """Predicted vs exact MI (log axes) and mean absolute error per exact-MI bin."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(7.0, 3.0), layout="constrained")
    true = np.maximum(payload["scatter"]["true"], FLOOR)
    predicted = np.maximum(payload["scatter"]["predicted"], FLOOR)
    left.scatter(true, predicted, s=2, alpha=0.3, color="tab:blue", rasterized=True)
    left.plot([FLOOR, 3], [FLOOR, 3], "k--", lw=0.8)
    left.set(xscale="log", yscale="log", xlabel="exact MI (nats)", ylabel="predicted MI (nats)",
             title=f"held-out pairs (Pearson {payload['splits']['heldout']['pearson']:.2f})")
    width = 0.38
    for shift, split in ((-width / 2, "heldout"), (width / 2, "ood")):
        bins = [b for b in payload["splits"][split]["bins"] if b["mae"] is not None]
        right.bar(np.arange(len(bins)) + shift, [b["mae"] for b in bins], width, label=split)
        right.set_xticks(np.arange(len(bins)), [b["bin"] for b in bins], fontsize=7)
    right.set(xlabel="exact-MI bin (nats)", ylabel="mean absolute error (nats)", title="calibration by bin")
    right.legend(fontsize=7)
    for ax in (left, right):
        ax.title.set_fontsize(8)
        ax.xaxis.label.set_fontsize(8)
        ax.yaxis.label.set_fontsize(8)
        ax.tick_params(labelsize=7, which="both")
    caption = (f"{payload['task']}: the estimator's predicted MI against exact MI on held-out pairs (log axes, "
               f"dashed: equal), and its mean absolute error per exact-MI bin in and out of distribution.")
    return save_figure(fig, out_dir, f"mi_scatter_{payload['task']}", dpi=150, caption=caption)


def mi_table(payload):
    """Markdown: the estimator's numbers in and out of distribution."""
    lines = ["| split | contexts | pairs | Pearson | Spearman | MAE | P/R indep. (0.01) | P/R indep. (0.05) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for split, m in payload["splits"].items():
        pr = [f"{i['precision']:.3f} / {i['recall']:.3f}" for i in m["independence"]]
        lines.append(f"| {split} | {m['contexts']} | {m['pairs']} | {m['pearson']:.3f} | {m['spearman']:.3f} "
                     f"| {m['mae']:.4f} | {pr[0]} | {pr[1]} |")
    lat = payload["latency"]
    lines.append(f"\nLatency on {lat['batch']} contexts ({lat['threads']} CPU threads): estimator "
                 f"{lat['estimator_seconds'] * 1e3:.1f} ms, "
                 f"one model forward pass {lat['forward_seconds'] * 1e3:.1f} ms "
                 f"({100 * lat['estimator_share_of_forward']:.1f}%).")
    return "\n".join(lines) + "\n"


@register_report("mi")
def report_mi(store, out_dir, figures=True):
    """Every task's MI table (and with ``figures`` its maps and scatter); returns the written paths."""
    paths = []
    for payload in read_mi_results(store):
        if figures:
            paths += draw_maps(payload, out_dir) + draw_scatter(payload, out_dir)
        table = Path(out_dir) / f"mi_{payload['task']}.md"
        table.write_text(mi_table(payload))
        paths.append(table)
    return paths
