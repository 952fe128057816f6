"""MI label sets: contexts with their exact directed MI matrices, written once and reused.

A label set is a folder under the cache (``UNMASK_BENCH_CACHE`` or ~/.cache/unmask-bench)
named by task, model, split, size and seed. It holds ``contexts.pt`` (made first) and one
``chunk_XXXX.pt`` per CHUNK contexts, each written atomically, so a killed run resumes at the
first missing chunk.
"""
import importlib
import json
import time

import torch
from tqdm import tqdm

from bench.checkpoints import save_atomic
from bench.errors import BenchError
from strategies.mi_exact import exact_mi

CHUNK = 32
SPLITS = ("train", "heldout", "ood")
DEFAULT_SIZES = {"sudoku": {"train": 8000, "heldout": 500, "ood": 500},
                 "protein": {"train": 3000, "heldout": 400, "ood": 400}}


def label_dir(task_name, model_id, split, n, seed):
    from tasks.sudoku.data import cache_dir
    return cache_dir() / "mi" / f"{task_name}-{model_id}-{split}-n{n}-seed{seed}"


def sources(task_name):
    return importlib.import_module(f"tasks.{task_name}.mi_sources")


def make_contexts(folder, task_name, model, split, n, seed):
    """Make (or reuse) the contexts of a label set."""
    path = folder / "contexts.pt"
    if path.exists():
        return torch.load(path, weights_only=True)
    generator = torch.Generator().manual_seed(seed * 1000 + SPLITS.index(split))
    tokens, masked = sources(task_name).contexts(model, split, n, generator)
    payload = {"tokens": tokens, "masked": masked}
    save_atomic(path, payload)
    return payload


def make_labels(task, model, split, n=None, seed=0, device="cpu"):
    """Build the label set (resuming) and return its folder."""
    if split not in SPLITS:
        raise BenchError(f"unknown MI split {split!r}; choose from: {', '.join(SPLITS)}")
    n = n or DEFAULT_SIZES[task.name][split]
    folder = label_dir(task.name, model.checkpoint_id, split, n, seed)
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    ctx = make_contexts(folder, task.name, model, split, n, seed)
    if len(ctx["tokens"]) != n:
        raise BenchError(f"{task.name} {split} gave {len(ctx['tokens'])} contexts, not {n}; remove {folder}")
    model.to(device)
    for first in tqdm(range(0, n, CHUNK), desc=f"MI labels {task.name}/{split}", unit="chunk"):
        path = folder / f"chunk_{first // CHUNK:04d}.pt"
        if path.exists():
            continue
        tokens, masked = ctx["tokens"][first:first + CHUNK], ctx["masked"][first:first + CHUNK]
        mi = exact_mi(model, tokens.to(device), masked.to(device)).half().cpu()
        save_atomic(path, {"mi": mi})
    model.to("cpu")
    meta = {"task": task.name, "model_id": model.checkpoint_id, "split": split, "n": n, "seed": seed,
            "chunk": CHUNK, "seconds_last_run": round(time.perf_counter() - start, 1), "device": device}
    (folder / "meta.json").write_text(json.dumps(meta, indent=1))
    return folder


def load_labels(task_name, model_id, split, n=None, seed=0):
    """(tokens [C, N], masked [C, N], directed mi [C, N, N] float32) of a finished label set."""
    n = n or DEFAULT_SIZES[task_name][split]
    folder = label_dir(task_name, model_id, split, n, seed)
    if not (folder / "meta.json").exists():
        raise BenchError(f"MI label set {folder} is missing or unfinished; make it with: "
                         f"python -m bench mi labels --task {task_name} --split {split}")
    ctx = torch.load(folder / "contexts.pt", weights_only=True)
    chunks = sorted(folder.glob("chunk_*.pt"))
    mi = torch.cat([torch.load(c, weights_only=True)["mi"] for c in chunks]).float()
    return ctx["tokens"], ctx["masked"], mi


