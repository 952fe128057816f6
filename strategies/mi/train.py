"""`bench train mi --task T`: fit the MI estimator to a task's exact-MI label set.

The frozen model's hidden states and entropies are computed once for every context; the
estimator is trained with AdamW on MSE of log1p(MI / 0.01) over masked-masked pairs (target:
the mean of both directions of the exact MI), on the ``train`` label set only. A tenth of it
is kept aside to pick the best epoch.
"""
import logging
import time
from dataclasses import asdict, dataclass

import torch
from tqdm import tqdm

from bench.checkpoints import count_params
from bench.device import place, placement, selected
from strategies.mi.estimator import (
    FILE_NAME,
    EstimatorConfig,
    MIEstimator,
    save_estimator,
    transform,
)
from strategies.mi.exact import label_target
from strategies.mi.labels import load_labels
from strategies.mi.metrics import estimator_metrics, pair_values

log = logging.getLogger("train.mi")


@dataclass
class MITrainConfig:
    epochs: int = 40          # passes over the training contexts
    batch_size: int = 32      # contexts per step
    lr: float = 2e-3          # peak learning rate (cosine decay)
    weight_decay: float = 0.01
    val_share: float = 0.1    # share of training contexts kept aside to choose the epoch
    n_train: int = 0          # size of the train label set (0 = the default size)
    seed: int = 0
    device: str = ""          # where the frozen model and the estimator run (cpu, cuda, cuda:N; "": --device)


@torch.no_grad()
def model_features(model, tokens, masked, device, batch=256):
    """(hidden [C, N, D], probs [C, N, V]) of the frozen model on every context (kept on CPU)."""
    model.to(device)
    hidden, probs = [], []
    for s in range(0, len(tokens), batch):
        out = model(tokens[s:s + batch].to(device), masked[s:s + batch].to(device))
        hidden.append(out.hidden.float().cpu())
        probs.append(torch.softmax(out.logits.float(), -1).cpu())
    model.to("cpu")
    return torch.cat(hidden), torch.cat(probs)


def labelled_pairs(masked, target):
    """[C, N, N] bool: the ordered pairs the loss reads (both masked, i != j, labelled)."""
    eye = torch.eye(masked.shape[1], dtype=torch.bool, device=masked.device)
    return masked[:, :, None] & masked[:, None, :] & ~eye & ~target.isnan()   # NaN: a pair not probed


def pair_loss(network, hidden, probs, masked, target):
    pred = network(hidden, probs, masked)
    pairs = labelled_pairs(masked, target)
    return ((transform(pred) - transform(target.nan_to_num(0.0))) ** 2)[pairs].mean()


@torch.no_grad()
def predict(network, hidden, probs, masked, device, batch=256):
    network.eval()
    parts = [network(hidden[s:s + batch].to(device), probs[s:s + batch].to(device),
                     masked[s:s + batch].to(device)).cpu() for s in range(0, len(hidden), batch)]
    network.train()
    return torch.cat(parts)


def scored(network, features, device):
    """`bench mi eval`'s metrics (strategies/mi/metrics.py) of ``network`` on ``features``
    (hidden, probs, masked, target): what picks the epoch and what the learning curve reports."""
    hidden, probs, masked, target = features
    return estimator_metrics(*pair_values(predict(network, hidden, probs, masked, device), target, masked))


def fit(network, data, val, cfg):
    """Train in place; returns (best state dict, per-epoch history)."""
    opt = torch.optim.AdamW(network.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps = cfg.epochs * -(-len(data[0]) // cfg.batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, cfg.lr, total_steps=steps, pct_start=0.05)
    generator = torch.Generator().manual_seed(cfg.seed)
    best, history = (float("-inf"), None), []
    for epoch in tqdm(range(cfg.epochs), desc="MI estimator", unit="epoch"):
        order, total = torch.randperm(len(data[0]), generator=generator), 0.0
        for s in range(0, len(order), cfg.batch_size):
            batch = [t[order[s:s + cfg.batch_size]].to(cfg.device) for t in data]
            loss = pair_loss(network, *batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(batch[0])
        pearson = scored(network, val, cfg.device)["pearson"]
        history.append({"epoch": epoch + 1, "train_loss": total / len(order), "val_pearson": pearson})
        log.info("epoch %d train loss %.4f val pearson %.4f", epoch + 1, total / len(order), pearson)
        if pearson > best[0]:
            best = (pearson, {k: v.detach().cpu().clone() for k, v in network.state_dict().items()})
    return best[1], history


def seeded_model(task, cfg):
    """The frozen model on cfg's device (cfg.device set to it), loaded right after seeding torch
    with cfg.seed, and the CPU generator's state after the load: a load may draw from the generator
    (hmm_mdm's does) and the estimator's initial weights are its next draws, so a fit started from
    that state is the one `bench train mi` makes with that seed."""
    torch.manual_seed(cfg.seed)
    where = placement(cfg.device or selected().device, selected().dtype)   # the device= setting wins over --device
    cfg.device = where.device
    model = place(task.load_model(), where)   # the frozen model; in bfloat16 under --dtype bfloat16
    return model, torch.get_rng_state()


def label_features(task, model, labels, device):
    """(hidden, probs, masked, target) of a loaded label set (tokens, masked, directed mi): the
    frozen model's features and what the estimator learns (the task's ``mi_pairs``)."""
    tokens, masked, mi = labels
    hidden, probs = model_features(model, tokens, masked, device)
    return hidden, probs, masked, label_target(mi, getattr(task, "mi_pairs", "both")).clamp_min(0)


def val_count(contexts, cfg):
    """How many of ``contexts`` training contexts are set aside to pick the epoch (at least one)."""
    return max(1, int(contexts * cfg.val_share))


def train_on(features, cfg):
    """An estimator fit to ``features`` (hidden, probs, masked, target) from torch's generator as
    it stands; the first val_share of the contexts are set aside to pick the epoch.
    Returns (network with the best epoch's weights, history, contexts set aside)."""
    n_val = val_count(len(features[0]), cfg)
    val, data = tuple(t[:n_val] for t in features), tuple(t[n_val:] for t in features)
    hidden, probs = features[:2]
    network = MIEstimator(EstimatorConfig(d_hidden=hidden.shape[-1], n_values=probs.shape[-1])).to(cfg.device)
    state, history = fit(network, data, val, cfg)
    network.load_state_dict(state)
    return network, history, n_val


def train_estimator(task, settings_cfg, out=None):
    """Train and save the estimator of ``task``'s shipped model; returns the weights path."""
    cfg = settings_cfg
    model, _ = seeded_model(task, cfg)
    labels = load_labels(task, model.checkpoint_id, "train", cfg.n_train or None)
    start = time.perf_counter()
    network, history, n_val = train_on(label_features(task, model, labels, cfg.device), cfg)
    meta = {"train_config": asdict(cfg), "history": history, "train_contexts": len(labels[0]) - n_val,
            "val_contexts": n_val, "seconds": round(time.perf_counter() - start, 1),
            "hidden_layer": model.hidden_layer, "n_params": count_params(network),
            "command": f"python -m bench train mi --task {task.name}{task.helper_flags()}"}
    path = out or task.weights_dir / FILE_NAME
    save_estimator(path, network.cpu(), model.checkpoint_id, meta)
    log.info("saved %s: %d parameters, best val pearson %.4f, %.0f s", path, meta["n_params"],
             max(h["val_pearson"] for h in history), meta["seconds"])
    return path
