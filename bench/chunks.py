"""A model's forward pass in chunks of rows, side by side on the CPU's threads.

On a CPU a forward pass's throughput peaks at a few dozen rows per call and falls by a third or
more at hundreds (the activations stop fitting in the caches), so the shipped models run large
batches in chunks. With more than one torch thread the chunks run side by side, one Python
thread per torch thread, each chunk on one torch thread: splitting one small call's products
over threads costs more in synchronisation than it gains (a shipped model, 250 inputs on 2
threads: 0.59-0.78 s a pass with its chunks run one after another, 0.43-0.49 s side by side;
docs/lab.md, 2026-12-01). Each row's outputs are bit-identical either way (tests/test_chunks.py checks
both shipped models at 1 and 2 threads), so chunking changes the time only, never a record.
"""
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import torch

from bench.core import ModelOutput


def in_chunks(forward, tokens, masked, rows):
    """``forward(tokens, masked)`` -> ModelOutput, run on at most ``rows`` rows at a time when the
    tokens are on the CPU (elsewhere, e.g. a GPU, in one call), the outputs concatenated. With
    2 or more torch threads ``forward`` runs on several threads at once, so it must not change
    shared state: a model that makes state lazily for an input's shape makes it before calling
    this (as ESM-C's rotary tables are, by the shipped model that runs ESM-C)."""
    if tokens.device.type != "cpu" or tokens.shape[0] <= rows:
        return forward(tokens, masked)
    chunks = list(zip(tokens.split(rows), masked.split(rows)))
    threads = torch.get_num_threads()
    if threads > 1 and not torch.is_autocast_enabled("cpu"):
        outs = side_by_side(forward, chunks, threads)
    else:                                   # autocast's state is per thread: a bfloat16 run stays here
        outs = [forward(t, m) for t, m in chunks]
    hidden = None if outs[0].hidden is None else torch.cat([o.hidden for o in outs])
    return ModelOutput(logits=torch.cat([o.logits for o in outs]), hidden=hidden)


@lru_cache(maxsize=None)
def workers(threads):
    return ThreadPoolExecutor(threads, thread_name_prefix="bench-chunks")


def side_by_side(forward, chunks, threads):
    """[forward(*chunk) for chunk in chunks], on ``threads`` Python threads at one torch thread
    each (torch's setting is the process's: restored after), under the caller's grad and
    inference modes (they are per thread)."""
    inference, grad = torch.is_inference_mode_enabled(), torch.is_grad_enabled()

    def run(chunk):
        with torch.inference_mode(inference), torch.set_grad_enabled(grad):
            return forward(*chunk)
    torch.set_num_threads(1)
    try:
        return list(workers(threads).map(run, chunks))
    finally:
        torch.set_num_threads(threads)
