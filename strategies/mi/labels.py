"""MI label sets: contexts with their exact directed MI matrices, written once and reused.

A label set is a folder under the cache (``UNMASK_BENCH_CACHE`` or ~/.cache/unmask-bench)
named by task, model, split, size and seed. It holds ``contexts.pt`` (made first) and one
``chunk_XXXX.pt`` per CHUNK contexts, each written atomically, so a killed run resumes at the
first missing chunk.

With ``probe`` > 0 only that many masked positions per context (drawn with the set's seed) are
probed: their rows of the directed MI are exact, every other masked row is NaN, so the
symmetric label exists for pairs of probed positions only. This cuts the cost from
n_masked * V to probe * V passes per context, which makes label sets feasible on a CPU.
"""
import json
import time

import torch
from tqdm import tqdm

from bench.checkpoints import cache_dir, save_atomic
from bench.errors import BenchError
from bench.files import GiB, checked_path
from strategies.mi import MI_TASK, SPLITS
from strategies.mi.exact import exact_mi

CHUNK = 32
# A file of a label set: a chunk holds CHUNK [N, N] float16 matrices (protein, N = 102: 0.7 MB),
# the contexts [n, N] tokens and masks (3,000 protein contexts: 3 MB); 1 GiB is far past both.
LABEL_FILE_LIMIT = 1 * GiB


def load_label_file(path):
    """torch.load one file of a label set (checked first: a regular file within LABEL_FILE_LIMIT)."""
    return torch.load(checked_path(path, "MI label file", LABEL_FILE_LIMIT), weights_only=True)


def label_dir(task_name, model_id, split, n, seed, probe=0):
    suffix = f"-probe{probe}" if probe else ""
    return cache_dir() / "mi" / f"{task_name}-{model_id}-{split}-n{n}-seed{seed}{suffix}"


def probed_rows(masked, probe, generator):
    """[B, N] bool: up to ``probe`` masked positions per context, drawn with ``generator``."""
    keys = torch.rand(masked.shape, generator=generator).masked_fill(~masked, 2.0)
    rank = keys.argsort(1).argsort(1)
    return masked & (rank < probe)


def probed_mi(model, tokens, masked, probe, generator):
    """Directed exact MI of the probed rows; the other masked rows are NaN (``probe`` 0: all rows)."""
    if hasattr(model, "pair_mi"):   # a model with exact MI (the exact task's chain): every row, no probing
        return model.pair_mi(tokens, masked)
    if not probe:
        return exact_mi(model, tokens, masked)
    rows = probed_rows(masked.cpu(), probe, generator).to(masked.device)
    mi = exact_mi(model, tokens, masked, rows=rows)
    mi[masked & ~rows] = float("nan")
    return mi


def default_size(task, split):
    """The task's size of a label set of ``split`` (its ``mi_label_sizes``); one-line error without."""
    MI_TASK.check(task, "MI labels")
    if split not in task.mi_label_sizes:
        raise BenchError(f"task {task.name} names no MI label set size for split {split!r} (its mi_label_sizes); "
                         "give --n")
    return task.mi_label_sizes[split]


def make_contexts(folder, task, model, split, n, seed):
    """Make (or reuse) the contexts of a label set."""
    path = folder / "contexts.pt"
    if path.exists():
        return load_label_file(path)
    generator = torch.Generator().manual_seed(seed * 1000 + SPLITS.index(split))
    tokens, masked = task.mi_contexts(model, split, n, generator)
    payload = {"tokens": tokens, "masked": masked}
    save_atomic(path, payload)
    return payload


def make_labels(task, model, split, n=None, seed=0, device="cpu", probe=None):
    """Build the label set (resuming) and return its folder."""
    if split not in SPLITS:
        raise BenchError(f"unknown MI split {split!r}; choose from: {', '.join(SPLITS)}")
    n = n or default_size(task, split)
    probe = getattr(task, "mi_probe", 0) if probe is None else probe
    folder = label_dir(task.name, model.checkpoint_id, split, n, seed, probe)
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    ctx = make_contexts(folder, task, model, split, n, seed)
    if len(ctx["tokens"]) != n:
        raise BenchError(f"{task.name} {split} gave {len(ctx['tokens'])} contexts, not {n}; remove {folder}")
    model.to(device)
    for first in tqdm(range(0, n, CHUNK), desc=f"MI labels {task.name}/{split}", unit="chunk"):
        path = folder / f"chunk_{first // CHUNK:04d}.pt"
        if path.exists():
            continue
        tokens, masked = ctx["tokens"][first:first + CHUNK], ctx["masked"][first:first + CHUNK]
        generator = torch.Generator().manual_seed(seed * 100_000 + SPLITS.index(split) * 10_000 + first)
        began = time.perf_counter()
        mi = probed_mi(model, tokens.to(device), masked.to(device), probe, generator).half().cpu()
        # each chunk keeps its own probing time: a resumed set still sums to its whole cost
        save_atomic(path, {"mi": mi, "seconds": time.perf_counter() - began})
    model.to("cpu")
    meta = {"task": task.name, "model_id": model.checkpoint_id, "split": split, "n": n, "seed": seed, "probe": probe,
            "chunk": CHUNK, "seconds_last_run": round(time.perf_counter() - start, 1), "device": device,
            "threads": torch.get_num_threads(), **probing_time(folder)}
    (folder / "meta.json").write_text(json.dumps(meta, indent=1))
    return folder


def probing_time(folder):
    """{probe_seconds, timed_contexts, seconds_per_context} summed over the chunks that recorded
    their time (those made before chunks did are left out); {} where none did."""
    seconds, contexts = 0.0, 0
    for path in sorted(folder.glob("chunk_*.pt")):
        chunk = load_label_file(path)
        if "seconds" in chunk:
            seconds, contexts = seconds + chunk["seconds"], contexts + len(chunk["mi"])
    if not contexts:
        return {}
    return {"probe_seconds": round(seconds, 2), "timed_contexts": contexts,
            "seconds_per_context": round(seconds / contexts, 4)}


def label_meta(task, model_id, split, n=None, seed=0, probe=None):
    """(folder, meta.json's dict) of a finished label set; one-line error where it is missing."""
    folder = label_dir(task.name, model_id, split, n or default_size(task, split), seed,
                       getattr(task, "mi_probe", 0) if probe is None else probe)
    if not (folder / "meta.json").exists():
        raise BenchError(f"MI label set {folder} is missing or unfinished; make it with: "
                         f"python -m bench mi labels --task {task.name}{task.helper_flags()} --split {split}"
                         + (f" --n {n}" if n else ""))
    return folder, json.loads((folder / "meta.json").read_text())


def load_labels(task, model_id, split, n=None, seed=0, probe=None):
    """(tokens [C, N], masked [C, N], directed mi [C, N, N] float32) of a finished label set;
    rows that were not probed are NaN."""
    folder, _ = label_meta(task, model_id, split, n, seed, probe)
    ctx = load_label_file(folder / "contexts.pt")
    chunks = sorted(folder.glob("chunk_*.pt"))
    mi = torch.cat([load_label_file(c)["mi"] for c in chunks]).float()
    return ctx["tokens"], ctx["masked"], mi


