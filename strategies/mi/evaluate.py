"""`bench mi eval --task T`: the estimator against exact MI on held-out and out-of-distribution
contexts, its latency next to one model forward pass, and data for the MI maps.

Writes ``<out>/mi/<task>.mi.json`` (read by `bench report`, which draws the maps).
"""
import json
import time

import numpy as np
import torch

from bench.checkpoints import count_params
from bench.device import place
from bench.files import HELPER_LIMIT, checked_path
from bench.provenance import portable_path, provenance
from bench.results import write_text_atomic
from strategies.mi.estimator import FILE_NAME, load_estimator
from strategies.mi.exact import exact_mi, symmetric
from strategies.mi.labels import load_labels
from strategies.mi.metrics import estimator_metrics, pair_values
from strategies.mi.train import label_features, predict

MAP_QUANTILES = (0.25, 0.5, 0.75)   # the fixed states drawn as MI maps: quantiles of the masked count
SCATTER_PAIRS = 4000


def split_report(task, model, network, split):
    """Metrics of one split, plus the tensors the maps and structure figures need."""
    tokens, masked, mi = labels = load_labels(task, model.checkpoint_id, split)
    hidden, probs, _, true = label_features(task, model, labels, "cpu")   # the target the estimator learnt
    pred = predict(network, hidden, probs, masked, "cpu")
    metrics = estimator_metrics(*pair_values(pred, true, masked))
    p_ij, p_ji = pair_values(mi, mi.transpose(1, 2), masked)
    metrics["direction_gap"] = float(np.abs(p_ij - p_ji).mean())  # mean |I_ij - I_ji|, nats
    metrics["contexts"] = len(tokens)
    return metrics, (tokens, masked, true, pred)


def peer_shares(true, pred, masked, peers, top=0.01):
    """Share of the task's structural peers (Sudoku: same row, column or box) among the top ``top``
    share of pairs by exact / predicted MI."""
    both = masked[:, :, None] & masked[:, None, :] & torch.ones_like(peers).triu(1)
    is_peer = peers.expand_as(true)[both].numpy()
    shares = {"all_pairs": float(is_peer.mean())}
    for name, values in (("exact", true[both].numpy()), ("predicted", pred[both].numpy())):
        cut = np.quantile(values, 1 - top)
        shares[name] = float(is_peer[values >= cut].mean())
    return shares


def map_states(tokens, masked, true, pred, model):
    """A few fixed held-out states: the contexts at the MAP_QUANTILES of the masked count. Where
    the label set probed only some positions, these states are probed in full here."""
    counts = masked.sum(1).float()
    states = []
    for q in MAP_QUANTILES:
        index = int((counts - counts.quantile(q)).abs().argmin())
        if true[index].isnan().any():
            true = true.clone()
            true[index] = symmetric(exact_mi(model, tokens[index:index + 1], masked[index:index + 1]))[0].clamp_min(0)
        states.append({"index": index, "n_masked": int(counts[index]), "tokens": tokens[index].tolist(),
                       "masked": masked[index].tolist(), "exact": true[index].round(decimals=4).tolist(),
                       "predicted": pred[index].round(decimals=4).tolist()})
    return states


def scatter_sample(true, pred, masked, seed=0):
    p, t = pair_values(pred, true, masked)
    pick = np.random.default_rng(seed).permutation(len(t))[:SCATTER_PAIRS]
    return {"true": np.round(t[pick], 5).tolist(), "predicted": np.round(p[pick], 5).tolist()}


def latency(model, network, tokens, masked, repeats=5):
    """Median seconds of one model forward pass and of one estimator call on the same batch."""
    def median_time(fn):
        times = []
        for _ in range(repeats + 1):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return float(np.median(times[1:]))  # the first call warms up
    out = model(tokens, masked)
    probs = torch.softmax(out.logits.float(), -1)
    with torch.inference_mode():
        estimator = median_time(lambda: network(out.hidden, probs, masked))
    forward = median_time(lambda: model(tokens, masked))
    return {"batch": len(tokens), "forward_seconds": forward, "estimator_seconds": estimator,
            "estimator_share_of_forward": estimator / forward, "threads": torch.get_num_threads()}


def evaluate(task, out_dir, where=None):
    """Score the shipped estimator of ``task``, its model on ``where`` (a bench.device Placement;
    default the CPU), the estimator on the CPU; print the table and write the JSON."""
    model = place(task.load_model(), where)
    path = task.weights_dir / FILE_NAME
    network = load_estimator(path, model.checkpoint_id, task.name)
    payload = {"schema_version": "mi-1", "task": task.name, "model_id": model.checkpoint_id,
               "estimator": {"path": portable_path(path), "n_params": count_params(network),
                             "meta": torch.load(checked_path(path, "MI estimator", HELPER_LIMIT),
                                                  weights_only=True)["meta"]},
               "grid": task.mi_grid() if hasattr(task, "mi_grid") else 0, "splits": {}}
    for split in ("heldout", "ood"):
        metrics, (tokens, masked, true, pred) = split_report(task, model, network, split)
        peers = task.mi_peers() if hasattr(task, "mi_peers") else None
        if peers is not None:
            metrics["peer_share_top1pct"] = peer_shares(true, pred, masked, peers)
        payload["splits"][split] = metrics
        if split == "heldout":
            payload["maps"] = map_states(tokens, masked, true, pred, model)
            payload["scatter"] = scatter_sample(true, pred, masked)
            payload["latency"] = latency(model, network, tokens[:256], masked[:256])
    payload["provenance"] = provenance()
    target = f"{out_dir}/mi/{task.name}.mi.json"
    write_text_atomic(target, json.dumps(payload))
    print_summary(payload)
    print(f"written: {target}")
    return payload


def print_summary(payload):
    lat = payload["latency"]
    print(f"{payload['task']} MI estimator ({payload['estimator']['n_params']} parameters), "
          f"latency {lat['estimator_seconds'] * 1e3:.1f} ms vs forward {lat['forward_seconds'] * 1e3:.1f} ms "
          f"({100 * lat['estimator_share_of_forward']:.1f}%) on {lat['batch']} contexts")
    for split, m in payload["splits"].items():
        indep = "; ".join(f"tau {i['tau']}: P {i['precision']:.3f} R {i['recall']:.3f}" for i in m["independence"])
        print(f"  {split:8s} {m['contexts']} contexts, {m['pairs']} pairs: pearson {m['pearson']:.3f} "
              f"spearman {m['spearman']:.3f} mae {m['mae']:.4f}; {indep}")
        print("           MAE by true-MI bin: " + ", ".join(
            f"{b['bin']} {b['mae']:.4f} (n={b['pairs']})" for b in m["bins"] if b["mae"] is not None))
        if "peer_share_top1pct" in m:
            print(f"           peers among top-1% pairs: {m['peer_share_top1pct']}")
