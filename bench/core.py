"""The interfaces every task and strategy share (see DESIGN.md)."""
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar, Protocol

import torch


@dataclass
class ModelOutput:
    """What one forward pass returns."""
    logits: torch.Tensor  # [B, N, V] over the real token values only
    hidden: torch.Tensor  # [B, N, D] states of the layer estimators and policies read


class MaskedModel(Protocol):
    """A masked discrete diffusion model: one call is one forward pass."""
    vocab_size: int              # V, the number of real token values
    value_tokens: torch.Tensor   # [V] token id of each value (what ``fill`` writes)
    checkpoint_id: str           # identifies the weights (results and helpers record it)

    def __call__(self, tokens: torch.Tensor, masked: torch.Tensor) -> ModelOutput: ...


@dataclass
class StepState:
    """The state a strategy sees at one pass. Derived quantities are computed once, lazily."""
    tokens: torch.Tensor   # [B, N] long
    masked: torch.Tensor   # [B, N] bool, True where still masked
    out: ModelOutput
    step: int              # pass number, 0-based

    @cached_property
    def log_probs(self):
        """[B, N, V] float32 log-probabilities."""
        return torch.log_softmax(self.out.logits.float(), dim=-1)

    @cached_property
    def probs(self):
        return self.log_probs.exp()

    @cached_property
    def entropy(self):
        """[B, N] entropy in nats (a saturated position has exactly 0)."""
        return torch.special.entr(self.probs).sum(-1)

    @cached_property
    def confidence(self):
        """[B, N] top-1 probability."""
        return self.probs.max(-1).values

    @cached_property
    def margin(self):
        """[B, N] top-1 minus top-2 probability."""
        top2 = self.probs.topk(2, dim=-1).values
        return top2[..., 0] - top2[..., 1]


class Strategy(Protocol):
    """Chooses which masked positions to reveal at a pass."""
    name: ClassVar[str]

    def select(self, state: StepState) -> torch.Tensor:
        """bool [B, N]: a subset of ``state.masked`` with at least one position per row that
        still has a masked position."""
        ...
