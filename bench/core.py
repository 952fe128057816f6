"""The interfaces every task, model and strategy share, with every optional hook and its default.

The decode loop, the runner, the report and the plugin commands talk to tasks, models and
strategies only through what is declared here. A task or strategy subclasses ``Task`` or
``Strategy`` and overrides what it has; a model subclasses ``MaskedModel`` (or provides the
same attributes). Nothing here names a task or a strategy.
"""
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np
import torch

from bench.errors import BenchError
from bench.streams import Streams


def all_finite(tensor):
    """Whether every value of ``tensor`` is finite (no NaN or infinity). A CPU float32 or float64
    tensor is checked by numpy: torch's isfinite makes several passes and a bool tensor, 10-20
    times numpy's time on a pass's logits (about 0.2 ms a pass)."""
    if tensor.device.type == "cpu" and tensor.dtype in (torch.float32, torch.float64):
        return bool(np.isfinite(tensor.detach().numpy()).all())
    return bool(torch.isfinite(tensor).all())


@dataclass
class ModelOutput:
    """What one forward pass returns."""
    logits: torch.Tensor  # [B, N, V] over the real token values only
    hidden: torch.Tensor | None = None  # [B, N, D] states of the layer estimators and policies read
    #                                     (optional: only strategies that need them, Strategy.needs)


class MaskedModel:
    """A masked discrete diffusion model: one call is one forward pass.

    Required: ``vocab_size`` (V, the number of real token values), ``value_tokens`` ([V] token id
    of each value, what the loop writes), ``checkpoint_id`` (identifies the weights; results and
    helpers record it) and ``__call__``. Optional attributes have the defaults below.
    """
    vocab_size: int
    value_tokens: torch.Tensor
    checkpoint_id: str
    n_params: int | None = None          # parameter count, recorded in results
    hidden_layer: int | str = "unspecified"  # which layer ``ModelOutput.hidden`` holds (helpers record it)

    def __call__(self, tokens: torch.Tensor, masked: torch.Tensor) -> ModelOutput:
        raise NotImplementedError

    def to(self, device):
        """Move the model to ``device``; returns self (a CPU-only model keeps this default)."""
        return self


@dataclass
class StepState:
    """The state a strategy sees at one pass. Derived quantities are computed once, lazily.

    A strategy that runs the model beyond the loop's pass (an oracle probing it) adds those
    passes per row to ``aux_passes``; the loop reports them apart from decoding passes. A strategy
    that chooses at random draws from ``uniform(purpose)``: each input's own stream. The loop draws
    the revealed values from ``out`` after ``select``: a rule whose reference draws them from other
    logits (the model's fused with a history) assigns ``out`` a copy holding those.
    """
    tokens: torch.Tensor   # [B, N] long
    masked: torch.Tensor   # [B, N] bool, True where still masked
    out: ModelOutput
    step: int              # pass number, 0-based (every active row has had exactly this many passes)
    streams: Streams | None = None   # the rows' random streams (the loop's; None: seed 0, inputs 0..B-1)
    start: torch.Tensor | None = None   # [B, N] bool: masked when the input started (None: ``masked``);
    #                                     the only positions a re-masking strategy may mask again
    memory: dict | None = None   # the strategy's per-input state of these rows (Strategy.start_memory):
    #                              tensors with a leading [B]; assign updated ones, the loop keeps them

    @property
    def start_masked(self):
        """[B, N] bool: the positions masked at the start (what a step plan counts, what may be re-masked)."""
        return self.start if self.start is not None else self.masked

    def uniform(self, purpose: str) -> torch.Tensor:
        """[B, N] float64 uniforms in [0, 1) for this pass and ``purpose`` (a string naming what
        they are for): from each input's own stream (bench.streams), so they do not depend on the
        batch an input is decoded in."""
        streams = self.streams if self.streams is not None else Streams(0, rows=self.tokens.shape[0])
        return streams.uniform_grid(self.step, purpose, self.tokens.shape[1])

    @cached_property
    def aux_passes(self):
        """[B] long: extra model passes the strategy spent on each row at this step."""
        return torch.zeros(self.tokens.shape[0], dtype=torch.long)

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


@dataclass
class Selection:
    """What a re-masking strategy's ``select`` returns: positions to reveal (a subset of the
    masked ones, possibly empty) and decoded positions to mask again (a subset of those masked at
    the start and revealed since: never a given position)."""
    reveal: torch.Tensor   # [B, N] bool
    remask: torch.Tensor   # [B, N] bool


