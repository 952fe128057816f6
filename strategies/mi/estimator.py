"""The neural MI estimator: hidden states of the frozen model -> a symmetric N x N MI matrix.

Each position gets query and key features from its hidden state, the model's probabilities
of its values, its entropy and its mask flag. A pair's score is symmetric,

    s_ij = sum_k w_k (q_i^k . k_j^k + q_j^k . k_i^k) / 2 + b,

and is read on the scale the loss uses, t = log1p(MI / SCALE) with SCALE = 0.01 nats:

    MI_hat[i, j] = min(SCALE * expm1(softplus(s_ij)), H_i, H_j) = min(exp(s_ij + log SCALE), H_i, H_j)

which is symmetric, 0 unless both positions are masked, and never above the smaller entropy
(true MI cannot be). Training minimises the MSE between log1p(MI / SCALE) of prediction and
target, so small MI values are not drowned by large ones.
"""
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bench.checkpoints import load_helper, save_atomic, with_weights
from bench.core import all_finite

SCALE = 0.01  # nats; the training loss compares log1p(MI / SCALE)
FILE_NAME = "mi_estimator.pt"


@dataclass
class EstimatorConfig:
    d_hidden: int = 96      # width of the frozen model's hidden states
    n_values: int = 9       # V, the number of token values
    d_inner: int = 128      # width of the per-position MLP
    n_heads: int = 4        # bilinear heads
    d_head: int = 16        # feature width per head

    def to_dict(self):
        return asdict(self)


