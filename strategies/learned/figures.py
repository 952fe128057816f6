"""Learned-order training curves for `bench report`, read from the training logs of the order
policies the reported runs used (tasks/*/weights/**/order_policy_T*.log beside each policy, and
the kept attempts under .../attempts/ at a used policy's budget): P's held-out log-likelihood and
the task's reward of P's decodes (sampled and thresholded) against training steps, one line per
budget T, and a Markdown table of the start and end of every curve (the jointly trained pairs of
weights/joint/ and their frozen-denoiser counterparts included, each folder its own figure, its
denoiser setting in the table). Imports no model code (`bench report` loads this module alone)."""
import ast
import re
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

from bench.files import HELPER_LIMIT, sha256_of
from bench.registry import register_report
from bench.report.canvas import PALETTE, legend_columns, save_figure, variant_style

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"
HELD_OUT = re.compile(r"train\.order step (?P<step>\d+) held-out (?P<stats>.*)$")
SAVED = re.compile(r"train\.order saved \S+\.pt: held-out .*, (?P<seconds>\d+) s$")   # the run's training time
SETTINGS = ("objective", "denoiser", "denoiser_lr", "param", "lr", "K", "batch_size", "d_inner", "init_sharpness",
            "match_weight", "loglik_weight")
PANELS = (("loglik_p", "P's held-out log-likelihood\nE_P[log p(x0 | order)] (nats)"),
          ("reward_sample", "held-out reward, P sampled"), ("reward_threshold", "held-out reward, P thresholded"))


def parse_log(path):
    """(config dict, [held-out measurement dicts with 'step']) of the last training run in a log; the
    config holds the run's training ``seconds`` where the log says it finished."""
    config, evals = None, []
    for line in Path(path).read_text().splitlines():
        if "training examples" in line and "; config " in line:
            config, evals = ast.literal_eval(line.split("; config ", 1)[1]), []
        elif (found := HELD_OUT.search(line)) and config is not None:
            words = found["stats"].split()
            evals.append({"step": int(found["step"]), **dict(zip(words[::2], map(float, words[1::2])))})
        elif (found := SAVED.search(line)) and config is not None:
            config["seconds"] = int(found["seconds"])
    return config, evals


def training_logs(tasks_dir=TASKS_DIR, policies=None):
    """{label: [(T, config, evals, log name)]} of every order-training log of the current format (its
    held-out lines carry ``reward_sample``): shipped policies and kept attempts (``attempts/``); only
    the logs of the policy files ``policies`` (``used_policies``) where given."""
    found = {}
    for path in sorted(tasks_dir.glob("*/weights/**/order_policy_T*.log")) + sorted(
            tasks_dir.glob("*/weights/**/attempts/*.log")):
        config, evals = parse_log(path)
        if config is None or not evals or "passes_sample" not in evals[0]:
            continue
        if policies is not None and policy_of_log(path, config) not in policies:
            continue
        label = str(path.parent.relative_to(tasks_dir)).replace("/weights", "").replace("/", " ")
        found.setdefault(label, []).append((config["T"], config, evals, path.name))
    return {label: sorted(items, key=lambda item: (item[0], item[3])) for label, items in found.items()}


def policy_of_log(path, config):
    """The policy file a training log trained: the one beside it at its budget T; a kept attempt's,
    the one its attempts/ folder sits beside (the policy it was an attempt at)."""
    folder = path.parent.parent if path.parent.name == "attempts" else path.parent
    return folder / f"order_policy_T{config['T']}.pt"


