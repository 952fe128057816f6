"""What a run's passes cost as users pay them, from its per-input records: the distribution of
passes over inputs and the batched steps of its recorded batch size (``bench report`` computes
it; result files are not changed)."""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Cost:
    """What a run's passes cost as users pay them: the distribution of passes over inputs, and the
    batched steps (each batch of ``batch_size`` inputs, in their recorded order, waits for its
    slowest row: the sum over the ``batches`` of the largest passes in each)."""
    mean: float
    median: float
    p90: float
    max: float
    batch_size: int
    batches: int
    batched_steps: float

    @property
    def steps_per_batch(self):
        """The slowest row's passes, averaged over the batches."""
        return self.batched_steps / self.batches


def run_cost(passes, batch_size):
    """The Cost of per-input ``passes`` (in recorded order) decoded ``batch_size`` at a time."""
    passes = np.asarray(passes, dtype=float)
    size = int(batch_size or len(passes))
    slowest = [passes[start:start + size].max() for start in range(0, len(passes), size)]
    return Cost(float(passes.mean()), float(np.median(passes)), float(np.percentile(passes, 90)),
                float(passes.max()), size, len(slowest), float(sum(slowest)))


def pooled_cost(costs):
    """The Cost of a run's seeds: each figure averaged over the seeds."""
    if len(costs) == 1:
        return costs[0]
    mean = {name: float(np.mean([getattr(c, name) for c in costs]))
            for name in ("mean", "median", "p90", "max", "batched_steps")}
    return Cost(batch_size=costs[0].batch_size, batches=costs[0].batches, **mean)
