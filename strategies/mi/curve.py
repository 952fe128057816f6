"""`bench mi curve --task T`: the MI estimator's held-out Pearson against the number of labelled
training contexts, and where a log-linear fit of it would reach the project's lines.

Every point is an estimator trained as `bench train mi` trains one (train.py's ``train_on``, the
same MITrainConfig, a val_share of the point's own contexts picking the epoch, torch's generator
in the state `bench train mi` leaves it in after seeding and loading the model), on k contexts of
the train label set (nested random subsets in the set's order: ``subsets``), scored on the heldout
label set with `bench mi eval`'s metrics. So the point at the set's full size and seed 0 is `bench
train mi`'s estimator, bit for bit.

Writes ``<out>/mi_curve_<task>[_<model>].json``, ``.md`` and ``.png`` (and ``.pdf``).
"""
import json
import math
import re
import time
from dataclasses import asdict, replace
from itertools import product
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from bench.errors import BenchError
from bench.provenance import provenance
from bench.results.files import write_text_atomic
from strategies.mi.labels import default_size, label_meta, load_labels
from strategies.mi.train import label_features, labelled_pairs, scored, seeded_model, train_on, val_count

LEVELS = (0.75, 0.85)   # docs/mi.md: below 0.75 counts as "retrain"; 0.85 is the target
SCHEMA = "mi-curve-1"
SUBSET_SEED = 0   # one draw of the contexts for every seed: the seeds vary the training only
FLAT = 1e-9   # a slope at or below it is flat: least squares on a constant curve leaves rounding noise


def parse_numbers(text, flag, low):
    """'20,40,80' -> sorted distinct ints, each at least ``low``; a one-line error otherwise."""
    try:
        values = sorted({int(v) for v in text.split(",") if v.strip()})
    except ValueError:
        raise BenchError(f"{flag} takes comma-separated whole numbers, got {text!r}") from None
    if not values or values[0] < low:
        raise BenchError(f"{flag} takes whole numbers of at least {low}, got {text!r}")
    return values


def check_sizes(sizes, n, folder_name):
    too_big = [k for k in sizes if k > n]
    if too_big:
        raise BenchError(f"--sizes {','.join(map(str, too_big))} exceed the train label set's {n} contexts "
                         f"({folder_name}); give sizes up to {n}, or a larger set with --n")


