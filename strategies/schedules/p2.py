"""P2 path planning (Peng et al. 2025, arXiv 2502.03540): pengzhangzhi/Path-Planning
``src/path_planning/p2.py`` ``p2_sampling`` (lines 10-87), with its score functions
(``score_function.py`` 5-71), schedules (``scheduler.py`` 17-129) and helpers (``utils.py``
``topk_lowest_masking`` 6-23, ``stochastic_sample_from_categorical`` 65-97). docs/strategies.md
gives the formula, the defaults and every deviation.

Each pass samples a value x0 at every position masked at the start (decoded ones too), scores it,
and masks the positions scoring below the k-th smallest, k = int(L (1 - kappa(i/S))) (ties at the
cutoff stay): masked ones below it stay masked, decoded ones below it are masked again, and the
other masked ones are revealed with their x0.
"""
import math
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from bench.core import Selection, Strategy
from bench.decode import forward
from bench.errors import BenchError
from bench.registry import PASSES_PER_POSITION, bounded, make_task, register_strategy
from bench.streams import Streams
from strategies.schedules.parts import bound_temperature, check_choice, check_steps, loop_values

# scheduler.py: kappa(t), the fraction decoded after time t (linear is p2_sampling's default, line 16)
KAPPAS = {"linear": lambda t: t,                                   # 17-33
          "sine": lambda t: math.sin(t * math.pi / 2),             # 36-53
          "geometric": lambda t: 1 - (1 - t) ** 2,                 # 56-72
          "log": lambda t: math.log(t + 1) / math.log(2),          # 75-91
          "poly2": lambda t: t ** 2,                               # 94-110
          "poly05": lambda t: t ** 0.5}                            # 113-129
SCORES = ("logp", "random", "top2")    # score_function.py logP (5-26), random_score (29-47), diff_top2 (50-71)
TINY = 2.0 ** -54                      # keeps a uniform of 0 off log(0): a draw in (0, 1)
NO_PLANNER = "none"


def exponentials(streams, step, purpose, rows, slots):
    """[P] float64 Exp(1) draws, one per (row, slot) pair ([P] long each), from the rows' own streams."""
    return -torch.log(streams.uniform(step, purpose, rows, slots) + TINY)


def perturbed(log_probs, values, top, rest):
    """[P, V] float64 Gumbel-perturbed log-probabilities whose argmax is ``values`` [P], drawn top-down
    (Maddison et al. 2014): the maximum is -log E0 (Gumbel), every other value a Gumbel at its
    log-probability truncated below it, -log(E0 + E_j / p_j). Given ``values`` drawn from
    softmax(``log_probs``) this is the law of ``log_probs`` + Gumbel noise, the reference's
    ``logits / tau + gumbel_noise`` up to a constant (utils.py 93-95), conditioned on its argmax.
    ``top`` [P] and ``rest`` [P, V] are Exp(1) draws."""
    others = -torch.log(top.unsqueeze(1) + rest * torch.exp(-log_probs))
    return others.scatter(1, values.unsqueeze(1), -torch.log(top).unsqueeze(1))


def lowest_below_cutoff(score, count):
    """bool [B, N]: ``topk_lowest_masking`` (utils.py 20-23): every score strictly below the
    ``count``-th smallest (0-based; ties at the cutoff stay, so fewer may be masked). A column of
    +inf stands for the given positions the reference's index would reach where there are none."""
    padded = torch.cat([score, torch.full_like(score[:, :1], float("inf"))], 1)
    return score < padded.sort(-1).values.gather(-1, count)


