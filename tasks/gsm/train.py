"""Train the gsm task's text MDM (`python -m bench train gsm KEY=VALUE...`), resumably.

Every step draws fresh training problems (tasks/gsm/generate.py: training signatures only, from
a stream seeded by the seed and the step, so a resumed run draws what an uninterrupted one
would). The question is given and never masked; each answer region (the solution, then
end-of-text to its end) is masked at a rate t drawn per problem (stratified over the batch),
and the loss is each problem's mean cross-entropy over its masked positions, averaged over
problems (LLaDA's SFT loss, 1/t-weighted and normalised by the region's length, in expectation).

Every ``checkpoint_minutes`` the weights go to ``out`` and the optimizer's state (its moments
in bfloat16, to keep the file small) to ``out`` with suffix ``.resume.pt``, each written
atomically; a later run with the same ``out`` resumes from them (a resumed run continues from
the bfloat16 moments, so it is not bit-identical to an uninterrupted one). Every ``eval_every``
steps the log gets accuracy on the first ``eval_n`` validation problems decoded sequentially
(one position a pass, highest confidence first) and in one pass.
"""
import logging
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from bench.checkpoints import save_atomic
from bench.decode import decode
from bench.device import Placed, selected
from bench.errors import BenchError
from tasks.gsm.data import EOT, PROMPT_LENGTH, encode_batch, generated_text, strict_answer
from tasks.gsm.generate import VALIDATION_SET, problems
from tasks.gsm.model import GSMMDM, GSMTransformer, save_mdm

log = logging.getLogger("train.gsm")
COMMAND = "python -m bench train gsm"


@dataclass
class TrainConfig:
    steps: int = 16000          # optimiser steps (the cosine schedule's length)
    batch_size: int = 32        # problems per step
    lr: float = 1e-3            # peak learning rate (linear warm-up, cosine decay to 10%)
    warmup: int = 300
    weight_decay: float = 0.01
    seed: int = 0
    threads: int = 1
    checkpoint_minutes: float = 5.0
    log_every: int = 50
    eval_every: int = 1000      # steps between validation decodes (0: none)
    eval_n: int = 100           # validation problems decoded


def lr_at(step, cfg):
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def training_batch(cfg, step):
    """(tokens [B, N], masked [B, N]) of step ``step``: fresh training problems, each answer
    region masked at its own rate t (stratified: (i + u) / B), at least one position masked."""
    batch = problems("train", cfg.batch_size, seed=f"{cfg.seed}-{step}")
    tokens = encode_batch(batch, with_answers=True)
    generator = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
    rate = (torch.arange(cfg.batch_size) + torch.rand(cfg.batch_size, generator=generator)) / cfg.batch_size
    masked = torch.rand(tokens.shape, generator=generator) < rate[:, None]
    masked[:, :PROMPT_LENGTH] = False
    empty = ~masked.any(1)
    masked[empty, PROMPT_LENGTH] = True
    return tokens, masked


def mdm_loss(network, tokens, masked):
    where = selected()   # `bench train --device/--dtype`
    tokens, masked = tokens.to(where.device), masked.to(where.device)
    with where.autocast():
        logits = network(tokens, masked)[0].float()
    per_position = F.cross_entropy(logits.transpose(1, 2), (tokens - EOT).clamp_min(0), reduction="none")
    per_problem = (per_position * masked).sum(1) / masked.sum(1)
    return per_problem.mean()


@torch.no_grad()
def validation_accuracy(network, n):
    """{sequential, one_pass}: strict accuracy on the first ``n`` validation problems."""
    import json

    from strategies.sequential import Sequential
    from strategies.topk import TopK
    rows = [json.loads(line) for line in VALIDATION_SET.read_text().splitlines()[:n]]
    start = encode_batch(rows, with_answers=False)
    model = GSMMDM(network, "training")
    model = model if selected().kind == "cpu" else Placed(model, selected())
    out = {}
    for name, strategy in (("sequential", Sequential()), ("one_pass", TopK(k=start.shape[1]))):
        tokens = decode(model, start, start == 0, strategy).tokens
        right = [strict_answer(generated_text(t[PROMPT_LENGTH:])) == strict_answer(r["answer"])
                 for t, r in zip(tokens, rows)]
        out[name] = sum(right) / len(rows)
    network.train()
    return out


def resume_path(out):
    return Path(out).with_suffix(".resume.pt")


def save_state(out, network, optimizer, step, cfg, model_cfg, seconds, last):
    meta = {"command": COMMAND, "train": asdict(cfg), "step": step, "seconds": round(seconds), **last}
    save_mdm(out, network, meta)
    state = optimizer.state_dict()   # its per-parameter dicts are the optimizer's own: copied, not changed
    state["state"] = {index: {key: value.to(torch.bfloat16) if key in ("exp_avg", "exp_avg_sq") else value
                              for key, value in slot.items()} for index, slot in state["state"].items()}
    save_atomic(resume_path(out), {"state_dict": {}, "optimizer": state, "step": step, "seconds": seconds,
                                   "model": model_cfg.to_dict(), "train": asdict(cfg)})


def load_state(out, network, optimizer, model_cfg, cfg):
    """(step, seconds) to resume from, 0 and 0 where there is nothing to resume."""
    weights, resume = Path(out), resume_path(out)
    if not (weights.is_file() and resume.is_file()):
        return 0, 0.0
    state = torch.load(resume, map_location="cpu", weights_only=True)
    if state["model"] != model_cfg.to_dict():
        raise BenchError(f"{resume} holds the state of another model ({state['model']}); delete it and {weights}, "
                         f"or write elsewhere with --out")
    network.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True)["state_dict"])
    optimizer.load_state_dict(state["optimizer"])
    for slot in optimizer.state.values():
        for key in ("exp_avg", "exp_avg_sq"):
            slot[key] = slot[key].float()
    log.info("resumed from step %d (%.0f s of training before)", state["step"], state["seconds"])
    return state["step"], state["seconds"]


def train(model_cfg, cfg, out):
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    random.seed(cfg.seed)
    network = GSMTransformer(model_cfg).to(selected().device)   # --device / --dtype of `bench train`
    optimizer = torch.optim.AdamW(network.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    step, before = load_state(out, network, optimizer, model_cfg, cfg)
    log.info("parameters %d", sum(p.numel() for p in network.parameters()))
    start, saved, losses, last = time.perf_counter(), time.perf_counter(), [], {}
    network.train()
    while step < cfg.steps:
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, cfg)
        loss = mdm_loss(network, *training_batch(cfg, step))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        step += 1
        seconds = before + time.perf_counter() - start
        if step % cfg.log_every == 0:
            log.info("step %d loss %.4f lr %.2e (%.0f s)", step, sum(losses) / len(losses), lr_at(step, cfg), seconds)
            last["loss"] = round(sum(losses) / len(losses), 4)
            losses = []
        if cfg.eval_every and (step % cfg.eval_every == 0 or step == cfg.steps):
            network.eval()
            accuracy = validation_accuracy(network, cfg.eval_n)
            last[f"validation_{cfg.eval_n}"] = accuracy
            log.info("step %d validation accuracy (first %d problems, strict): sequential %.3f one-pass %.3f",
                     step, cfg.eval_n, accuracy["sequential"], accuracy["one_pass"])
        if time.perf_counter() - saved > 60 * cfg.checkpoint_minutes or step == cfg.steps:
            save_state(out, network, optimizer, step, cfg, model_cfg, before + time.perf_counter() - start, last)
            saved = time.perf_counter()
            log.info("checkpoint at step %d", step)
