"""PC-Sampler (Huang et al. 2025, NEUIR/PC-Sampler ``src/generate.py``, ``pc_sampler_function``):
position-aware weighting of a background-calibrated confidence, on LLaDA's linear schedule."""
from dataclasses import dataclass
from typing import ClassVar

import torch

from bench.core import Strategy
from bench.errors import BenchError
from bench.registry import PASSES_PER_POSITION, bounded, register_strategy
from strategies.ordering import block_eligible, block_field, block_positions, check_block, top_k_mask
from strategies.schedules import BACKGROUND_TASK
from strategies.schedules.parts import block_counts, block_steps, check_steps, quota
from strategies.schedules.scheduled import schedule_position, start_schedule_memory


@register_strategy
@dataclass
class PCSampler(Strategy):
    """Top-k of exp(-lam * i) * min(-p * log f_bg(x), alpha) on the linear schedule over ``steps``.

    p is the top probability, x its value, f_bg(x) the value's frequency in the task's training
    data (the task's ``value_frequencies``), i the position's offset in its block (in the input
    without blocks). Defaults are the reference's: lam 0.25, alpha 10; lam 0 removes the
    positional bias, as the paper does for Sudoku."""
    name: ClassVar[str] = "pc_sampler"
    requires: ClassVar[tuple] = (BACKGROUND_TASK,)
    lam: float = 0.25
    alpha: float = 10.0
    steps: int = bounded(16, per_position=PASSES_PER_POSITION)
    block: int = block_field()

    def __post_init__(self):
        if not self.lam >= 0 or not self.alpha > 0:
            raise ValueError(f"lam must be >= 0 and alpha > 0, got lam={self.lam}, alpha={self.alpha}")
        check_steps(self.steps)
        check_block(self.block)
        self.log_background = None

    def bind(self, task, model):
        frequencies = torch.as_tensor(task.value_frequencies(), dtype=torch.float32)
        self.log_background = frequencies.clamp_min(1e-9).log()               # [V], as the reference's eps

    def start_memory(self, tokens, masked):
        return start_schedule_memory(tokens)

    def score(self, state):
        """[B, N] the reference's score of each position's argmax value."""
        if self.log_background is None:
            raise BenchError("pc_sampler reads the task's value frequencies: bind(task, model) it first")
        surprise = (-state.confidence * self.log_background[state.probs.argmax(-1)]).clamp(max=self.alpha)
        positions = torch.arange(state.masked.shape[1])
        offset = positions % self.block if self.block else positions
        return torch.exp(-self.lam * offset.float()) * surprise

    def select(self, state):
        self.state_memory(state)
        eligible = block_eligible(state.masked, self.block)
        inner, current = schedule_position(state, self.block)
        total, left = block_counts(state, self.block)
        count = quota("linear", inner, block_steps(state, self.block, self.steps), total, left)
        state.memory = {"block": current, "inner": inner + 1}
        return top_k_mask(self.score(state), eligible & block_positions(state.masked, self.block), count.unsqueeze(1))
