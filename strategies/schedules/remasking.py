"""Re-masking samplers: ReMDM (Wang et al. 2025, kuleshov-group/remdm ``diffusion.py``; the
LLaDA port in furiosa-ai/ParallelBench ``model/remasking/llada/remdm.py``), RCR (MDPO's running
confidence remasking, ParallelBench ``model/remasking/llada/mdpo_rcr.py``, ``overtime_conf``) and
DPLM's reparameterised decoding (bytedance/dplm ``_reparam_decoding``, ``reparam-uncond-
deterministic-linear``). Each returns a bench.core.Selection and declares its pass budget: the
loop stops it there with an error if positions are still masked."""
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from bench.core import Selection, Strategy
from bench.registry import PASSES_PER_POSITION, bounded, register_strategy
from strategies.ordering import block_positions, check_block, rank_masked
from strategies.schedules.parts import block_counts, block_steps, check_choice, check_steps
from strategies.schedules.scheduled import schedule_position, start_schedule_memory

SIGMAS = ("cap", "rescale", "conf")
NEVER = float("inf")   # the stored confidence of a position not decoded: never re-masked first


def start_confidence_memory(tokens):
    """Per input: the confidence each position had when it was revealed (inf: not revealed)."""
    return {"conf": torch.full(tokens.shape, NEVER)}


def remember(state, reveal, remask):
    """Store the confidence of the positions revealed at this pass; forget the re-masked ones."""
    conf = torch.where(reveal, state.confidence, state.memory["conf"])
    state.memory["conf"] = conf.masked_fill(remask, NEVER)


def decoded(state):
    """[B, N] bool: positions revealed since the start and still decoded (the re-maskable ones)."""
    return state.start_masked & ~state.masked


def keep_best(state, candidates, keep):
    """Selection keeping the ``keep`` [B] best candidates: masked ones scored by their confidence
    now, decoded ones by their stored confidence; kept masked ones are revealed, dropped decoded
    ones re-masked (RCR's and DPLM's rule)."""
    score = torch.where(state.masked, state.confidence, state.memory["conf"])
    _, ranks = rank_masked(score, candidates)
    kept = candidates & (ranks < keep.unsqueeze(1))
    reveal, remask = kept & state.masked, candidates & ~kept & ~state.masked
    remember(state, reveal, remask)
    return Selection(reveal, remask)


@register_strategy
@dataclass
class ReMDM(Strategy):
    """MDLM's sampler with decoded positions masked again with probability sigma_t, over ``steps``.

    Times t = 1 - i/S, s = t - 1/S, alpha = 1 - t (MDLM's linear schedule). A decoded position is
    re-masked with sigma_t: ``cap`` min(eta, sigma_max), ``rescale`` eta * sigma_max, ``conf``
    sigma_max * softmax(-stored confidence) over the decoded positions, with
    sigma_max = min(1, (1 - alpha_s) / alpha_t); a masked position is revealed with probability
    (alpha_s - (1 - sigma) alpha_t) / (1 - alpha_t) (for ``conf``, sigma the mean over the
    decoded positions). The last step reveals everything, so an input takes exactly ``steps``
    passes. eta 0.02 is the reference's default."""
    name: ClassVar[str] = "remdm"
    remasks: ClassVar[bool] = True
    sigma: str = field(default="cap", metadata={"choices": SIGMAS})
    eta: float = 0.02
    steps: int = bounded(16, per_position=PASSES_PER_POSITION)

    def __post_init__(self):
        check_choice("sigma", self.sigma, SIGMAS)
        if not 0 <= self.eta <= 1:
            raise ValueError(f"eta must be in [0, 1], got {self.eta}")
        check_steps(self.steps)

    def samples(self):
        return True

    def pass_budget(self):
        return self.steps

    def start_memory(self, tokens, masked):
        return start_confidence_memory(tokens)

    def remask_chance(self, state, sigma_max):
        """[B, N] the probability of masking each decoded position again."""
        old = decoded(state)
        if self.sigma == "cap":
            return old * min(self.eta, sigma_max)
        if self.sigma == "rescale":
            return old * self.eta * sigma_max
        weights = torch.softmax((-state.memory["conf"]).masked_fill(~old, -NEVER), 1).nan_to_num(0.0)
        return old * weights * sigma_max

    def select(self, state):
        self.state_memory(state)
        i, steps = state.step, self.steps
        alpha_t, alpha_s = i / steps, min(1.0, (i + 1) / steps)
        sigma_max = 1.0 if alpha_t == 0 else min(1.0, (1 - alpha_s) / alpha_t)
        chance = self.remask_chance(state, sigma_max)                          # [B, N]
        old = decoded(state)
        sigma = (chance.sum(1) / old.sum(1).clamp_min(1)).unsqueeze(1)         # [B, 1]
        reveal_chance = ((alpha_s - (1 - sigma) * alpha_t) / (1 - alpha_t)).clamp(0, 1)
        reveal = state.masked & (state.uniform("remdm:reveal") < reveal_chance)
        remask = old & (state.uniform("remdm:remask") < chance)
        remember(state, reveal, remask)
        return Selection(reveal, remask)


@register_strategy
@dataclass
class RCR(Strategy):
    """Running confidence remasking: at each of ``steps`` passes a block keep the positions of
    highest confidence (masked ones by their confidence now, decoded ones by the one they had
    when revealed), as many as LLaDA's linear schedule has revealed by the end of this step;
    reveal the kept masked ones, re-mask the dropped decoded ones. ``block`` as LLaDA's (0: the
    whole input; the steps must be at least the blocks)."""
    name: ClassVar[str] = "rcr"
    remasks: ClassVar[bool] = True
    steps: int = bounded(16, per_position=PASSES_PER_POSITION)
    block: int = 0

    def __post_init__(self):
        check_steps(self.steps)
        check_block(self.block)

    def pass_budget(self):
        return self.steps

    def start_memory(self, tokens, masked):
        return start_schedule_memory(tokens) | start_confidence_memory(tokens)

    def select(self, state):
        self.state_memory(state)
        inner, current = schedule_position(state, self.block)
        steps_here = block_steps(state, self.block, self.steps)
        total, _ = block_counts(state, self.block)
        done = inner + 1
        revealed_by_now = done * (total // steps_here) + torch.minimum(done, total % steps_here)
        keep = torch.where(done >= steps_here, total, revealed_by_now).clamp_min(1)
        state.memory["block"], state.memory["inner"] = current, inner + 1
        candidates = state.start_masked & block_positions(state.masked, self.block)
        return keep_best(state, candidates, keep)


@register_strategy
@dataclass
class DPLM(Strategy):
    """DPLM's reparameterised decoding: after pass t of T = ``steps`` the floor(L (1 - t/T))
    lowest-scoring positions are masked, decoded ones included (L the positions masked at the
    start; a position's score is its confidence when revealed; masked ones are scored now)."""
    name: ClassVar[str] = "dplm"
    remasks: ClassVar[bool] = True
    steps: int = bounded(16, per_position=PASSES_PER_POSITION)

    def __post_init__(self):
        check_steps(self.steps)

    def pass_budget(self):
        return self.steps

    def start_memory(self, tokens, masked):
        return start_confidence_memory(tokens)

    def select(self, state):
        self.state_memory(state)
        total = state.start_masked.sum(1)
        still = torch.floor(total.double() * (1 - (state.step + 1) / self.steps)).long()
        return keep_best(state, state.start_masked, (total - still).clamp_min(1))
