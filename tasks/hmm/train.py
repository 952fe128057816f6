"""Train the exact task's MDM on fresh samples of the HMM (`python -m bench train hmm_mdm`).

Every step draws new sequences from the chain (the data are unlimited, so nothing is held out
by index: validation uses sequences drawn from a separate seed). Each sequence is masked at a
rate t ~ U(0, 1) drawn per sequence; the loss is cross-entropy on the masked positions. The
log reports the validation loss at a few masking rates and, at the end, the model's
sequential-decoding KL to the true chain on 500 samples (log q under the model minus log p).
"""
import logging
import math
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from tqdm import tqdm

from bench.registry import bounded
from tasks.hmm import chain
from tasks.hmm.model import HMMTransformer, save_mdm

log = logging.getLogger("train.hmm_mdm")


@dataclass
class TrainConfig:
    steps: int = bounded(4000, low=1)         # optimiser steps
    batch_size: int = bounded(128, low=1)     # sequences per step (fresh samples each step)
    lr: float = 2e-3          # peak learning rate (cosine decay, linear warm-up)
    warmup: int = 200
    weight_decay: float = 0.01
    seed: int = 0
    threads: int = 2
    hmm: str = ""             # HMM parameter file (default: the shipped one)


def lr_at(step, cfg):
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * progress))


def masked_batch(hmm, n, generator):
    """(tokens [n, N], masked [n, N]) of fresh samples, each masked at its own rate t ~ U(0, 1)."""
    values, _ = chain.sample(hmm, n, generator)
    rate = torch.rand(n, 1, generator=generator)
    masked = torch.rand(values.shape, generator=generator) < rate
    masked[~masked.any(1), 0] = True
    return values + 1, masked


@torch.no_grad()
def validation_loss(network, hmm, rates=(0.15, 0.5, 0.9), n=1000):
    """Masked-position cross-entropy (nats) at fixed masking rates, on sequences of seed 10**6."""
    generator = torch.Generator().manual_seed(10 ** 6)
    values, _ = chain.sample(hmm, n, generator)
    out = {}
    network.eval()
    for rate in rates:
        masked = torch.rand(values.shape, generator=generator) < rate
        logits, _ = network(values + 1, masked)
        out[rate] = F.cross_entropy(logits[masked], values[masked]).item()
    network.train()
    return out


def train(model_cfg, cfg, out):
    """Train and save to ``out`` (with the config and the log's numbers in the payload)."""
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    hmm = chain.load_hmm(cfg.hmm or chain.DEFAULT_HMM)
    model_cfg.n_values, model_cfg.length = hmm.n_values, hmm.length
    network = HMMTransformer(model_cfg)
    optimizer = torch.optim.AdamW(network.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    generator = torch.Generator().manual_seed(cfg.seed)
    start = time.perf_counter()
    for step in tqdm(range(cfg.steps), desc="hmm_mdm", unit="step"):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, cfg)
        tokens, masked = masked_batch(hmm, cfg.batch_size, generator)
        logits, _ = network(tokens, masked)
        loss = F.cross_entropy(logits[masked], tokens[masked] - 1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
        optimizer.step()
        if step % 500 == 0 or step == cfg.steps - 1:
            log.info("step %d loss %.4f val %s (%.0f s)", step, loss.item(),
                     {k: round(v, 4) for k, v in validation_loss(network, hmm).items()}, time.perf_counter() - start)
    meta = {"train": {k: getattr(cfg, k) for k in cfg.__dataclass_fields__},
            "seconds": round(time.perf_counter() - start),
            "validation_loss": validation_loss(network, hmm), "command": "python -m bench train hmm_mdm"}
    save_mdm(out, network, meta)
    log.info("saved %s: %s", out, meta)
