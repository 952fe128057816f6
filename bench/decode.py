"""The one decode loop every strategy runs through."""
import time
from dataclasses import dataclass

import torch

from bench.core import StepState, all_finite
from bench.errors import BenchError
from bench.streams import Streams, categorical


@dataclass
class DecodeResult:
    tokens: torch.Tensor  # [B, N] final tokens
    passes: torch.Tensor  # [B] forward passes each row took
    seconds: float        # wall time of the whole batch
    aux_passes: torch.Tensor  # [B] passes the strategy spent besides decoding (an oracle's probing)
    log_q: torch.Tensor   # [B] float64: log-probability of the revealed values under the sampling
    #                       distribution at the pass that revealed them, summed (0 for argmax values)


def fill_values(tokens, out, pick, value_tokens, temperature=0.0, streams=None, step=0):
    """(``tokens`` [B, N] with a value written at every position of ``pick``, [B] float64
    log-probability of those values): argmax values (temperature 0: log-probability 0, nothing is
    drawn) or values drawn from the model's distribution at ``temperature``, each from its input's
    own stream (``streams``, bench.streams: purpose ``values``, pass ``step``). Only the picked
    positions are computed or drawn."""
    rows, cols = pick.nonzero(as_tuple=True)
    logits = out.logits[rows, cols]                                           # [P, V]
    log_q = torch.zeros(pick.shape[0], dtype=torch.float64)
    if temperature == 0:
        values = logits.argmax(-1)
    else:
        log_probs = torch.log_softmax(logits.float() / temperature, dim=-1)  # [P, V]
        streams = streams if streams is not None else Streams(0, rows=pick.shape[0])
        values = categorical(log_probs.exp(), streams.uniform(step, "values", rows, cols))
        drawn = log_probs.gather(-1, values.unsqueeze(-1)).squeeze(-1).double()
        log_q = torch.zeros(pick.shape, dtype=torch.float64).index_put_((rows, cols), drawn).sum(1)
    filled = tokens.clone()
    filled[rows, cols] = value_tokens[values]
    return filled, log_q


def check_pick(pick, masked, strategy_name, step):
    """A strategy must reveal a non-empty subset of the masked positions in every row."""
    if pick.shape != masked.shape or pick.dtype != torch.bool:
        raise BenchError(f"strategy {strategy_name} returned {tuple(pick.shape)} {pick.dtype}, "
                         f"expected bool {tuple(masked.shape)}")
    if (pick & ~masked).any():
        raise BenchError(f"strategy {strategy_name} revealed an already unmasked position at pass {step}")
    if not pick.any(1).all():
        raise BenchError(f"strategy {strategy_name} revealed nothing for an active row at pass {step}")


def decode(model, tokens, masked, strategy, temperature=0.0, seed=0, index=None):
    """Reveal every masked position of ``tokens`` [B, N], one forward pass per active row per step.

    Rows that are complete drop out of the batch, so their pass count stops. Row r is input
    ``index[r]`` (default r) of a run with ``seed``: every random number drawn for it (sampled
    values, a sampling strategy's draws through ``StepState.uniform``) comes from its own stream
    (bench.streams), so its result does not depend on the other rows of the batch. ``log_q``
    sums the log-probabilities of the drawn values: for a strategy whose picks depend only on the
    state it is log q(x), the log-probability of the whole sample under the decoding process (an
    exact task compares it with the true log p(x)).
    """
    tokens, masked = tokens.clone(), masked.clone()
    streams = Streams(seed, index if index is not None else torch.arange(tokens.shape[0]))
    passes = torch.zeros(tokens.shape[0], dtype=torch.long)
    aux = torch.zeros_like(passes)
    log_q = torch.zeros(tokens.shape[0], dtype=torch.float64)
    start, step = time.perf_counter(), 0
    while True:
        active = masked.any(1).nonzero().squeeze(1)  # [A]
        if active.numel() == 0:
            return DecodeResult(tokens, passes, time.perf_counter() - start, aux, log_q)
        rows = streams.take(active)
        state = StepState(tokens[active], masked[active], model(tokens[active], masked[active]), step, rows)
        if not all_finite(state.out.logits):
            raise BenchError(f"the model returned non-finite logits at pass {step}")
        pick = strategy.select(state)
        check_pick(pick, state.masked, strategy.name, step)
        if "aux_passes" in vars(state):   # a strategy that spent passes (an oracle's probes) made it
            aux[active] += state.aux_passes  # counted apart from decoding passes
        tokens[active], drawn_log_q = fill_values(state.tokens, state.out, pick, model.value_tokens, temperature,
                                                  rows, step)
        log_q[active] += drawn_log_q
        masked[active] = state.masked & ~pick
        passes[active] += 1
        step += 1
