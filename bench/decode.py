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


def fill_values(out, pick, value_tokens, temperature, generator):
    """Token ids [B, N] for every position: argmax (temperature 0) or a sample."""
    if temperature == 0:
        values = out.logits.argmax(-1)
    else:
        probs = torch.softmax(out.logits.float() / temperature, dim=-1)
        flat = torch.multinomial(probs.reshape(-1, probs.shape[-1]), 1, generator=generator)
        values = flat.view(probs.shape[:-1])
    return value_tokens[values]


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

    Rows that are complete drop out of the batch, so their pass count stops.
    """
    tokens, masked = tokens.clone(), masked.clone()
    passes = torch.zeros(tokens.shape[0], dtype=torch.long)
    aux = torch.zeros_like(passes)
    start, step = time.perf_counter(), 0
    while True:
        active = masked.any(1).nonzero().squeeze(1)  # [A]
        if active.numel() == 0:
            return DecodeResult(tokens, passes, time.perf_counter() - start, aux)
        state = StepState(tokens[active], masked[active], model(tokens[active], masked[active]), step)
        if not torch.isfinite(state.out.logits).all():
            raise BenchError(f"the model returned non-finite logits at pass {step}")
        pick = strategy.select(state)
        check_pick(pick, state.masked, strategy.name, step)
        aux[active] += state.aux_passes  # counted apart from decoding passes
        values = fill_values(state.out, pick, model.value_tokens, temperature, generator)
        tokens[active] = torch.where(pick, values, state.tokens)
        masked[active] = state.masked & ~pick
        passes[active] += 1
        step += 1