def subsets(n, sizes):
    """{k: indices of k of the n train contexts, in the set's order}: the first k of one seeded
    permutation, so the subsets are nested. Not the set's first k: a label set stores its
    decoding-run states before its random masks (every task's mi_contexts), so those would be one
    kind only. Kept in the set's order, so k = n is the whole set as `bench train mi` reads it
    (and a subset's first val_share picks its epoch as there)."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(SUBSET_SEED))
    return {k: order[:k].sort().values for k in sizes}


def size_counts(labels, features, pick, cfg):
    """What the contexts ``pick`` give: labelled rows (probed, or every masked row where the set
    probed all), ordered pairs as the loss counts them, and those of the part the loss reads."""
    masked, mi, target = labels[1][pick], labels[2][pick], features[3][pick]
    k, n_val = len(pick), val_count(len(pick), cfg)
    return {"contexts": k, "val_contexts": n_val, "rows": int((masked & ~mi.isnan().all(-1)).sum()),
            "pairs": int(labelled_pairs(masked, target).sum()),
            "loss_pairs": int(labelled_pairs(masked[n_val:], target[n_val:]).sum())}


def fit_point(train, heldout, pick, cfg, state):
    """(heldout metrics and seconds, network) of an estimator trained on the contexts ``pick`` of
    ``train`` from the CPU generator ``state`` that `bench train mi` would start from."""
    torch.manual_seed(cfg.seed)   # every device's generator, as `bench train mi` seeds them
    torch.set_rng_state(state)    # then the CPU one as the model's load left it
    start = time.perf_counter()
    network, history, _ = train_on(tuple(t[pick] for t in train), cfg)
    metrics = scored(network, heldout, cfg.device)
    return {"pearson": metrics["pearson"], "heldout_pairs": metrics["pairs"],
            "best_val_pearson": max(h["val_pearson"] for h in history),
            "seconds": round(time.perf_counter() - start, 2)}, network


def measure(task, model, first, cfg, sizes, seeds):
    """(points, heldout contexts): per size, its counts and each seed's fit. ``first``: the CPU
    generator's state after seeds[0]'s seeding and load of ``model``."""
    labels = load_labels(task, model.checkpoint_id, "train", cfg.n_train or None)
    train = label_features(task, model, labels, cfg.device)
    heldout = label_features(task, model, load_labels(task, model.checkpoint_id, "heldout"), cfg.device)
    # another seed's start: its own seeding and load (a load may draw from the generator)
    states = {seeds[0]: first, **{s: seeded_model(task, replace(cfg, seed=s))[1] for s in seeds[1:]}}
    picks = subsets(len(labels[0]), sizes)
    points = {k: {**size_counts(labels, train, picks[k], cfg), "fits": []} for k in sizes}
    for k, seed in tqdm(list(product(sizes, seeds)), desc=f"MI curve {task.name}", unit="fit"):
        result, _ = fit_point(train, heldout, picks[k], replace(cfg, seed=seed), states[seed])
        points[k]["fits"].append({"seed": seed, **result})
    for point in points.values():
        point["pearson_mean"] = float(np.mean([f["pearson"] for f in point["fits"]]))
    return list(points.values()), len(heldout[0])


def log_fit(sizes, means):
    """(intercept, slope) of the least-squares line of mean Pearson on ln(contexts) over the
    finite means; None with fewer than two of them."""
    x, y = np.log(np.asarray(sizes, float)), np.asarray(means, float)
    keep = np.isfinite(y)
    if keep.sum() < 2:
        return None
    slope, intercept = np.polyfit(x[keep], y[keep], 1)
    return float(intercept), float(slope)


def crossing(fit, level):
    """Contexts at which the fit reaches ``level`` (inf past e^700); None where it is flat or falls."""
    intercept, slope = fit
    if slope <= FLAT:
        return None
    log_k = (level - intercept) / slope
    return math.exp(log_k) if log_k < 700 else math.inf


def labelling_cost(meta):
    """{seconds_per_context, source, device, threads} of a label set from its meta.json: the
    per-chunk probing time where recorded, else its last run's seconds (too low if that run
    resumed a killed one); None where neither is there."""
    where = {"device": meta.get("device"), "threads": meta.get("threads")}
    if meta.get("seconds_per_context"):
        return {"seconds_per_context": meta["seconds_per_context"], "source": "probing time per chunk", **where}
    if meta.get("seconds_last_run"):
        return {"seconds_per_context": meta["seconds_last_run"] / meta["n"],
                "source": "the set's last labelling run, too low if it resumed", **where}
    return None


def count(x, decimals=0):
    """A number for a sentence: digits up to ten million, then three significant figures (a flat
    fit can put the crossing at 1e40 contexts)."""
    if not math.isfinite(x):
        return "more than e^700"
    return f"about {x:,.{decimals}f}" if x < 1e7 else f"about {x:.3g}"


def duration(seconds):
    return f"{count(seconds)} s" if seconds < 3600 else f"{count(seconds / 3600, 1)} hours"


def cost_text(found, cost):
    if not cost:
        return "; the train set recorded no labelling time (sets labelled from now on record it in meta.json)"
    threads = f", {cost['threads']} thread{'s' * (cost['threads'] != 1)}" if cost["threads"] else ""
    return (f", {duration(found['label_seconds'])} of labelling at the train set's "
            f"{cost['seconds_per_context']:.3g} s per context ({cost['device']}{threads}; from {cost['source']})")


def reach(fit, level, sizes, rows_per_context, cost):
    """What the fit says of ``level``: contexts, rows and labelling seconds there, and a sentence."""
    found = {"level": level, "contexts": None, "rows": None, "label_seconds": None, "extrapolated": None}
    if fit is None:
        return {**found, "statement": f"No fit for Pearson {level}: fewer than two sizes gave a finite Pearson."}
    lo, hi = min(sizes), max(sizes)
    k = crossing(fit, level)
    if k is None:
        return {**found, "statement": f"Pearson {level} not reached: the fit is flat/decreasing (slope "
                                      f"{fit[1]:+.3f} per e-fold of contexts over {lo}-{hi} contexts)."}
    found.update(contexts=k, rows=k * rows_per_context, extrapolated=not lo <= k <= hi,
                 label_seconds=k * cost["seconds_per_context"] if cost else None)
    where = ("inside the measured range" if not found["extrapolated"] else
             f"an extrapolation of a log-linear fit over the measured range ({lo}-{hi} contexts), not a measurement"
             + ("; the fit passes it below the smallest size" if k < lo else ""))
    return {**found, "statement": f"Pearson {level} at {count(k)} contexts: {where}. That is "
                                  f"{count(found['rows'])} probe-labelled rows{cost_text(found, cost)}."}


def model_suffix(model_flag):
    """'' or '_<name>' for the file names: the --model flag's file stem, safe in a file name."""
    if not model_flag:
        return ""
    return "_" + re.sub(r"[^A-Za-z0-9._-]+", "-", Path(str(model_flag)).stem)


