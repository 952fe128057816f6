"""Contexts (partly masked inputs) for helper networks: states a decoding run visits, plus
random masks. A task's ``mi_contexts`` hook picks which inputs, for which split; this module holds
what every task shares.
"""
import torch

from bench.decode import decode
from bench.registry import parse_strategy

VISIT_STRATEGIES = ("sequential", "topk:k=3", "eb:gamma=0.3", "threshold:tau=0.9")


class StateRecorder:
    """Wraps a strategy and keeps every (tokens, masked) state the decode loop shows it."""

    def __init__(self, inner):
        self.inner, self.name, self.states = inner, inner.name, []

    def select(self, state):
        self.states.append((state.tokens.clone(), state.masked.clone()))
        return self.inner.select(state)


def visited_states(model, tokens, masked, n, *, temperature, generator):
    """``n`` states drawn uniformly from decoding runs of every VISIT_STRATEGIES strategy
    (the rows of ``tokens``/``masked`` split evenly between the strategies). Sampled values come
    from per-row streams under a seed drawn from ``generator``."""
    seen_tokens, seen_masked = [], []
    seed = int(torch.randint(0, 2 ** 62, (1,), generator=generator))
    for part, spec in zip(torch.arange(len(tokens)).chunk(len(VISIT_STRATEGIES)), VISIT_STRATEGIES):
        recorder = StateRecorder(parse_strategy(spec))
        decode(model, tokens[part], masked[part], recorder, temperature, seed=seed, index=part)
        seen_tokens += [t for t, _ in recorder.states]
        seen_masked += [m for _, m in recorder.states]
    all_tokens, all_masked = torch.cat(seen_tokens), torch.cat(seen_masked)
    pick = torch.randperm(len(all_tokens), generator=generator)[:n]
    return all_tokens[pick], all_masked[pick]


def random_masks(maskable, generator, low=0.05, high=1.0):
    """bool like ``maskable``: each maskable position masked with a per-row rate ~ U(low, high),
    at least one per row."""
    rate = low + (high - low) * torch.rand(maskable.shape[0], 1, generator=generator)
    masked = maskable & (torch.rand(maskable.shape, generator=generator) < rate)
    first = maskable.float().argmax(1)
    empty = ~masked.any(1)
    masked[empty, first[empty]] = True
    return masked
