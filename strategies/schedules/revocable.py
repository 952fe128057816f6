"""Revocable parallel decoding: WINO (Hong et al. 2025, Feng-Hong/WINO-DLLM ``LLaDA/decoding.py``
``decoding_wino``, lines 112-198) and Saber (Dong et al. 2025, zhaoyMa/Saber ``decoding.py``
``generate_with_saber``, lines 470-558). Both reveal many positions a pass and mask some decoded
ones again; docs/strategies.md gives each formula, its defaults and every deviation.

Neither reference has a step budget: WINO loops while its block holds a mask, Saber up to 1024
passes a block. Both make net progress (WINO: after T passes in a block at least T of its
positions more are decoded, since it masks again at most one fewer than it revealed the pass
before; Saber: it masks again at most one fewer than it revealed), so an input takes at most as
many passes as it has masked positions. The pass budget below bounds any input the tasks hold.
"""
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from bench.core import Selection, Strategy
from bench.decode import forward
from bench.errors import BenchError
from bench.registry import DEFAULT_INT_RANGE, bounded, register_strategy
from strategies.ordering import block_eligible, block_field, block_positions, check_block, rank_masked

PASS_BUDGET = DEFAULT_INT_RANGE[1]   # never reached: an input ends within its masked positions (above)
# WINO's constants (decoding.py 138, 140): the first pass of a block may re-mask up to 29, and a
# pass accepts at most min(max(int(0.7 M), 5), 20) of the block's M masked positions.
WINO_FIRST_LAST_ACCEPT = 30
WINO_ACCEPT_RATIO, WINO_ACCEPT_LOW, WINO_ACCEPT_HIGH = 0.7, 5, 20
VERIFY = ("hidden", "seen")
VERIFY_CHUNK = 256   # leave-one-out rows per model call


def highest(score, candidates, k):
    """bool [B, N]: the min(k, #candidates) candidates of highest score per row (ties: lower index;
    a candidate of score +-inf still ranks before every non-candidate)."""
    largest = torch.finfo(score.dtype).max
    _, ranks = rank_masked(score.clamp(-largest, largest), candidates)
    return candidates & (ranks < k.unsqueeze(1))


def lowest(score, candidates, k):
    """bool [B, N]: the min(k, #candidates) candidates of lowest score per row (as ``highest``)."""
    return highest(-score, candidates, k)


def value_indices(tokens, value_tokens):
    """[P] long: the value index of each token id in ``tokens`` [P]."""
    return (tokens.unsqueeze(1) == value_tokens.unsqueeze(0)).long().argmax(1)


def hidden_probabilities(model, state, start_tokens, candidates):
    """[B, N] float: at each candidate (a decoded position), the probability of its current token
    from a pass with that position alone masked again (what WINO's shadow block reads); 0
    elsewhere. One pass per candidate, an input's own in one call (so an input's values do not
    depend on its batch), added to ``state.aux_passes``."""
    result = torch.zeros(candidates.shape)
    for row in candidates.any(1).nonzero().squeeze(1).tolist():
        cols = candidates[row].nonzero().squeeze(1)
        for chunk in cols.split(VERIFY_CHUNK):
            tokens = state.tokens[row].repeat(len(chunk), 1)
            masked = state.masked[row].repeat(len(chunk), 1)
            here = torch.arange(len(chunk))
            tokens[here, chunk], masked[here, chunk] = start_tokens[row, chunk], True
            logits = forward(model, tokens, masked, state.step).logits[here, chunk]          # [P, V]
            values = value_indices(state.tokens[row, chunk], model.value_tokens)
            result[row, chunk] = torch.softmax(logits.double(), -1).gather(1, values.unsqueeze(1)).squeeze(1).float()
        state.aux_passes[row] += len(cols)
    return result