@register_strategy
@dataclass
class P2(Strategy):
    """P2 path planning (pengzhangzhi/Path-Planning src/path_planning/p2.py): re-mask the lowest-scoring positions.

    At pass i of ``steps`` S, draw x0 at every position masked at the start (decoded ones too, as
    the loop draws its values: at the task's temperature from each input's own stream) and score
    it (``score``: ``logp`` the Gumbel-perturbed log-probability of x0, ``top2`` its top-1 minus
    top-2 perturbed log-probability, ``random`` log u); decoded positions' scores are multiplied by
    ``eta`` (1 keeps them, 0 never re-masks: ancestral sampling, >1 re-masks more). The positions
    scoring strictly below the k-th smallest, k = int(L (1 - kappa(i/S))) (``schedule``), stay or
    go back masked; the other masked ones are revealed with x0. ``planner`` (a model the task can
    load: ``task`` its own, a checkpoint, ``hf:PATH`` or ``module:factory``; default none) scores
    the decoded positions by its log-probability of x0 instead, one pass a pass reported as
    ``planner_passes``. Defaults are p2_sampling's (lines 15-19); it has no default S (16 here)."""
    name: ClassVar[str] = "p2"
    remasks: ClassVar[bool] = True
    picks_by_value: ClassVar[bool] = True
    # first, so that a spec naming a planner with ':' (hf:PATH) stays one spec on --strategies; left
    # out of the run's name at its default
    planner: str = field(default=NO_PLANNER, metadata={"omit_default": True})
    steps: int = bounded(16, low=1, per_position=PASSES_PER_POSITION)
    eta: float = bounded(1.0, low=0.0)
    score: str = field(default="logp", metadata={"choices": SCORES})
    schedule: str = field(default="linear", metadata={"choices": tuple(KAPPAS)})

    def __post_init__(self):
        check_steps(self.steps)
        check_choice("score", self.score, SCORES)
        check_choice("schedule", self.schedule, tuple(KAPPAS))
        if not self.planner or self.planner.strip() != self.planner or "," in self.planner:
            raise ValueError(f"planner must name one model (no spaces or commas), got {self.planner!r}")
        self.temperature = self.planner_model = None

    @property
    def aux_passes_metric(self):
        return "planner_passes" if self.planner != NO_PLANNER else None

    def bind(self, task, model):
        self.temperature = float(task.temperature)
        if self.planner != NO_PLANNER:
            self.planner_model = load_planner(task, model, self.planner)

    def helper_ids(self):
        return {"planner": self.planner_model.checkpoint_id} if self.planner_model is not None else {}

    def pass_budget(self):
        return self.steps

    def samples(self):
        return self.score == "random"    # the Gumbel noise at temperature > 0 goes with the task's draws

    def scores(self, state, temperature):
        """([B, N] x0, [B, N] float64 score): at every position masked at the start, the value the
        loop draws there at this pass and its score (``score``), 0 elsewhere."""
        where = state.start_masked
        values = loop_values(state, state.out.logits, temperature, where)
        score = torch.zeros(where.shape, dtype=torch.float64)
        rows, cols = where.nonzero(as_tuple=True)
        if self.score == "random":
            score[rows, cols] = torch.log(state.uniform("p2:random")[rows, cols])   # score_function.py 47
            return values, score
        noisy = state.out.logits[rows, cols].double()                                # [P, V], line 63
        if temperature > 0:                                                           # utils.py 93-95
            noisy = gumbel_noised(state, rows, cols, torch.log_softmax(noisy / temperature, -1), values[rows, cols])
        score[rows, cols] = position_scores(torch.log_softmax(noisy, -1), values[rows, cols], self.score)
        return values, score

    def select(self, state):
        temperature = bound_temperature(self)
        start, decoded = state.start_masked, state.start_masked & ~state.masked
        values, score = self.scores(state, temperature)
        if self.planner_model is not None:
            planned = self.planner_scores(state, values)
            score = torch.where(decoded, planned, score) if self.score != "random" else score
        score = score.masked_fill(~start, float("inf"))                                  # line 74
        score = torch.where(decoded, score * self.eta, score)                              # line 76
        kappa = KAPPAS[self.schedule]((state.step + 1) * (1 / self.steps))                 # lines 58, 62
        count = (start.sum(1, keepdim=True).float() * (1 - kappa)).long().clamp_min(0)     # line 78
        low = lowest_below_cutoff(score, count)                                            # line 79
        return Selection(state.masked & ~low, decoded & low)                               # lines 82-84

    def planner_scores(self, state, values):
        """[B, N] float64: the planner's score of x0 at every position (its log-probability of x0, or
        its top-2 gap), the planner fed x0 at the positions masked at the start and the given tokens
        elsewhere (lines 68-73; one pass, counted apart)."""
        tokens = torch.where(state.start_masked, self.planner_model.value_tokens[values], state.tokens)
        logits = forward(self.planner_model, tokens, torch.zeros_like(state.masked), state.step).logits
        state.aux_passes += 1
        log_probs = torch.log_softmax(logits.double(), -1).flatten(0, 1)
        return position_scores(log_probs, values.flatten(), self.score).view(values.shape)


def gumbel_noised(state, rows, cols, log_probs, values):
    """[P, V] the reference's noisy logits at positions (``rows``, ``cols``) given the values the loop
    drew there (``perturbed``), the noise from each input's own stream."""
    streams = state.streams if state.streams is not None else Streams(0, rows=state.tokens.shape[0])
    width = log_probs.shape[-1]
    top = exponentials(streams, state.step, "p2:gumbel:max", rows, cols)
    slots = (cols.unsqueeze(1) * width + torch.arange(width)).flatten()
    rest = exponentials(streams, state.step, "p2:gumbel:rest", rows.repeat_interleave(width), slots)
    return perturbed(log_probs, values, top, rest.view(-1, width))


def position_scores(log_probs, values, score):
    """[P] float64: ``logp`` log_probs at ``values`` (logP), ``top2`` top-1 minus top-2 (diff_top2)."""
    if score == "top2":
        top = log_probs.topk(2, dim=-1).values
        return top[:, 0] - top[:, 1]
    return log_probs.gather(-1, values.unsqueeze(-1)).squeeze(-1)


def load_planner(task, model, spec):
    """The planner model ``spec`` names for ``task`` (``task``: the decoding model itself; else as
    ``--model`` takes it: a checkpoint, ``hf:PATH`` or ``module:factory``), on the same values."""
    from bench.models import load_model
    if spec == "task":
        planner = model
    else:
        planner = load_model(make_task(task.name, data=getattr(task, "data", None), model=spec), spec)
    if not torch.equal(torch.as_tensor(planner.value_tokens).cpu(), torch.as_tensor(model.value_tokens).cpu()):
        raise BenchError(f"strategy p2: planner {spec} writes other token ids than the task's model "
                         f"(value_tokens differ); a planner must share the model's values")
    return planner
