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
