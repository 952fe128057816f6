"""Train the shipped protein MDM: ESMC architecture, masked-diffusion objective.

Each training sequence gets a mask ratio t ~ U(0, 1) and every residue is masked with
probability t (at least one); the loss is cross-entropy over the 20 amino acids on masked
residues. Validation perplexity masks 15% of the residues of held-out-cluster sequences
(uniform guessing gives 20).

Data: ``data=small`` (default) draws from the training clusters of the committed 50-100 set;
``data=full`` from the Swiss-Prot windows of `bench data protein`; ``data=mix`` half of each batch
from each. ``init=PATH`` continues from a checkpoint (the shipped model is two stages: see README).
"""
import json
import logging
import math
import time
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from tqdm import tqdm

from bench.checkpoints import file_id
from bench.device import selected
from bench.errors import BenchError
from bench.files import MissingFile
from bench.registry import bounded
from strategies.mi.contexts import random_masks
from tasks.protein.encoding import encode
from tasks.protein.model import AA_IDS, MASK_ID, STAGE1_WEIGHTS, build_esmc, load_protein_model, save_protein_checkpoint
from tasks.protein.split import make_split

log = logging.getLogger("train.protein")


@dataclass
class ProteinModelConfig:
    d_model: int = 192   # width
    n_heads: int = 6     # attention heads
    n_layers: int = 4    # transformer blocks


@dataclass
class ProteinTrainConfig:
    steps: int = bounded(3200, low=1)        # optimiser steps
    batch_size: int = bounded(64, low=1)     # sequences per step
    lr: float = 1e-3         # peak learning rate (linear warm-up, cosine decay)
    warmup: int = 200        # warm-up steps
    weight_decay: float = 0.01
    val_size: int = 512      # validation sequences for perplexity
    seed: int = 0
    threads: int = 2
    data: str = "small"      # small: the committed 50-100 set's training clusters; full: `bench data protein`;
                             # mix: each batch half small, half full
    init: str = ""           # a protein checkpoint to start from (same shape), or "" for a fresh network


def masked_loss(network, tokens, residue, masked):
    """Mean cross-entropy over the 20 amino acids on masked residues (on the network's device,
    under --dtype's autocast)."""
    device = next(network.parameters()).device
    tokens, masked = tokens.to(device), masked.to(device)
    with selected().autocast():
        logits = network(tokens.masked_fill(masked, MASK_ID))[0][..., AA_IDS.to(device)]
    targets = (tokens[masked][:, None] == AA_IDS.to(device)).float().argmax(1)
    return F.cross_entropy(logits[masked].float(), targets)


@torch.no_grad()
def validation_perplexity(network, sequences, rate=0.15, seed=0):
    """exp(mean CE) with ``rate`` of residues masked, in batches of 128 (fixed masks)."""
    network.eval()
    generator, total, count = torch.Generator().manual_seed(seed), 0.0, 0
    for i in range(0, len(sequences), 128):
        tokens, residue = encode(sequences[i:i + 128])
        masked = residue & (torch.rand(residue.shape, generator=generator) < rate)
        n = int(masked.sum())
        total += masked_loss(network, tokens, residue, masked).item() * n
        count += n
    network.train()
    return math.exp(total / count)


def lr_at(step, cfg):
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)))


def training_sequences(data, split):
    """Lists to draw batches from, in equal shares: the committed set's training clusters
    ("small"), the cached Swiss-Prot windows ("full"), or both ("mix")."""
    if data == "small":
        return [[(s, True, True) for _, s in split.train]]
    if data == "mix":
        return training_sequences("small", split) + training_sequences("full", split)
    if data == "full":
        from tasks.protein.bigdata import full_set_path, window_ends
        from tasks.protein.fasta import read_fasta
        try:
            windows = read_fasta(full_set_path())
        except MissingFile as err:
            raise BenchError(f"{err}; build it first with: python -m bench data protein") from None
        if windows.names and windows.names[0].count("/") != 2:
            raise BenchError(f"{full_set_path()} is from an older `bench data protein`; rebuild it")
        return [[(s, *window_ends(n)) for n, s in zip(windows.names, windows.sequences)]]
    raise BenchError(f"unknown protein training data {data!r}; allowed: small, full, mix")


def draw_batch(pools, batch_size, generator):
    """``batch_size`` (sequence, has_start, has_end) rows, split evenly over the pools, drawn
    with replacement."""
    batch = []
    for k, pool in enumerate(pools):
        share = batch_size // len(pools) + (k < batch_size % len(pools))
        batch += [pool[i] for i in torch.randint(len(pool), (share,), generator=generator)]
    return batch


def starting_network(model_cfg, init):
    """A fresh ESMC of ``model_cfg``'s shape, or the network of checkpoint ``init`` (same shape)."""
    if not init:
        return build_esmc(**asdict(model_cfg))
    network = load_protein_model(init).network
    if network.embed.embedding_dim != model_cfg.d_model or len(network.transformer.blocks) != model_cfg.n_layers:
        raise BenchError(f"init checkpoint {init} does not have the shape {model_cfg}")
    return network


def train(model_cfg, cfg, out_path=STAGE1_WEIGHTS):
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    generator = torch.Generator().manual_seed(cfg.seed)
    split = make_split()
    pools = training_sequences(cfg.data, split)
    val_seqs = [s for _, s in split.validation][:cfg.val_size]
    network = starting_network(model_cfg, cfg.init).train().to(selected().device)   # --device of `bench train`
    optimizer = torch.optim.AdamW(network.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    history, start = [], time.time()
    def meta(done):                   # the checkpoint's meta, history so far included
        return {"train": asdict(cfg), "history": history, "finished": done,
                "train_minutes": (time.time() - start) / 60, "n_train": sum(map(len, pools)),
                "init_id": file_id(cfg.init) if cfg.init else None}

    for step in tqdm(range(cfg.steps), desc="train protein", unit="step"):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, cfg)
        sequences, has_start, has_end = zip(*draw_batch(pools, cfg.batch_size, generator))
        tokens, residue = encode(list(sequences), list(has_start), list(has_end))
        loss = masked_loss(network, tokens, residue, random_masks(residue, generator, low=0.0))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
        optimizer.step()
        if step % 250 == 0 or step == cfg.steps - 1:
            record = {"step": step, "loss": loss.item(), "val_ppl_15": validation_perplexity(network, val_seqs),
                      "minutes": (time.time() - start) / 60}
            history.append(record)
            log.info(json.dumps(record))
            save_protein_checkpoint(out_path, network, asdict(model_cfg), meta(False))
    save_protein_checkpoint(out_path, network, asdict(model_cfg), meta(True))
    return history
