"""Prophet early commit (Li et al. 2025, arXiv 2508.19982; pixeli99/Prophet ``generate_earlyexit.py``):
decode with LLaDA's rule until the model's top-2 logit gap is large, then commit every position."""
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from bench.registry import bounded, register_strategy
from strategies.schedules.parts import score_field
from strategies.schedules.scheduled import Scheduled

# The phase bounds of should_early_exit (generate_earlyexit.py 20-25): progress < 0.33 is early,
# < 0.67 mid, else late.
EARLY_END, MID_END = 0.33, 0.67
REGIONS = ("masked", "start")


def mean_gap(state, region):
    """[B] the mean top-1 minus top-2 logit over the ``region``: the positions masked now
    (``masked``) or at the start (``start``, decoded ones included)."""
    top2 = state.log_probs.topk(2, dim=-1).values          # log-softmax keeps logit differences
    gap = (top2[..., 0] - top2[..., 1]).double()
    where = state.masked if region == "masked" else state.start_masked
    return (gap * where).sum(1) / where.sum(1).clamp_min(1)


@register_strategy
@dataclass
class Prophet(Scheduled):
    """Prophet (pixeli99/Prophet generate_earlyexit.py): LLaDA's rule until the top-2 logit gap is large; commit all.

    At pass i of ``steps`` (progress i / steps, i counted from 1) the mean top-1 minus top-2 logit
    over ``region`` is compared with ``early`` (progress < 0.33), ``mid``
    (< 0.67) or ``late``; at or above it every masked position is revealed at this pass, else the
    base rule (``score``, ``schedule``, ``steps``, ``block``: Scheduled's, LLaDA's confidence on
    the linear schedule by default) picks. 7.5 / 5.0 / 2.5 are the reference's (lines 15, 21-25;
    eval_llada.py 114-116). Its gap is read over an answer region, the 5 positions after a forced
    "The answer is", which its blocks decode last: ``region`` ``masked`` (default) reads the
    positions still masked, the part of our outputs still open; ``start`` every position masked
    at the start, decoded ones included (whose gap a model that sees the token inflates)."""
    name: ClassVar[str] = "prophet"
    score: str = score_field("confidence")
    early: float = bounded(7.5, low=0.0)
    mid: float = bounded(5.0, low=0.0)
    late: float = bounded(2.5, low=0.0)
    region: str = field(default="masked", metadata={"choices": REGIONS})

    def __post_init__(self):
        super().__post_init__()
        if self.region not in REGIONS:
            raise ValueError(f"region must be one of {', '.join(REGIONS)}, got {self.region!r}")

    def threshold(self, step):
        """The gap threshold at (1-based) pass ``step``."""
        progress = step / self.steps
        return self.early if progress < EARLY_END else self.mid if progress < MID_END else self.late

    def select(self, state):
        base = super().select(state)                     # keeps the schedule's memory in step
        commit = (mean_gap(state, self.region) >= self.threshold(state.step + 1)).unsqueeze(1)
        return torch.where(commit, state.masked, base)