@register_strategy
@dataclass
class WINO(Strategy):
    """WINO (Feng-Hong/WINO-DLLM LLaDA/decoding.py): accept above tau1, re-mask decoded ones verified below tau2.

    In the current block (the ``block``-long one of the leftmost masked position; 0: the whole
    input) accept every masked position of confidence > ``tau1`` (at most min(max(int(0.7 M),
    5), 20) of its M masked ones, the most confident; at least the most confident one). When
    more than one is accepted, verify the block's decoded positions: each whose current token
    has probability < ``tau2`` is masked again; if that is as many as or more than the pass
    before accepted (A, 30 at a block's first pass), only the A - 1 least probable. ``verify``
    ``hidden`` (the reference's): that probability comes from a pass with the position alone
    masked, one extra pass per verified position, reported apart as ``verify_passes`` (the
    reference reads it from a shadow copy of the block in the same pass, which a model without
    attention masks cannot take); ``seen``: from the loop's pass, where the model sees the token.
    tau1 0.6 and tau2 0.9 are ``decoding_wino``'s defaults (line 113, configs/gsm8k.yaml); tau2 0
    re-masks nothing (the no-re-mask ablation: wide-in alone, no verification passes)."""
    name: ClassVar[str] = "wino"
    remasks: ClassVar[bool] = True
    aux_passes_metric: ClassVar[str] = "verify_passes"
    tau1: float = bounded(0.6, low=0.0, high=1.0)
    tau2: float = bounded(0.9, low=0.0, high=1.0)
    verify: str = field(default="hidden", metadata={"choices": VERIFY})
    block: int = block_field()

    def __post_init__(self):
        if self.verify not in VERIFY:
            raise ValueError(f"verify must be one of {', '.join(VERIFY)}, got {self.verify!r}")
        check_block(self.block)
        self.model = None

    def bind(self, task, model):
        self.model = model

    def pass_budget(self):
        return PASS_BUDGET

    def start_memory(self, tokens, masked):
        rows = tokens.shape[0]
        return {"start_tokens": tokens.clone(), "block": torch.full((rows,), -1, dtype=torch.long),
                "last_accept": torch.full((rows,), WINO_FIRST_LAST_ACCEPT, dtype=torch.long)}

    def accept(self, state, eligible):
        """bool [B, N]: the masked positions of the current block accepted at this pass."""
        confidence = state.confidence
        left = eligible.sum(1)
        most = (left.double() * WINO_ACCEPT_RATIO).long().clamp(WINO_ACCEPT_LOW, WINO_ACCEPT_HIGH)
        above = eligible & (confidence > self.tau1)
        capped = highest(confidence, eligible, most)
        best = highest(confidence, eligible, torch.ones_like(left))
        over = (above.sum(1) > most).unsqueeze(1)
        none = (~above.any(1)).unsqueeze(1)
        return torch.where(over, capped, torch.where(none, best, above))

    def verified(self, state, decoded_here, rows):
        """[B, N] the probability of each decoded position's current token (``verify``)."""
        if self.verify == "seen":
            values = torch.zeros_like(state.tokens)
            values[decoded_here] = value_indices(state.tokens[decoded_here], self.model.value_tokens)
            return state.probs.gather(-1, values.unsqueeze(-1)).squeeze(-1)
        return hidden_probabilities(self.model, state, state.memory["start_tokens"], decoded_here & rows.unsqueeze(1))

    def select(self, state):
        if self.model is None:
            raise BenchError("strategy wino has no model to verify with (bind(task, model) was not called)")
        memory = self.state_memory(state)
        here = block_positions(state.masked, self.block)
        first = torch.where(state.masked.any(1), state.masked.float().argmax(1), 0)
        current = first // self.block if self.block else torch.zeros_like(first)
        last_accept = torch.where(current == memory["block"], memory["last_accept"], WINO_FIRST_LAST_ACCEPT)
        reveal = self.accept(state, block_eligible(state.masked, self.block))
        accepted = reveal.sum(1)
        checks = accepted > 1
        decoded_here = here & state.start_masked & ~state.masked
        remask = torch.zeros_like(reveal)
        if self.tau2 > 0 and (checks.unsqueeze(1) & decoded_here).any():   # tau2 0 re-masks none: no passes
            back = self.verified(state, decoded_here, checks)
            low = decoded_here & (back < self.tau2) & checks.unsqueeze(1)
            capped = lowest(back, decoded_here, last_accept - 1)
            remask = torch.where((low.sum(1) >= last_accept).unsqueeze(1), capped & checks.unsqueeze(1), low)
        memory["block"], memory["last_accept"] = current, accepted
        return Selection(reveal, remask)


