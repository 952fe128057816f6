"""Learned-order training curves for `bench report`, read from the shipped policy files' ``meta``
(every tasks/*/weights/**/order_policy_T*.pt): P's held-out log-likelihood and the task's reward
of P's decodes (sampled and thresholded) against training steps, one line per budget T, and a
Markdown table of the start and end of every curve. Imports no model code (`bench report` loads
this module alone)."""
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from bench.registry import register_report

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"
PANELS = (("loglik_p", "P's held-out log-likelihood\nE_P[log p(x0 | order)] (nats)"),
          ("reward_sample", "held-out reward, P sampled"), ("reward_threshold", "held-out reward, P thresholded"))


def policy_files(tasks_dir=TASKS_DIR):
    """{task folder label: [(T, meta)]} of every trained policy file (initialisations left out)."""
    found = {}
    for path in sorted(tasks_dir.glob("*/weights/**/order_policy_T*.pt")):
        if path.stem.endswith("_init"):
            continue
        payload = torch.load(path, map_location="cpu", weights_only=False)
        if payload.get("format") != 2 or "held_out" not in payload.get("meta", {}):
            continue
        label = str(path.parent.relative_to(tasks_dir)).replace("/weights", "").replace("/", " ")
        found.setdefault(label, []).append((payload["budget"], payload["meta"]))
    return {label: sorted(items, key=lambda item: item[0]) for label, items in found.items()}


def draw_curves(label, items, out_dir):
    """One row of panels for one task's policies; returns the PNG and PDF paths."""
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4.2 * len(PANELS), 3.2))
    for ax, (key, title) in zip(axes, PANELS):
        for budget, meta in items:
            points = [(e["step"], e[key]) for e in meta["held_out"] if key in e]
            ax.plot(*zip(*points), marker="o", ms=3, label=f"T={budget}")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("training step")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"learned order on {label}: held-out curves (step 0 = the EB-Sampler initialisation)", fontsize=10)
    fig.tight_layout()
    stem = Path(out_dir) / f"learned_curves_{label.replace(' ', '_')}"
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    for path in paths:
        fig.savefig(path, dpi=200)
    plt.close(fig)
    return paths


def curve_table(found):
    """Markdown: for every task and T, the objective and the held-out numbers at step 0 and at the end."""
    keys = ("loglik_p", "reward_sample", "passes_sample", "reward_threshold", "passes_threshold")
    lines = ["| task | T | objective | steps | seconds | " + " | ".join(f"{k} (start -> end)" for k in keys) + " |",
             "|---|---|---|---|---|" + "---|" * len(keys)]
    for label, items in found.items():
        for budget, meta in items:
            first, last, cfg = meta["held_out"][0], meta["held_out"][-1], meta["train_config"]
            cells = [f"{first[k]:.3f} -> {last[k]:.3f}" for k in keys]
            lines.append(f"| {label} | {budget} | {cfg['objective']} | {cfg['steps']} | {meta['seconds']:.0f} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


@register_report("learned")
def report_learned(results_dir, out_dir, figures=True):
    """reports/learned_training.md and, with ``figures``, learned_curves_<task>.png/pdf."""
    found = policy_files()
    if not found:
        return []
    paths = []
    if figures:
        for label, items in found.items():
            paths += draw_curves(label, items, out_dir)
    table = Path(out_dir) / "learned_training.md"
    table.write_text("Held-out numbers of the shipped order policies during training (the training data's "
                     "held-out examples, not the benchmark's inputs); reward is the task's `order_reward` "
                     "(Sudoku: solved board; exact task: log p(x) - log q(x)).\n\n" + curve_table(found))
    return paths + [table]
