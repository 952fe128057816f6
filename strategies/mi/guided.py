"""MI-guided unmasking: a small network predicts pairwise MI from the model's hidden states;
positions that depend on each other are not revealed together (rule: strategies/mi/greedy.py)."""
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import torch

from bench.checkpoints import file_id
from bench.core import Strategy
from bench.errors import BenchError
from bench.registry import register_strategy
from strategies.mi.estimator import FILE_NAME, load_estimator
from strategies.mi.greedy import greedy_select


def check_budget(gamma, lam):
    if not gamma >= 0:
        raise ValueError(f"gamma must be >= 0, got {gamma}")
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam}")


@register_strategy
@dataclass
class MIGuided(Strategy):
    """Entropy-ordered greedy reveal; cost = entropy + lam * predicted MI with those chosen, budget gamma."""
    name: ClassVar[str] = "mi"
    gamma: float = 0.3
    lam: float = 1.0
    estimator: str = field(default="", metadata={"help": "estimator file (default: the task's shipped one)"})

    def __post_init__(self):
        check_budget(self.gamma, self.lam)
        self.network, self.estimator_id = None, None

    def bind(self, task, model):
        """Load the estimator that belongs to ``model``; a missing or foreign one is an error."""
        path = Path(self.estimator) if self.estimator else Path(task.weights_dir) / FILE_NAME
        self.network = load_estimator(path, model.checkpoint_id, task.name)
        self.estimator_id = file_id(path)
        self.estimator_path = path

    def helper_ids(self):
        return {"mi_estimator": self.estimator_id}

    def predicted_mi(self, state):
        """[B, N, N] the estimator's MI of the state; one-line errors when unbound or non-finite."""
        if self.network is None:
            raise BenchError(f"strategy {self.name} has no estimator loaded (bind(task, model) was not called)")
        with torch.inference_mode():
            mi_hat = self.network(state.out.hidden, state.probs, state.masked)   # [B, N, N]
        if not torch.isfinite(mi_hat).all():
            raise BenchError(f"MI estimator {self.estimator_path} returned non-finite values; retrain it "
                             f"with: python -m bench train mi")
        return mi_hat

    def select(self, state):
        mi_hat = self.predicted_mi(state)
        return greedy_select(state.entropy, state.masked, self.gamma, self.lam,
                             lambda rows, positions: mi_hat[rows, positions])
