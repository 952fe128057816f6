"""Train the Sudoku MDM with the masked-diffusion objective on generated puzzles.

Each example is a training puzzle: its givens stay visible, each blank is masked with a
probability t ~ U(0, 1) drawn per example (so every state a decoder visits is covered), and
the loss is cross-entropy on the masked cells. A share of examples masks all 81 cells at a
random ratio instead, so the model also knows boards without the puzzle's givens.
"""
import json
import logging
import math
import time
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from tqdm import tqdm

from bench.device import selected
from bench.registry import bounded
from tasks.sudoku.checkpoint import DEFAULT_WEIGHTS, save_checkpoint
from tasks.sudoku.data import training_set
from tasks.sudoku.model import SudokuMDM

log = logging.getLogger("train.sudoku")


@dataclass
class TrainConfig:
    steps: int = bounded(2400, low=1)             # optimiser steps
    batch_size: int = bounded(128, low=1)         # puzzles per step
    lr: float = 1e-3              # peak learning rate (cosine decay, linear warm-up)
    warmup: int = 100             # warm-up steps
    weight_decay: float = 0.01    # AdamW weight decay
    random_mask_share: float = 0.1  # share of examples masked over all cells, not just blanks
    val_size: int = 2000          # last pairs of the training stream held out for validation
    seed: int = 0                 # torch / sampling seed
    threads: int = 2              # torch CPU threads


def mask_batch(puzzles, generator, random_share):
    """bool [B, 81] masks: blanks masked at rate t ~ U(0,1), or all cells for a share."""
    batch = puzzles.shape[0]
    rate = torch.rand(batch, 1, generator=generator)
    draw = torch.rand(batch, 81, generator=generator) < rate
    everywhere = torch.rand(batch, 1, generator=generator) < random_share
    masked = draw & ((puzzles == 0) | everywhere)
    empty = ~masked.any(1)  # keep at least one masked cell per example
    first_blank = (puzzles == 0).float().argmax(1)
    masked[empty, first_blank[empty]] = True
    return masked


def lr_at(step, cfg):
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * progress))


def train_step(model, optimizer, puzzles, solutions, generator, cfg):
    masked = mask_batch(puzzles, generator, cfg.random_mask_share)   # drawn on the CPU, then moved
    device = next(model.parameters()).device
    solutions, masked = solutions.to(device), masked.to(device)
    with selected().autocast():
        logits, _ = model(solutions, masked)
        loss = F.cross_entropy(logits[masked].float(), solutions[masked] - 1)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


@torch.no_grad()
def validate(model, puzzles, solutions):
    """Masked-cell loss and cell accuracy with every blank masked (one pass, no decoding)."""
    model.eval()
    device = next(model.parameters()).device
    masked, solutions = (puzzles == 0).to(device), solutions.to(device)
    with selected().autocast():
        logits = model(solutions, masked)[0].float()
    loss = F.cross_entropy(logits[masked], solutions[masked] - 1).item()
    accuracy = (logits.argmax(-1)[masked] == solutions[masked] - 1).float().mean().item()
    model.train()
    return loss, accuracy


def train(model_cfg, cfg, out_path=DEFAULT_WEIGHTS):
    """Train from scratch and save the checkpoint to ``out_path``; returns the history."""
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    generator = torch.Generator().manual_seed(cfg.seed)
    data = training_set()
    puzzles = torch.as_tensor(data.puzzles, dtype=torch.long)
    solutions = torch.as_tensor(data.solutions, dtype=torch.long)
    train_p, train_s = puzzles[:-cfg.val_size], solutions[:-cfg.val_size]
    val_p, val_s = puzzles[-cfg.val_size:][:512], solutions[-cfg.val_size:][:512]
    model = SudokuMDM(model_cfg).to(selected().device)   # --device / --dtype of `bench train`
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    history, start = [], time.time()
    for step in tqdm(range(cfg.steps), desc="train sudoku", unit="step"):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, cfg)
        idx = torch.randint(len(train_p), (cfg.batch_size,), generator=generator)
        loss = train_step(model, optimizer, train_p[idx], train_s[idx], generator, cfg)
        if step % 100 == 0 or step == cfg.steps - 1:
            val_loss, val_acc = validate(model, val_p, val_s)
            record = {"step": step, "loss": loss, "val_loss": val_loss, "val_cell_acc": val_acc,
                      "minutes": (time.time() - start) / 60}
            history.append(record)
            log.info(json.dumps(record))
            save_checkpoint(out_path, model, {"train": asdict(cfg), "history": history,
                                              "train_minutes": record["minutes"], "finished": False})
    save_checkpoint(out_path, model, {"train": asdict(cfg), "history": history,
                                      "train_minutes": (time.time() - start) / 60, "finished": True})
    return history
