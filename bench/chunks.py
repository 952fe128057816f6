"""A model's forward pass in chunks of rows.

On a CPU a forward pass's throughput peaks at a few dozen rows per call and falls by a third or
more at hundreds (the activations stop fitting in the caches), so the shipped models run large
batches in chunks. Each row's outputs are bit-identical either way (tests/test_chunks.py checks
both shipped models), so chunking changes the time only, never a record.
"""
import torch

from bench.core import ModelOutput


def in_chunks(forward, tokens, masked, rows):
    """``forward(tokens, masked)`` -> ModelOutput, run on at most ``rows`` rows at a time when the
    tokens are on the CPU (elsewhere, e.g. a GPU, in one call), the outputs concatenated."""
    if tokens.device.type != "cpu" or tokens.shape[0] <= rows:
        return forward(tokens, masked)
    outs = [forward(t, m) for t, m in zip(tokens.split(rows), masked.split(rows))]
    hidden = None if outs[0].hidden is None else torch.cat([o.hidden for o in outs])
    return ModelOutput(logits=torch.cat([o.logits for o in outs]), hidden=hidden)