class Strategy:
    """Chooses which masked positions to reveal at a pass. Subclasses are dataclasses whose
    fields are the strategy's parameters (``name:k=7`` sets ``k``)."""
    name: ClassVar[str]
    remasks: ClassVar[bool] = False   # whether ``select`` may return a Selection that masks positions again
    # whether ``select`` ranks by the values drawn this pass (CreditDecoding, P2): the path then depends on
    # values drawn and not revealed, so the summed log q of the revealed values is not log q(x)
    picks_by_value: ClassVar[bool] = False
    requires: ClassVar[tuple] = ()   # TaskProtocols a task must implement for this strategy
    aux_passes_metric: ClassVar[str | None] = None   # record field of passes besides decoding (an oracle's probing)
    needs: ClassVar[tuple] = ()   # what it reads of the model's output besides logits: ("hidden",) for hidden states

    def samples(self) -> bool:
        """Whether the strategy draws random numbers to choose (from ``StepState.uniform``, each
        input's own stream: its runs depend on the seed, and still reproduce input by input)."""
        return False

    def bind(self, task, model):
        """Load what the strategy needs besides the state (trained helpers, the model to probe)."""

    def helper_ids(self) -> dict:
        """Identities of trained helper files; they join the run's identity."""
        return {}

    def start_memory(self, tokens: torch.Tensor, masked: torch.Tensor) -> dict:
        """The strategy's state per input at the start of a decode: name -> tensor with a leading
        [B] (one row per input of ``tokens`` [B, N]). The loop hands each pass the active rows'
        part as ``StepState.memory`` and keeps what the strategy assigns there, row by row: an
        input's state follows it whatever its batch. Computed from each row alone."""
        return {}

    def state_memory(self, state: "StepState") -> dict:
        """``state.memory``; for a state made outside the decode loop (one ``select`` alone: a
        benchmark, a test) the strategy's starting memory."""
        if state.memory is None:
            state.memory = self.start_memory(state.tokens, state.masked)
        return state.memory

    def pass_budget(self) -> int | None:
        """The most passes an input may take (None: no bound but the loop's own, one revealed
        position a pass). A strategy that re-masks, or may reveal nothing at a pass, declares
        one; the loop stops with an error when an input is still masked after it."""
        return None

    def select(self, state: StepState) -> "torch.Tensor | Selection":
        """bool [B, N]: a subset of ``state.masked`` with at least one position per row that
        still has a masked position. A strategy with a pass budget may reveal nothing at a pass;
        one that ``remasks`` may return a Selection."""
        raise NotImplementedError


@dataclass
class EvalSet:
    """Inputs of one evaluation: start tokens and masks, plus what scoring needs."""
    tokens: torch.Tensor   # [n, N] long
    masked: torch.Tensor   # [n, N] bool
    data_id: str           # identifies the data (file hash, seed, ...)
    extras: dict           # task-specific: references, line numbers, ...

    def __len__(self):
        return self.tokens.shape[0]


class Task:
    """A task: inputs, a model, per-sample records and summary metrics.

    Required: ``name``, ``headline`` (the metric Pareto plots use), ``load_model``, ``eval_set``,
    ``records``, ``summarize``, ``config``. Every other member is an optional hook with its
    default here; the commands that need a hook a task lacks say so in one line. What a strategy
    family needs of a task beyond these it declares as a TaskProtocol (the dependency helpers
    and the order policy of two strategy families), which a task implements by defining
    its members (bench.protocols).
    """
    name: ClassVar[str]
    headline: ClassVar[str]
    temperature: ClassVar[float] = 0.0          # 0 = argmax values, > 0 = sampled values
    options: ClassVar[dict] = {}                # --data / --model help for `bench list`
    install: ClassVar[str] = ""                 # the command that installs what ``missing`` names
    extra_figures: ClassVar[tuple] = ()         # metrics besides the headline to draw Pareto plots of
    in_presets: ClassVar[bool] = True           # False: presets that run every registered task leave it
    #                                             out unless it declares specs for their tier (a task whose
    #                                             cost there is not measured yet); --tasks NAME runs it

    def __init__(self, data=None, model=None):
        self.data, self.model = data, model

    def helper_flags(self):
        """The command-line flags naming this instance's model (its --model), for the training
        command a helper records; "" for the task's own model."""
        return f" --model {self.model}" if getattr(self, "model", None) else ""

    # --- required ---------------------------------------------------------------------------
    def load_model(self) -> MaskedModel:
        raise NotImplementedError

    def eval_set(self, limit: int | None, seed: int) -> EvalSet:
        raise NotImplementedError

    def records(self, tokens, passes, rows, eval_set: EvalSet) -> list[dict]:
        """Per-sample records (JSON-able) of final tokens of eval-set rows ``rows``."""
        raise NotImplementedError

    def summarize(self, records: list[dict]) -> list[dict]:
        """Summary metrics (bench.stats metric dicts) from per-sample records alone."""
        raise NotImplementedError

    def config(self) -> dict:
        """The task's resolved options, stored in every result."""
        raise NotImplementedError

    # --- optional hooks ---------------------------------------------------------------------
    def missing(self) -> list[str]:
        """Packages this task (with its --data and --model) needs that are not installed: `bench
        list` names them and ``install``, and `bench run` stops on them before any work."""
        return []

    def problems(self) -> list[str]:
        """Malformed inputs that were skipped, one line each."""
        return []

    def floor(self) -> list[dict] | None:
        """Metrics of a second reference sample against the first (the noise floor), or None."""
        return None

    def floor_label(self) -> str:
        return "a second reference sample against the first"

    def natural_variation(self, n) -> dict | None:
        """What ``n`` natural inputs score against the reference, per metric: {metric: {mean, bound,
        draws, n, m}} with ``bound`` the worse end of the draws' 95% (the floor at a run's own
        size; docs/extending.md), or None. A run is within natural variation on a metric where its
        value is no worse than the bound."""
        return None

    def data_summary(self) -> str:
        """What the run line says about the data besides its size ('' for nothing)."""
        return ""

    def train_model(self, settings: list[str], out: str | None) -> None:
        """`bench train TASK KEY=VALUE...`: train the task's model."""
        raise BenchError(f"task {self.name} has no model trainer")

    def symbols(self) -> dict | None:
        """{token id: symbol} for every id the task's inputs hold: each value's letter ('A', '7')
        and the special ids by role ('<cls>', '<eos>', '<pad>', '<mask>'), so that a model reading
        another vocabulary can translate (``--model hf:PATH``, bench/hf.py); None: not offered."""
        return None

    def data_builders(self) -> dict:
        """`bench data NAME`: name -> (one-line help, function(args)) that builds a data set."""
        return {}