def curve(task, cfg, sizes, seeds, out_dir, command, model_flag=None):
    """Measure the curve and write its JSON, Markdown and figure; returns the payload."""
    cfg.seed = seeds[0]
    model, first = seeded_model(task, cfg)
    n = cfg.n_train or default_size(task, "train")
    train_folder, train_meta = label_meta(task, model.checkpoint_id, "train", n)
    check_sizes(sizes, n, train_folder.name)   # before any features are computed or any estimator trained
    heldout_folder, _ = label_meta(task, model.checkpoint_id, "heldout")
    points, heldout_contexts = measure(task, model, first, cfg, sizes, seeds)
    rows_per_context = points[-1]["rows"] / points[-1]["contexts"]
    fit = log_fit(sizes, [p["pearson_mean"] for p in points])
    cost = labelling_cost(train_meta)
    payload = {"schema_version": SCHEMA, "task": task.name, "model": model_flag, "model_id": model.checkpoint_id,
               "label_sets": {"train": train_folder.name, "heldout": heldout_folder.name},
               "train_set_contexts": n, "heldout_contexts": heldout_contexts, "sizes": sizes, "seeds": seeds,
               "train_config": {k: v for k, v in asdict(cfg).items() if k != "seed"}, "points": points,
               "rows_per_context": rows_per_context, "labelling": cost,
               "fit": fit and {"intercept": fit[0], "slope_per_ln_context": fit[1]},
               "levels": [reach(fit, level, sizes, rows_per_context, cost) for level in LEVELS],
               "command": command, "provenance": provenance()}
    write_outputs(payload, Path(out_dir), f"mi_curve_{task.name}{model_suffix(model_flag)}")
    return payload


def write_outputs(payload, out_dir, stem):
    out_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out_dir / f"{stem}.json", json.dumps(payload, indent=1))
    write_text_atomic(out_dir / f"{stem}.md", curve_markdown(payload, stem))
    draw_curve(payload, out_dir, stem)
    for level in payload["levels"]:
        print(level["statement"])
    print(f"written: {out_dir / stem}.json, .md, .png")


