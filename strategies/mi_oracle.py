"""The MI-guided rule on the exact MI of the current state, measured by probing the model.

When the greedy walk (strategies/mi_greedy.py) takes a position j, the model is run once for
every value of X_j (V probing passes) to get I(X_j; X_i | state) for all i, conditioned on j;
the walk needs nothing else. Probing passes are counted per sample and reported apart from
decoding passes (``probe_passes``). It shows what a perfect estimator would buy.
"""
from dataclasses import dataclass
from typing import ClassVar

import torch

from bench.errors import BenchError
from bench.registry import register_strategy
from strategies.mi import check_budget
from strategies.mi_exact import mi_given_positions
from strategies.mi_greedy import greedy_select


@register_strategy
@dataclass
class MIOracle:
    """The mi rule on exact MI measured by probing the model (probing passes reported separately)."""
    name: ClassVar[str] = "mi_oracle"
    gamma: float = 0.3
    lam: float = 1.0

    def __post_init__(self):
        check_budget(self.gamma, self.lam)
        self.model = None
        self.probe_passes = None

    def bind(self, task, model):
        self.model = model

    def select(self, state):
        if self.model is None:
            raise BenchError("strategy mi_oracle has no model to probe (bind(task, model) was not called)")
        probes = torch.zeros(state.masked.shape[0], dtype=torch.long)          # [B]
        n_values = state.out.logits.shape[-1]

        def probe(rows, positions):
            probes[rows] += n_values
            return mi_given_positions(self.model, state.tokens[rows], state.masked[rows],
                                      state.out.logits[rows], positions)

        pick = greedy_select(state.entropy, state.masked, self.gamma, self.lam, probe)
        self.probe_passes = probes
        return pick
