"""The exact task's two models behind the MaskedModel interface.

Tokens: 0 = mask, value v is token v + 1.

``ExactHMMModel``: p(x_t | revealed values) by forward-backward over the true chain; its
hidden states (what the MI estimator and order policies read) are the posteriors over hidden
states p(h_t | revealed) [B, N, K], with the position's one-hot revealed value appended
[B, N, K + V] (zeros while masked). It also gives exact pairwise MI (``pair_mi``), which the
MI oracle and MI labels use instead of probing.

``HMMMDM``: a small bidirectional transformer trained on samples of the same chain
(tasks/hmm/train.py); its hidden states are the last block's output.
"""
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from bench.checkpoints import save_atomic
from bench.core import MaskedModel, ModelOutput
from bench.networks import NetworkModel, TransformerBlock
from tasks.hmm import chain

MASK_TOKEN = 0
DEFAULT_MDM = Path(__file__).parent / "weights" / "hmm_mdm.pt"   # the shipped trained MDM


def to_values(tokens, masked):
    """(values [B, N] long in 0..V-1, masked values set to 0; revealed [B, N] bool)."""
    return (tokens - 1).clamp_min(0).masked_fill(masked, 0), ~masked


class ExactHMMModel(MaskedModel):
    """The true conditionals of the HMM: an exact denoiser."""

    def __init__(self, hmm, file_digest):
        self.hmm = hmm
        self.vocab_size = hmm.n_values
        self.value_tokens = torch.arange(1, hmm.n_values + 1)
        self.checkpoint_id = f"exact-hmm-{file_digest}"
        self.n_params = 0
        self.hidden_layer = "state posteriors + revealed value"

    def __call__(self, tokens, masked):
        values, revealed = to_values(tokens, masked)
        gamma = chain.state_posteriors(self.hmm, values, revealed)
        logits = chain.value_log_probs(self.hmm, gamma).float()
        shown = F.one_hot(values, self.vocab_size).double() * revealed[..., None]
        return ModelOutput(logits=logits, hidden=torch.cat([gamma, shown], -1).float())

    def pair_mi(self, tokens, masked):
        """[B, N, N] exact symmetric I(X_i; X_j | revealed) for masked pairs (nats)."""
        values, revealed = to_values(tokens, masked)
        return chain.pair_mi(self.hmm, values, revealed)

    def mi_rows(self, tokens, masked, rows, positions):
        """[R, N] rows ``positions`` of the exact MI matrices of states ``rows`` (what the MI oracle reads)."""
        values, revealed = to_values(tokens, masked)
        return chain.mi_rows(self.hmm, values, revealed, rows, positions)


@dataclass
class HMMModelConfig:
    n_values: int = 8
    length: int = 64
    n_layers: int = 3
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 192

    def to_dict(self):
        return asdict(self)


class HMMTransformer(nn.Module):
    """tokens [B, N] -> (logits over the V values [B, N, V], hidden [B, N, D])."""

    def __init__(self, cfg: HMMModelConfig):
        super().__init__()
        self.cfg = cfg
        self.token_emb = nn.Embedding(cfg.n_values + 1, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.length, cfg.d_model)
        self.blocks = nn.ModuleList(TransformerBlock(cfg) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.n_values)

    def forward(self, tokens, masked):
        x = self.token_emb(tokens.masked_fill(masked, MASK_TOKEN)) + self.pos_emb.weight[:tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)), x


class HMMMDM(NetworkModel):
    """The trained transformer as a MaskedModel."""
    hidden_layer = -1

    def __init__(self, network, checkpoint_id, meta=None):
        super().__init__(network, checkpoint_id, meta)
        self.vocab_size = network.cfg.n_values
        self.value_tokens = torch.arange(1, network.cfg.n_values + 1)

    def forward(self, tokens, masked):
        logits, hidden = self.network(tokens, masked)
        return ModelOutput(logits=logits, hidden=hidden)


def save_mdm(path, network, meta):
    """Write an HMMTransformer as task hmm_mdm's ``--model PATH`` loads it."""
    save_atomic(path, {"config": network.cfg.to_dict(), "state_dict": network.state_dict(), "meta": meta})