def curve_markdown(payload, stem):
    seeds = payload["seeds"]
    lines = [f"# MI estimator learning curve: {payload['task']} (model {payload['model_id']})", "",
             f"Held-out Pearson of the MI estimator trained as `bench train mi` trains it (MITrainConfig "
             f"defaults; a {payload['train_config']['val_share']:g} share of each size's own contexts picks the "
             f"epoch) on k contexts of the train label set `{payload['label_sets']['train']}` "
             f"({payload['train_set_contexts']} contexts; nested random subsets kept in the set's order, "
             f"the whole set at k = {payload['train_set_contexts']}), scored on the heldout set "
             f"`{payload['label_sets']['heldout']}` ({payload['heldout_contexts']} contexts) with "
             f"`bench mi eval`'s metrics. Pairs: ordered labelled pairs of the k contexts as the loss counts "
             f"them; rows: probe-labelled rows.", "",
             "| contexts | rows | pairs | " + " | ".join(f"Pearson seed {s}" for s in seeds) + " | mean | seconds |",
             "| --- " * (5 + len(seeds)) + "|"]
    for p in payload["points"]:
        lines.append(f"| {p['contexts']} | {p['rows']} | {p['pairs']} | "
                     + " | ".join(f"{f['pearson']:.3f}" for f in p["fits"])
                     + f" | {p['pearson_mean']:.3f} | {sum(f['seconds'] for f in p['fits']):.0f} |")
    fit = payload["fit"]
    lines += ["", "Fit: mean Pearson = " + (f"{fit['intercept']:.3f} + {fit['slope_per_ln_context']:.3f} ln(contexts), "
              "least squares over the measured sizes." if fit else "none (fewer than two sizes)."), ""]
    lines += [level["statement"] for level in payload["levels"]]
    lines += ["", f"Figure: `{stem}.png`. Command: `{payload['command']}`."]
    return "\n".join(lines) + "\n"


def draw_curve(payload, out_dir, stem):
    from bench.report.canvas import save_figure
    caption = (f"{payload['task']}: held-out Pearson of the MI estimator against the number of training "
               "contexts (log axis), each seed and their mean, the least-squares log-linear fit (dashed) and "
               "the 0.75 and 0.85 lines.")
    return save_figure(curve_figure(payload), out_dir, stem, dpi=150, caption=caption)


def curve_figure(payload):
    """Pearson against contexts (log x): each seed's points, their mean, the fit, the lines."""
    import matplotlib.pyplot as plt

    from bench.report.canvas import PALETTE, label_log_axis
    fig, ax = plt.subplots(figsize=(5.0, 3.4), layout="constrained")
    sizes = np.array([p["contexts"] for p in payload["points"]], float)
    for i, seed in enumerate(payload["seeds"]):
        ax.scatter(sizes, [p["fits"][i]["pearson"] for p in payload["points"]], s=14, alpha=0.6,
                   color=PALETTE[1 + i % 8], label=f"seed {seed}", zorder=3)
    ax.plot(sizes, [p["pearson_mean"] for p in payload["points"]], "-o", color=PALETTE[0], ms=4, label="mean")
    if payload["fit"]:
        x = np.geomspace(sizes.min(), sizes.max(), 50)
        ax.plot(x, payload["fit"]["intercept"] + payload["fit"]["slope_per_ln_context"] * np.log(x), "--",
                color="grey", lw=1, label="log-linear fit")
    for level, style in zip(LEVELS, (":", "-.")):
        ax.axhline(level, color="black", lw=0.8, ls=style, label=f"Pearson {level}")
    ax.set_xscale("log")
    ax.set_xlim(sizes.min() / 1.2, sizes.max() * 1.2)
    ax.set(xlabel="training contexts (probe-labelled)", ylabel="held-out Pearson",
           title=f"{payload['task']}: MI estimator learning curve")
    ax.title.set_fontsize(8)
    for axis in (ax.xaxis, ax.yaxis):
        axis.label.set_fontsize(8)
    ax.tick_params(labelsize=7, which="both")
    ax.legend(fontsize=7, loc="best")
    label_log_axis(ax)
    return fig