@register_strategy
@dataclass
class Saber(Strategy):
    """Saber (zhaoyMa/Saber decoding.py): adaptive threshold; re-mask the decoded ones whose confidence fell most.

    Threshold: the mean confidence, when committed, of the positions committed so far (1 before
    any). Reveal every eligible masked position above it, at least the ``n`` most confident
    (F = max(n, those above)). Unless that completes the reached blocks, mask again the
    min(F - 1, max(n // 2, ceil(F / 8))) decoded positions whose confidence fell most since the
    pass before (positions revealed at this pass included). ``block``: the positions of the
    blocks reached so far are eligible; the next block is reached when they are all decoded
    (0: one block, the reference's default). n 2 is the reference's default (line 471).
    ``backtrack`` false masks nothing again (the no-re-mask ablation: the adaptive threshold alone)."""
    name: ClassVar[str] = "saber"
    remasks: ClassVar[bool] = True
    n: int = bounded(2, low=1, per_position=1)
    block: int = block_field()
    backtrack: bool = True

    def __post_init__(self):
        check_block(self.block)

    def pass_budget(self):
        return PASS_BUDGET

    def start_memory(self, tokens, masked):
        rows = tokens.shape[0]
        return {"last": torch.zeros(tokens.shape), "committed": torch.full(tokens.shape, float("-inf")),
                "reach": torch.zeros(rows, dtype=torch.long)}

    def reached(self, state):
        """[B, N] bool: the positions of the blocks reached (the reference's ``:block_end``)."""
        n = state.masked.shape[1]
        if self.block == 0:
            return torch.ones_like(state.masked)
        first = torch.where(state.masked.any(1), state.masked.float().argmax(1), 0)
        reach = torch.maximum(state.memory["reach"], first // self.block)
        state.memory["reach"] = reach
        return torch.arange(n).unsqueeze(0) < ((reach + 1) * self.block).unsqueeze(1)

    def select(self, state):
        memory = self.state_memory(state)
        region = self.reached(state)
        now = torch.where(state.start_masked & region, state.confidence, float("-inf"))   # [B, N]
        change = now - memory["last"]
        fell = torch.where(change.isfinite(), change, float("inf"))   # the reference's lines 501-503
        memory["last"] = now
        eligible = state.masked & region
        committed = memory["committed"].masked_fill(~region, float("-inf"))
        seen = committed > float("-inf")
        threshold = torch.where(seen.any(1), committed.where(seen, 0).sum(1) / seen.sum(1).clamp_min(1), 1.0)
        above = eligible & (now > threshold.unsqueeze(1))
        count = above.sum(1)
        floor = highest(now, eligible, torch.full_like(count, self.n))
        reveal = torch.where((count < self.n).unsqueeze(1), floor, above)
        memory["committed"] = torch.where(reveal, now, memory["committed"])
        fixed = count.clamp_min(self.n)
        back = torch.minimum(fixed - 1, torch.maximum(torch.full_like(fixed, self.n // 2), (fixed + 7) // 8))
        decoded = state.start_masked & region & ~(state.masked & ~reveal)
        going_on = (eligible & ~reveal).any(1, keepdim=True) & self.backtrack   # the reached blocks hold a mask
        remask = lowest(fell, decoded, back) & going_on
        # One revealed and masked again at this pass stays masked (the loop re-masks decoded ones only)
        return Selection(reveal & ~remask, remask & ~state.masked)
