"""The one decode loop every strategy runs through."""
import time
from dataclasses import dataclass

import torch

from bench.core import StepState
from bench.errors import BenchError


@dataclass
class DecodeResult:
    tokens: torch.Tensor  # [B, N] final tokens
    passes: torch.Tensor  # [B] forward passes each row took
    seconds: float        # wall time of the whole batch
    aux_passes: torch.Tensor  # [B] passes the strategy spent besides decoding (an oracle's probing)
    log_q: torch.Tensor   # [B] float64: log-probability of the revealed values under the sampling
    #                       distribution at the pass that revealed them, summed (0 for argmax values)


def fill_values(out, pick, value_tokens, temperature, generator):
    """(token ids [B, N] for every position, [B] log-probability of the values at ``pick``):
    argmax values (temperature 0, log-probability 0: nothing is drawn) or a sample from the
    model's distribution at ``temperature``."""
    if temperature == 0:
        return value_tokens[out.logits.argmax(-1)], torch.zeros(pick.shape[0], dtype=torch.float64)
    log_probs = torch.log_softmax(out.logits.float() / temperature, dim=-1)
    flat = torch.multinomial(log_probs.exp().reshape(-1, log_probs.shape[-1]), 1, generator=generator)
    values = flat.view(log_probs.shape[:-1])
    drawn = log_probs.gather(-1, values.unsqueeze(-1)).squeeze(-1).double()
    return value_tokens[values], torch.where(pick, drawn, 0.0).sum(1)


def check_pick(pick, masked, strategy_name, step):
    """A strategy must reveal a non-empty subset of the masked positions in every row."""
    if pick.shape != masked.shape or pick.dtype != torch.bool:
        raise BenchError(f"strategy {strategy_name} returned {tuple(pick.shape)} {pick.dtype}, "
                         f"expected bool {tuple(masked.shape)}")
    if (pick & ~masked).any():
        raise BenchError(f"strategy {strategy_name} revealed an already unmasked position at pass {step}")
    if not pick.any(1).all():
        raise BenchError(f"strategy {strategy_name} revealed nothing for an active row at pass {step}")


def decode(model, tokens, masked, strategy, temperature=0.0, generator=None):
    """Reveal every masked position of ``tokens`` [B, N], one forward pass per active row per step.

    Rows that are complete drop out of the batch, so their pass count stops. ``log_q`` sums the
    log-probabilities of the drawn values: for a strategy whose picks depend only on the state it
    is log q(x), the log-probability of the whole sample under the decoding process (an exact
    task compares it with the true log p(x)).
    """
    tokens, masked = tokens.clone(), masked.clone()
    passes = torch.zeros(tokens.shape[0], dtype=torch.long)
    aux = torch.zeros_like(passes)
    log_q = torch.zeros(tokens.shape[0], dtype=torch.float64)
    start, step = time.perf_counter(), 0
    while True:
        active = masked.any(1).nonzero().squeeze(1)  # [A]
        if active.numel() == 0:
            return DecodeResult(tokens, passes, time.perf_counter() - start, aux, log_q)
        state = StepState(tokens[active], masked[active], model(tokens[active], masked[active]), step)
        if not torch.isfinite(state.out.logits).all():
            raise BenchError(f"the model returned non-finite logits at pass {step}")
        pick = strategy.select(state)
        check_pick(pick, state.masked, strategy.name, step)
        aux[active] += state.aux_passes  # counted apart from decoding passes
        values, drawn_log_q = fill_values(state.out, pick, model.value_tokens, temperature, generator)
        log_q[active] += drawn_log_q
        tokens[active] = torch.where(pick, values, state.tokens)
        masked[active] = state.masked & ~pick
        passes[active] += 1
        step += 1