class MIEstimator(nn.Module):
    """(hidden [B, N, D], probs [B, N, V], masked [B, N]) -> MI_hat [B, N, N] in nats."""

    def __init__(self, cfg: EstimatorConfig):
        super().__init__()
        self.cfg = cfg
        width = cfg.d_hidden + cfg.n_values + 2
        self.features = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, cfg.d_inner),
                                      nn.GELU(), nn.Linear(cfg.d_inner, 2 * cfg.n_heads * cfg.d_head))
        self.head_weight = nn.Parameter(torch.ones(cfg.n_heads) / cfg.n_heads)
        self.bias = nn.Parameter(torch.tensor(math.log(SCALE * 0.3)))  # exp(s) starts near 0.003 nats

    def scores(self, hidden, probs, entropy, masked):
        """[B, N, N] symmetric pair scores s_ij = (q_i . k_j + k_i . q_j) / 2 + b, heads folded."""
        batch, n, _ = hidden.shape
        x = torch.cat([hidden.float(), probs.float(), entropy[..., None], masked[..., None].float()], -1)
        q, k = self.features(x).view(batch, n, 2, -1).unbind(2)                           # [B, N, K*d]
        q = q * (self.head_weight.repeat_interleave(self.cfg.d_head) / (2 * self.cfg.d_head ** 0.5))
        left, right = torch.cat([q, k], -1), torch.cat([k, q], -1)                        # [B, N, 2Kd]
        return torch.baddbmm(self.bias.expand(batch, n, n), left, right.transpose(1, 2))

    def forward(self, hidden, probs, masked):
        entropy = torch.special.entr(probs.float()).sum(-1)                                # [B, N]
        bounded = entropy * masked                                                         # 0 where unmasked
        return bounded_mi(self.scores(hidden, probs, entropy, masked), bounded)

    def position_features(self, hidden, probs, entropy, masked):
        """[M, 2Kd] float32: the (q, k) features of M positions (hidden [M, D], probs [M, V],
        entropy [M], masked [M]), q scaled by the head weights. The rows go through the network
        padded to a multiple of ROW_MULTIPLE (with copies of the first): a product of a few rows,
        or of a count that is not a multiple of 4, can round differently from the same rows in a
        larger product, so this keeps every value bit-identical to ``scores``'s at 1-64 threads
        (tests/test_mi_speed.py)."""
        count, width = hidden.shape[0], 2 * self.cfg.n_heads * self.cfg.d_head
        if count == 0:
            return hidden.new_zeros(0, width, dtype=torch.float32)
        x = torch.cat([hidden.float(), probs.float(), entropy[:, None], masked[:, None].float()], -1)  # [M, W]
        if count % ROW_MULTIPLE:
            x = torch.cat([x, x[:1].expand(ROW_MULTIPLE - count % ROW_MULTIPLE, -1)])
        features = self.features(x)[:count]                                                # [M, 2Kd] = [q, k]
        features[:, :width // 2] *= self.head_weight.repeat_interleave(self.cfg.d_head) / (2 * self.cfg.d_head ** 0.5)
        return features

    def reader(self, hidden, probs, entropy, masked, need=None, order=None):
        """A ``PairReader``: MI_hat of the state, computed as far as it is read."""
        return PairReader(self, hidden, probs, entropy, masked, need, order)


def bounded_mi(scores, bounded):
    """[B, P, P] MI_hat from pair scores: min(exp(s_ij), H_i, H_j) with ``bounded`` [B, P] the
    entropies (0 where unmasked), 0 on the diagonal. SCALE * expm1(softplus(s)) == SCALE * exp(s):
    the bias absorbs log(SCALE)."""
    mi = torch.minimum(torch.exp(scores), torch.minimum(bounded[:, :, None], bounded[:, None, :]))
    mi.diagonal(dim1=1, dim2=2).zero_()
    return mi


# rows per feature product: a multiple of this (see position_features). Measured with the shipped
# estimators at 1-64 threads: a product of 4k rows equals those rows of any larger one, bit for bit;
# other row counts differ below 4 rows at 1 thread, below 172 at 64
ROW_MULTIPLE = 8
BLOCK = 16       # pair scores are made for blocks of BLOCK columns of the rank order (at least BLOCK rows)
STEP = 8         # features are made STEP ranks at a time: the frontier of what a row has read moves by STEP


class PairReader:
    """MI_hat of one state, computed as far as it is read.

    The rules read MI between positions walked in ascending entropy (masked first; ties to the
    lower index), and only between positions they can take (``need``: entropy within the budget,
    a prefix of that order). So features (at the ``need`` positions) are made STEP ranks at a time
    and pair scores a block of BLOCK columns at a time, for the rows that walk into them
    (``extend``; MI-EB's whole prefix at once: ``prefix``). Every value read is
    bit-identical to ``forward``'s: each product keeps at least BLOCK rows and columns, where a
    value's rounding does not depend on the shape (tests/test_mi_speed.py). Values at positions
    outside ``need`` are not MI_hat's and are never read by the rules.

    Args:
        network: the MIEstimator (its device is where the work is done).
        hidden, probs, masked: as for ``forward``.
        entropy: [B, N] entr(probs).sum(-1), as ``forward`` computes it (StepState.entropy).
        need: [B, N] bool, the positions whose MI may be read (default: the masked ones).
        order: [B, N] ``rank_masked(-entropy, masked)``'s order where already made.
    """

    def __init__(self, network, hidden, probs, entropy, masked, need=None, order=None):
        self.network, self.back = network, hidden.device
        device = next(network.parameters()).device
        self.hidden, self.probs, self.entropy, self.masked = (t.to(device) for t in (hidden, probs, entropy, masked))
        # the bookkeeping is numpy: a tenth of torch's cost per call on arrays this small
        entropy_np, masked_np = entropy.cpu().numpy(), masked.cpu().numpy()
        self.need_np = masked_np if need is None else need.cpu().numpy()
        self.order_np = ranked_order(entropy_np, masked_np) if order is None else order.cpu().numpy()  # [B, N]
        batch, n = masked.shape
        blocks = -(-n // BLOCK)
        self.ranked_bound = np.zeros((batch, blocks * BLOCK), dtype=np.float32)             # by rank, 0 where unmasked
        self.ranked_bound[:, :n] = np.take_along_axis(entropy_np * masked_np, self.order_np, 1)
        self.pairs = None                           # [B, R', 2Kd] the features by rank (feature_store)
        self.featured = np.zeros((batch, blocks * BLOCK // STEP), dtype=bool)
        # exp of the pair scores by rank, made a block of columns at a time (``extend``): row b holds
        # them for columns below frontier[b] * STEP
        self.ranked_mi = np.empty((batch, BLOCK, BLOCK), dtype=np.float32)
        self.frontier = np.zeros(batch, dtype=np.int64)
        # NaN or infinity in the bias enters every score; in a feature, the scores made from it
        self.finite = math.isfinite(network.bias.item())

    def feature_store(self, ranks):
        """[B, R', 2Kd] the features by rank ([q, k], 0 where not made), R' >= ``ranks`` whole blocks.
        Made as far as the walks go (most stop within a block: a whole store was 0.9 MB of zeros a
        pass on the protein model) and grown a block at a time."""
        blocks = -(-ranks // BLOCK)
        if self.pairs is None or self.pairs.shape[1] < blocks * BLOCK:
            width = 2 * self.network.cfg.n_heads * self.network.cfg.d_head
            grown = torch.zeros(len(self.frontier), blocks * BLOCK, width, device=self.hidden.device)
            if self.pairs is not None:
                grown[:, :self.pairs.shape[1]] = self.pairs
            self.pairs = grown
        return self.pairs

    def featurize(self, rows, step, steps=1):
        """Make the features of ranks [step STEP, (step + steps) STEP) for batch rows ``rows`` ([R]
        numpy, none of which has any of them yet), at their ``need`` positions (0 elsewhere)."""
        rows = rows[~self.featured[rows, step]]
        if rows.size == 0:
            return
        batch, n = self.order_np.shape
        ranks = np.arange(step * STEP, min((step + steps) * STEP, n))
        positions = self.order_np[rows[:, None], ranks]                                    # [R, b]
        take = self.need_np[rows[:, None], positions]
        if take.any():
            device, pairs = self.hidden.device, self.feature_store(ranks[-1] + 1)
            flat = torch.from_numpy((rows[:, None] * n + positions)[take]).to(device)
            slots = torch.from_numpy((rows[:, None] * pairs.shape[1] + ranks)[take]).to(device)
            inputs = (t.reshape(batch * n, -1).index_select(0, flat) for t in (self.hidden, self.probs))
            scalars = (t.reshape(-1).index_select(0, flat) for t in (self.entropy, self.masked))
            with torch.inference_mode():
                computed = self.network.position_features(*inputs, *scalars)
            pairs.view(-1, computed.shape[1]).index_copy_(0, slots, computed)
        self.featured[rows, step:step + steps] = True

    def extend(self, rows, step):
        """Move the frontier of batch rows ``rows`` ([R] numpy, at ``step``) by STEP ranks: make
        their features there, and the MI of the block of BLOCK columns holding them with every rank
        before the block's end: one [end, D] x [D, BLOCK] product per input (at least BLOCK each way,
        so every value is ``forward``'s), kept as exp of the score in ``ranked_mi`` (by rank; the
        entropy bound is applied where read). Columns past the frontier hold values of features not
        yet made, so a block is made again as the frontier crosses it."""
        self.featurize(rows, step)
        block = step * STEP // BLOCK
        end = (block + 1) * BLOCK
        if self.ranked_mi.shape[1] < end:                   # grow the store a block at a time
            grown = np.empty((len(self.frontier), end, end), dtype=np.float32)
            grown[:, :self.ranked_mi.shape[1], :self.ranked_mi.shape[2]] = self.ranked_mi
            self.ranked_mi = grown
        pairs, every = self.feature_store(end), len(rows) == len(self.frontier)
        if not every:
            pairs = pairs[torch.from_numpy(rows).to(pairs.device)]
        lhs = pairs[:, :end]                                                              # [R, end, 2Kd] = [q, k]
        rhs = pairs[:, block * BLOCK:end].roll(pairs.shape[2] // 2, -1)                  # [R, BLOCK, 2Kd] = [k, q]
        with torch.inference_mode():
            scores = torch.baddbmm(self.network.bias.expand(len(rows), end, BLOCK), lhs, rhs.transpose(1, 2))
            self.ranked_mi[slice(None) if every else rows, :end, block * BLOCK:end] = torch.exp(scores).cpu().numpy()
        # a non-finite feature or bias shows in the scores it enters, checked as they are made
        self.finite &= all_finite(scores)
        self.frontier[rows] = step + 1

    def prefix(self, count):
        """[B, P, P] MI_hat between the first P positions of the rank order, P = ``count`` rounded
        up to whole blocks (what MI-EB reads: positions past a row's budget prefix are not MI_hat's)."""
        batch = self.masked.shape[0]
        blocks = max(1, -(-count // BLOCK))
        rows = np.arange(batch)
        self.featurize(rows, 0, blocks * BLOCK // STEP)
        pairs = self.feature_store(blocks * BLOCK)
        half = pairs.shape[2] // 2
        lhs = pairs[:, :blocks * BLOCK]
        with torch.inference_mode():
            scores = torch.baddbmm(self.network.bias.expand(batch, blocks * BLOCK, blocks * BLOCK), lhs,
                                   lhs.roll(half, -1).transpose(1, 2))
        bounded = torch.from_numpy(self.ranked_bound[:, :blocks * BLOCK]).to(scores.device)
        self.finite &= all_finite(scores)
        return bounded_mi(scores, bounded).to(self.back)

    def matrix(self):
        """[B, N, N] MI_hat of every pair (features at the ``need`` positions): ``forward``'s result there."""
        batch, n = self.masked.shape
        need = torch.from_numpy(self.need_np).to(self.masked.device)
        with torch.inference_mode():
            features = self.network.position_features(*(t[need] for t in (self.hidden, self.probs,
                                                                          self.entropy, self.masked)))
        left = features.new_zeros(batch, n, features.shape[1])
        left[need] = features
        half = features.shape[1] // 2
        with torch.inference_mode():
            scores = torch.baddbmm(self.network.bias.expand(batch, n, n), left, left.roll(half, -1).transpose(1, 2))
        self.finite &= all_finite(scores)
        bounded = self.entropy * self.masked
        return bounded_mi(scores, bounded).to(self.back)


def ranked_order(entropy, masked):
    """[B, N] numpy: ``rank_masked(-entropy, masked)``'s order of numpy ``entropy`` [B, N] float32 and
    ``masked`` [B, N] bool: masked positions by ascending entropy, ties to the lower index, then the rest."""
    return np.argsort(np.where(masked, entropy, np.float32(np.inf)), axis=1, kind="stable")


class WholeMatrix:
    """A PairReader's interface to an MI matrix computed whole (a network without ``reader``)."""

    def __init__(self, mi):
        self.mi, self.finite = mi, all_finite(mi)

    def rows(self, rows, positions):
        return self.mi[rows, positions]

    def matrix(self):
        return self.mi


def transform(mi):
    """The scale the loss is computed on."""
    return torch.log1p(mi.clamp_min(0) / SCALE)


def save_estimator(path, network, model_id, meta):
    save_atomic(path, {"config": network.cfg.to_dict(), "state_dict": network.state_dict(),
                       "model_id": model_id, "meta": meta})


def load_estimator(path, model_id, task_name):
    """The estimator at ``path``, checked to belong to the model ``model_id``; one-line errors."""
    def estimator_of(p):
        return with_weights(MIEstimator(EstimatorConfig(**p["config"])), p["state_dict"])

    return load_helper(Path(path), "MI estimator", f"python -m bench train mi --task {task_name}", model_id,
                       estimator_of)[0]
