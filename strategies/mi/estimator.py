"""The neural MI estimator: hidden states of the frozen model -> a symmetric N x N MI matrix.

Each position gets query and key features from its hidden state, the model's probabilities
of its values, its entropy and its mask flag. A pair's score is symmetric,  s_ij = sum_k w_k (q_i^k . k_j^k + q_j^k . k_i^k) / 2 + b,
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
        bound = torch.minimum(bounded[:, :, None], bounded[:, None, :])                    # [B, N, N]
        # SCALE * expm1(softplus(s)) == SCALE * exp(s): the bias absorbs log(SCALE)
        mi = torch.minimum(torch.exp(self.scores(hidden, probs, entropy, masked)), bound)
        mi.diagonal(dim1=1, dim2=2).zero_()
        return mi

    def pair_features(self, hidden, probs, entropy, masked, need=None):
        """(q, k) [B, N, K*d]: the halves of what ``scores`` multiplies (left = [q, k], right =
        [k, q]; q scaled by the head weights), computed at the positions ``need``
        ([B, N] bool; default the masked ones: MI_hat is 0 at the others whatever their features)
        and 0 elsewhere. At least MIN_ROWS positions go through the network, padded with others:
        a matrix product's rounding can depend on its row count when that is small, and this
        keeps every value bit-identical to ``scores`` on all positions (tests/test_mi_speed.py)."""
        batch, n, _ = hidden.shape
        need = (masked if need is None else need).clone()
        short = min(MIN_ROWS, batch * n) - int(need.sum())
        if short > 0:
            flat = need.view(-1)
            flat[(~flat).nonzero().squeeze(1)[:short]] = True
        x = torch.cat([hidden[need].float(), probs[need].float(), entropy[need][:, None],
                       masked[need][:, None].float()], -1)                                # [M, W]
        computed = self.features(x)                                                       # [M, 2Kd]
        features = computed.new_zeros(batch, n, computed.shape[-1])
        features[need] = computed
        q, k = features.view(batch, n, 2, -1).unbind(2)                                   # [B, N, K*d]
        q = q * (self.head_weight.repeat_interleave(self.cfg.d_head) / (2 * self.cfg.d_head ** 0.5))
        return q, k

    def reader(self, hidden, probs, entropy, masked, need=None):
        """A ``PairReader``: MI_hat of the state, computed as far as it is read."""
        return PairReader(self, hidden, probs, entropy, masked, need)


MIN_ROWS = 128   # rows per feature product, at least (see pair_features)
BLOCK = 16       # pair-score rows computed together (see PairReader)


class PairReader:
    """MI_hat of one state, computed as far as it is read.

    The greedy rule reads the MI rows of the positions it takes, walking them in ascending
    entropy, and only where a later candidate could still fit. So features are computed at the
    positions ``need`` (those the rule can take, e.g. entropy within the budget), and pair scores
    in blocks of BLOCK rows in that order, each block (and its exp) when one of its rows is first
    read; the entropy bound only on the rows read. A block is a [BLOCK, D] x [D, N] product per input,
    whose values are bit-identical to the rows of the full [N, D] x [D, N] one (so every value
    read is ``forward``'s), and whose shape does not depend on the batch.

    Args:
        network: the MIEstimator (its device is where the work is done).
        hidden, probs, masked: as for ``forward``.
        entropy: [B, N] entr(probs).sum(-1), as ``forward`` computes it (StepState.entropy).
        need: [B, N] bool, the positions whose MI may be read (default: the masked ones); the
            values read elsewhere are not MI_hat's.
    """

    def __init__(self, network, hidden, probs, entropy, masked, need=None):
        self.network, self.back = network, hidden.device
        device = next(network.parameters()).device
        hidden, probs, entropy, masked = (t.to(device) for t in (hidden, probs, entropy, masked))
        with torch.inference_mode():
            self.q, self.k = network.pair_features(hidden, probs, entropy, masked,
                                                   None if need is None else need.to(device))
            self.right = torch.cat([self.k, self.q], -1)                                  # [B, N, 2Kd]
        # NaN or infinity in a feature would show in the sum; the bias is the scores' other term
        self.finite = bool(torch.isfinite(self.right.sum() + network.bias))
        self.entropy, self.masked = entropy, masked
        self.bounded = entropy * masked                                                   # 0 where unmasked
        self.bounded_np = self.bounded.cpu().numpy()
        self.order = None

    def ranked(self):
        """Order the positions as the rule walks them (ascending entropy, masked first); make the
        storage of the blocks (exp of the pair scores, on the CPU, where the rule reads them)."""
        if self.order is None:
            batch, n = self.masked.shape
            score = (-self.entropy).masked_fill(~self.masked, float("-inf"))
            self.order = torch.sort(score, dim=1, descending=True, stable=True).indices    # [B, N]
            self.rank = torch.empty_like(self.order).scatter_(
                1, self.order, torch.arange(n, device=self.order.device).expand(batch, n)).cpu().numpy()
            self.exp_scores = np.empty((batch, -(-n // BLOCK) * BLOCK, n), dtype=np.float32)  # by rank
            self.done = np.zeros((batch, -(-n // BLOCK)), dtype=bool)

    def compute(self, rows, blocks):
        """Make sure blocks ``blocks`` of batch rows ``rows`` ([R] numpy each) are computed."""
        todo = ~self.done[rows, blocks]
        if not todo.any():
            return
        batch, n = self.masked.shape
        device = self.right.device
        for block in np.unique(blocks[todo]).tolist():
            r = np.unique(rows[todo & (blocks == block)])
            index = torch.from_numpy(r).to(device)
            ranks = torch.arange(block * BLOCK, (block + 1) * BLOCK, device=device).clamp_max(n - 1)
            positions = self.order[index][:, ranks]                                        # [R, BLOCK]
            right = self.right if len(r) == batch else self.right[index]                   # all rows: no copy
            with torch.inference_mode():
                bias = self.network.bias.expand(len(r), BLOCK, n)
                where = (index[:, None], positions)
                left = torch.cat([self.q[where], self.k[where]], -1)                       # [R, BLOCK, 2Kd]
                scores = torch.baddbmm(bias, left, right.transpose(1, 2))
                self.exp_scores[r, block * BLOCK:(block + 1) * BLOCK] = torch.exp(scores).cpu().numpy()
            self.done[r, block] = True

    def rows(self, rows, positions):
        """[R, N] float32 on the CPU: MI_hat[rows[r], positions[r], :] (rows and positions [R] long)."""
        rows, positions = np.asarray(rows.cpu()), np.asarray(positions.cpu())
        self.ranked()
        rank = self.rank[rows, positions]
        self.compute(rows, rank // BLOCK)
        bounded = self.bounded_np
        bound = np.minimum(bounded[rows, positions][:, None], bounded[rows])              # [R, N]
        mi = np.minimum(self.exp_scores[rows, rank], bound)
        mi[np.arange(len(rows)), positions] = 0.0
        return torch.from_numpy(mi)

    def matrix(self):
        """[B, N, N] MI_hat of every pair: ``forward``'s result."""
        batch, n = self.masked.shape
        with torch.inference_mode():
            left = torch.cat([self.q, self.k], -1)
            scores = torch.baddbmm(self.network.bias.expand(batch, n, n), left, self.right.transpose(1, 2))
        bound = torch.minimum(self.bounded[:, :, None], self.bounded[:, None, :])
        mi = torch.minimum(torch.exp(scores), bound)
        mi.diagonal(dim1=1, dim2=2).zero_()
        return mi.to(self.back)


class WholeMatrix:
    """A PairReader's interface to an MI matrix computed whole (a network without ``reader``)."""

    def __init__(self, mi):
        self.mi, self.finite = mi, bool(torch.isfinite(mi).all())

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
    build = lambda p: with_weights(MIEstimator(EstimatorConfig(**p["config"])), p["state_dict"])  # noqa: E731
    return load_helper(Path(path), "MI estimator", f"python -m bench train mi --task {task_name}", model_id, build)[0]
