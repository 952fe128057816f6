"""EB-Sampler's rule with the MI term: the MI ablation on EB's own rule.

Masked positions are sorted by ascending entropy (EB-Sampler's default order); the largest
prefix U is revealed with

    sum_{i in U} H_i  -  max_{i in U} H_i  +  lam * sum_{i < j in U} MI_hat[i, j]  <=  gamma,

at least one position. With lam = 0 this is exactly `eb:gamma=G` (entropy order), so
`mi_eb` against `eb` credits the MI term alone on EB's rule, as `mi` against `mi:lam=0` does on
the greedy rule.
"""
from dataclasses import dataclass
from typing import ClassVar

import torch

from bench.registry import register_strategy
from strategies.mi.guided import MIGuided
from strategies.ordering import rank_masked


def prefix_pair_mi(mi, order):
    """[B, N]: sum of MI over the pairs inside each prefix of ``order`` (the first t+1 positions)."""
    in_order = mi.gather(1, order[:, :, None].expand_as(mi)).gather(2, order[:, None, :].expand_as(mi))
    return ranked_pair_mi(in_order)


def ranked_pair_mi(in_order):
    """[B, P]: sum of MI over the pairs inside each prefix, ``in_order`` [B, P, P] MI in rank order.
    Over the first P ranks of a larger matrix, the same float32 sums (the rows past t add zeros)."""
    with_earlier = in_order.triu(1).sum(1)            # [B, P] position t's MI with positions before it
    return with_earlier.cumsum(1)


def prefix_candidates(entropy, masked, gamma, order, ranks):
    """bool [B, N]: the masked positions a prefix within ``gamma`` can hold. A prefix's cost is at
    least the entropy of all its positions but the last, so a position after more than gamma of
    entropy never fits (a margin covers rounding); MI is read only between these positions."""
    in_order = entropy.gather(1, order).masked_fill(~masked.gather(1, order), 0.0).double()
    before = in_order.cumsum(1) - in_order                           # entropy of the positions before each
    return masked & (before <= gamma + 1e-3 * (1 + gamma)).gather(1, ranks)


@register_strategy
@dataclass
class MIEBRule(MIGuided):
    """EB-Sampler's prefix rule (entropy sum minus max) plus lam * predicted MI within the prefix <= gamma."""
    name: ClassVar[str] = "mi_eb"

    def select(self, state):
        order, ranks = rank_masked(-state.entropy, state.masked)        # [B, N] ascending entropy
        need = prefix_candidates(state.entropy, state.masked, self.gamma, order, ranks)
        pairs = self.prefix_pairs(state, need, order)
        in_order_masked = state.masked.gather(1, order)
        entropy = state.entropy.gather(1, order).masked_fill(~in_order_masked, 0.0)
        spent = entropy.cumsum(1) - entropy.cummax(1).values + self.lam * pairs
        fits = (spent <= self.gamma) & in_order_masked                   # monotone in the prefix
        count = fits.sum(1, keepdim=True).clamp_min(1)                   # [B, 1]
        return state.masked & (ranks < count)

    def prefix_pairs(self, state, need, order):
        """[B, N] ``prefix_pair_mi`` of the estimator's MI, computed between the first ranks only
        (as many as a row has candidates in ``need``); past them a row's prefix never fits, and
        the sums there repeat the last one."""
        reader = self.reader(state, need, order)
        if not hasattr(reader, "prefix"):
            return prefix_pair_mi(self.checked(reader, reader.matrix()).clamp_min(0), order)
        n = need.shape[1]
        pairs = ranked_pair_mi(self.checked(reader, reader.prefix(int(need.sum(1).max()))).clamp_min(0))[:, :n]
        return torch.cat([pairs, pairs[:, -1:].expand(-1, n - pairs.shape[1])], 1)
