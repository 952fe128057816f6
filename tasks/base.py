"""What a task provides to the runner."""
from dataclasses import dataclass
from typing import ClassVar, Protocol

import torch

from bench.core import MaskedModel


@dataclass
class EvalSet:
    """Inputs of one evaluation: start tokens and masks, plus what scoring needs."""
    tokens: torch.Tensor   # [n, N] long
    masked: torch.Tensor   # [n, N] bool
    data_id: str           # identifies the data (file hash, seed, ...)
    extras: dict           # task-specific: references, line numbers, ...

    def __len__(self):
        return self.tokens.shape[0]


class Task(Protocol):
    name: ClassVar[str]
    headline: ClassVar[str]       # the metric name Pareto plots use
    temperature: float            # 0 = argmax values, > 0 = sampled values

    def load_model(self) -> MaskedModel: ...

    def eval_set(self, limit: int | None, seed: int) -> EvalSet: ...

    def records(self, tokens: torch.Tensor, passes: torch.Tensor, rows: torch.Tensor,
                eval_set: EvalSet) -> list[dict]:
        """Per-sample records (JSON-able) of final tokens of eval-set rows ``rows``."""
        ...

    def summarize(self, records: list[dict]) -> list[dict]:
        """Summary metrics (bench.stats.metric dicts) from per-sample records alone."""
        ...

    def config(self) -> dict:
        """The task's resolved options, stored in every result."""
        ...