def draw_curves(label, items, out_dir):
    """One row of panels for one task's policies; returns the PNG and PDF paths."""
    fig, axes = plt.subplots(1, len(PANELS), figsize=(7.0, 2.9), layout="constrained")
    handles = []
    for ax, (key, title) in zip(axes, PANELS):
        for index, (budget, _, evals, name) in enumerate(items):
            points = [(e["step"], e[key]) for e in evals if key in e]
            if points:
                dash, marker = variant_style(index)
                handles = handles[:index] + ax.plot(*zip(*points), marker=marker, ms=3, linestyle=dash, linewidth=1,
                                                    color=PALETTE[index % len(PALETTE)],
                                                    label=f"T={budget}" + (f" ({name})" if "attempt" in label else ""))
        ax.set_title(title, fontsize=8)
        ax.set_xlabel("training step", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.xaxis.set_major_locator(MaxNLocator(4))
    columns = legend_columns(7.0, 7, [h.get_label() for h in handles])
    fig.legend(handles=handles, loc="outside lower center", ncols=columns, fontsize=7, frameon=False)
    fig.suptitle(f"learned order on {label}: held-out curves (step 0 = the EB-Sampler initialisation)", fontsize=9)
    caption = (f"learned order on {label}: P's held-out log-likelihood and the task's held-out reward of P's "
               f"decodes (sampled, thresholded) against training steps, one line per budget T; step 0 is the "
               f"untrained initialisation.")
    return save_figure(fig, out_dir, f"learned_curves_{label.replace(' ', '_')}", dpi=200, caption=caption)


def curve_table(found):
    """Markdown: for every log, its settings and the held-out numbers at step 0 and at its last measurement."""
    keys = ("loglik_p", "reward_sample", "passes_sample", "reward_threshold", "passes_threshold")
    lines = ["| task | log | T | objective, settings | last step | training s | "
             + " | ".join(f"{k} (start -> end)" for k in keys) + " |", "|---|---|---|---|---|---|" + "---|" * len(keys)]
    for label, items in found.items():
        for budget, cfg, evals, name in items:
            shown = [k for k in SETTINGS if k in cfg and not (k == "denoiser_lr" and cfg.get("denoiser") != "joint")]
            settings = ", ".join(f"{k}={cfg[k]}" for k in shown)
            cells = [f"{evals[0][k]:.3f} -> {evals[-1][k]:.3f}" if k in evals[0] else "-" for k in keys]
            lines.append(f"| {label} | {name} | {budget} | {settings} | {evals[-1]['step']} of {cfg['steps']} | "
                         f"{cfg.get('seconds', '-')} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def used_policy_ids(store):
    """The file ids (``helper_ids``) of the order policies the learned runs in ``store`` used, and
    in the stores related to it (the retrained runs the same report reads)."""
    return {(r["config"].get("helper_ids") or {}).get("order_policy") for each in (store, *store.related)
            for r in each.runs(quiet=True) if r.get("strategy") == "learned"} - {None}


def used_policies(store, tasks_dir=TASKS_DIR):
    """The trained policy files under ``tasks_dir`` that learned runs in ``store`` used, matched by
    file id; a run of an untrained ``_init`` policy counts as its trained twin's (its log's step 0)."""
    used = used_policy_ids(store)
    if not used:
        return set()
    return {path.with_name(path.name.replace("_init", "")) for path in tasks_dir.glob("*/weights/**/order_policy_T*.pt")
            if sha256_of(path, "order policy", HELPER_LIMIT)[:12] in used}   # bench.checkpoints.file_id, torch-free


@register_report("learned")
def report_learned(store, out_dir, figures=True):
    """reports/learned_training.md and, with ``figures``, learned_curves_<folder>.png/pdf, of the order
    policies the learned runs in ``store`` used (none without such runs: no table either)."""
    found = training_logs(policies=used_policies(store))
    if not found:
        return []
    paths = []
    if figures:
        for label, items in found.items():
            paths += draw_curves(label, items, out_dir)
    table = Path(out_dir) / "learned_training.md"
    table.write_text("Held-out numbers of the training logs of the order policies the runs used (and the kept "
                     "attempts at them) during training: the training data's held-out examples, not the benchmark's "
                     "inputs; step 0 is the untrained initialisation. Reward is the task's `order_reward` (Sudoku: "
                     "solved board; exact task: log p(x) - log q(x)); loglik_p is E_P[log p(x0 | order)] in nats.\n\n"
                     + curve_table(found))
    return paths + [table]
