"""The MI-guided rule on the exact MI of the current state, measured by probing the model.

Probing position j runs the model once for every value of X_j (V probing passes) and gives the
directed row I(X_j; X_i | state) for all i, conditioned on j. The model's conditionals need not
agree with one joint, so the two directions differ. ``target=symmetric`` (default) uses their
mean, the target the estimator is trained on: a pick's row is probed when it is taken, and a
candidate's own row when its entropy still fits the budget. ``target=directed`` uses the picks'
rows alone (what the first version did). Probing passes are counted per sample and reported
apart from decoding passes (``probe_passes``). It shows what a perfect estimator would buy.
A model that computes exact MI itself (``pair_mi``, the exact task's chain) is read instead of
probed (its ``mi_rows``): no probing passes, and both directions are equal.
"""
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from bench.core import Strategy
from bench.errors import BenchError
from bench.registry import register_strategy
from strategies.mi.exact import mi_given_positions
from strategies.mi.greedy import greedy_select
from strategies.mi.guided import check_budget

TARGETS = ("symmetric", "directed")   # symmetric: the mean of both directions, as the estimator learns


@register_strategy
@dataclass
class MIOracle(Strategy):
    """The mi rule on exact MI measured by probing the model (probing passes reported separately)."""
    name: ClassVar[str] = "mi_oracle"
    gamma: float = 0.3
    lam: float = 1.0
    target: str = field(default="symmetric", metadata={"choices": TARGETS})
    aux_passes_metric: ClassVar[str] = "probe_passes"

    def __post_init__(self):
        check_budget(self.gamma, self.lam)
        if self.target not in TARGETS:
            raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {self.target!r}")
        self.model = None

    def bind(self, task, model):
        self.model = model

    def select(self, state):
        if self.model is None:
            raise BenchError("strategy mi_oracle has no model to probe (bind(task, model) was not called)")
        probes = ExactRows(self.model, state) if hasattr(self.model, "mi_rows") else ProbedRows(self.model, state)
        # read_ahead=False: probe the rows the rule has always probed (probe_passes stay comparable)
        if self.target == "directed":
            return greedy_select(state.entropy, state.masked, self.gamma, self.lam, probes.rows, read_ahead=False)
        def half_mi_row(rows, positions):
            return 0.5 * probes.rows(rows, positions)

        def half_mi_back(rows, positions, chosen):
            return 0.5 * (probes.rows(rows, positions) * chosen).sum(1)

        return greedy_select(state.entropy, state.masked, self.gamma, self.lam, half_mi_row, half_mi_back,
                             read_ahead=False)


class ProbedRows:
    """Directed exact MI rows I(X_i; . | state), conditioning on X_i, probed once per (row, i) per
    pass (V probing passes each, added to the state's aux_passes)."""

    def __init__(self, model, state):
        self.model, self.state = model, state
        batch, n = state.masked.shape
        self.known = torch.full((batch, n, n), float("nan"))

    def rows(self, rows, positions):
        """[R, N]: the MI row of each (row, position), computing those not yet known."""
        missing = self.known[rows, positions, 0].isnan()
        if missing.any():
            self.known[rows[missing], positions[missing]] = self.compute(rows[missing], positions[missing])
        return self.known[rows, positions]

    def compute(self, r, p):
        """Probe the rows (V passes each, counted in the state's aux_passes, reported apart)."""
        state = self.state
        state.aux_passes[r] += state.out.logits.shape[-1]
        return mi_given_positions(self.model, state.tokens[r], state.masked[r], state.out.logits[r], p).float()


class ExactRows(ProbedRows):
    """Rows of the exact MI matrix of a model with ``mi_rows`` (computed when first asked, no probing)."""

    def compute(self, r, p):
        state = self.state
        return self.model.mi_rows(state.tokens[r], state.masked[r], torch.arange(len(r)), p)
