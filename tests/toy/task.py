"""The toy task: write the sequence 0, 1, 2, 0, 1, 2 (as token values) into six masked positions.

The model knows a position's value only once its left neighbour is revealed (position 0 always);
before that it leans to a wrong value. Revealing left to right is exact; revealing everything
at once is wrong everywhere but position 0.
"""
import hashlib

import numpy as np
import torch

from bench.core import EvalSet, MaskedModel, ModelOutput, Task
from bench.registry import register_task
from bench.stats import mean_metric

LENGTH, N_INPUTS = 6, 8
TARGET = torch.arange(LENGTH) % 3  # the value each position should get


class ToyModel(MaskedModel):
    """Logits over 3 values; token id = value + 1, 0 = masked."""
    vocab_size = 3
    checkpoint_id = "toy-v1"
    n_params = 0

    def __init__(self):
        self.value_tokens = torch.tensor([1, 2, 3])

    def __call__(self, tokens, masked):
        batch = tokens.shape[0]
        known = torch.ones(batch, LENGTH, dtype=torch.bool)
        known[:, 1:] = ~masked[:, :-1]                                   # left neighbour revealed
        right = torch.nn.functional.one_hot(TARGET, 3).float() * 4.0     # [N, V] confident and right
        wrong = torch.nn.functional.one_hot((TARGET + 1) % 3, 3).float()  # [N, V] leaning wrong
        logits = torch.where(known[..., None], right, wrong)             # [B, N, V]
        return ModelOutput(logits=logits, hidden=torch.zeros(batch, LENGTH, 2))


@register_task
class ToyTask(Task):
    """Toy: six positions, each known only after its left neighbour (exact match is the headline)."""
    name = "toy"
    headline = "exact_match"

    def load_model(self):
        return ToyModel()

    def config(self):
        return {"data": None, "model": None}

    def eval_set(self, limit=None, seed=0):
        tokens = torch.zeros(N_INPUTS, LENGTH, dtype=torch.long)[:limit]
        return EvalSet(tokens=tokens, masked=tokens == 0, data_id=hashlib.sha256(b"toy").hexdigest()[:12], extras={})

    def records(self, tokens, passes, rows, eval_set):
        values = tokens - 1
        return [{"index": row, "passes": n, "exact": bool((v == TARGET).all()), "output": v.tolist()}
                for v, n, row in zip(values, passes.tolist(), rows.tolist())]

    def summarize(self, records):
        def column(key):
            return np.array([r[key] for r in records], dtype=float)

        return [mean_metric("exact_match", column("exact"), True, "sequences entirely right", field="exact"),
                mean_metric("passes", column("passes"), False, "forward passes per sequence", field="passes")]
