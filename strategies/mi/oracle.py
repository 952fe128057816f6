"""The MI-guided rule on the exact MI of the current state, measured by probing the model.

When the greedy walk (strategies/mi/greedy.py) takes a position j, the model is run once for
every value of X_j (V probing passes) to get I(X_j; X_i | state) for all i, conditioned on j;
the walk needs nothing else. Probing passes are counted per sample and reported apart from
decoding passes (``probe_passes``). It shows what a perfect estimator would buy.
"""
from dataclasses import dataclass
from typing import ClassVar

import torch

from bench.core import Strategy
from bench.errors import BenchError
from bench.registry import register_strategy
from strategies.mi.exact import mi_given_positions
from strategies.mi.greedy import greedy_select
from strategies.mi.guided import check_budget


@register_strategy
@dataclass
class MIOracle(Strategy):
    """The mi rule on exact MI measured by probing the model (probing passes reported separately)."""
    name: ClassVar[str] = "mi_oracle"
    gamma: float = 0.3
    lam: float = 1.0
    aux_passes_metric: ClassVar[str] = "probe_passes"

    def __post_init__(self):
        check_budget(self.gamma, self.lam)
        self.model = None

    def bind(self, task, model):
        self.model = model

    def select(self, state):
        if self.model is None:
            raise BenchError("strategy mi_oracle has no model to probe (bind(task, model) was not called)")
        n_values = state.out.logits.shape[-1]

        def probe(rows, positions):
            state.aux_passes[rows] += n_values   # probing passes, reported apart
            return mi_given_positions(self.model, state.tokens[rows], state.masked[rows],
                                      state.out.logits[rows], positions)

        return greedy_select(state.entropy, state.masked, self.gamma, self.lam, probe)
