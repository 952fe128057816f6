"""The gsm task's text MDM: a small bidirectional transformer over characters, and its wrapper.

Input: token ids [B, LENGTH] (tasks/gsm/data.py), masked positions replaced by the mask id;
learned position embeddings; pre-norm blocks (bench.networks); a head over the values
(end-of-text and the characters). No time conditioning, as in LLaDA.
"""
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from bench.checkpoints import build_from_payload, file_id, load_payload, save_atomic, with_weights
from bench.core import ModelOutput
from bench.errors import BenchError
from bench.networks import NetworkModel, TransformerBlock
from tasks.gsm.data import EOT, LENGTH, MASK, N_TOKENS, N_VALUES

DEFAULT_WEIGHTS = Path(__file__).parent / "weights" / "gsm_mdm.pt"
TRAIN_COMMAND = "python -m bench train gsm"


@dataclass
class GSMModelConfig:
    length: int = LENGTH
    n_tokens: int = N_TOKENS
    n_values: int = N_VALUES
    n_layers: int = 4
    d_model: int = 192
    n_heads: int = 6
    d_ff: int = 576

    def to_dict(self):
        return asdict(self)


class GSMTransformer(nn.Module):
    """tokens [B, N], masked [B, N] -> (logits over the values [B, N, V], hidden [B, N, D])."""

    def __init__(self, cfg: GSMModelConfig):
        super().__init__()
        self.cfg = cfg
        self.token_emb = nn.Embedding(cfg.n_tokens, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.length, cfg.d_model)
        self.blocks = nn.ModuleList(TransformerBlock(cfg) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.n_values)

    def forward(self, tokens, masked):
        x = self.token_emb(tokens.masked_fill(masked, MASK)) + self.pos_emb.weight[:tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)), x


class GSMMDM(NetworkModel):
    """The trained text MDM as a MaskedModel: value v is token id v + 2 (end-of-text first)."""
    hidden_layer = -1
    chunk_rows = 64

    def __init__(self, network, checkpoint_id, meta=None):
        super().__init__(network, checkpoint_id, meta)
        self.vocab_size = network.cfg.n_values
        self.value_tokens = torch.arange(EOT, EOT + network.cfg.n_values)

    def forward(self, tokens, masked):
        logits, hidden = self.network(tokens, masked)
        return ModelOutput(logits=logits, hidden=hidden)


def save_mdm(path, network, meta):
    """Write the weights (what ``load_mdm`` and the task's ``--model PATH`` read)."""
    save_atomic(path, {"config": network.cfg.to_dict(), "state_dict": network.state_dict(), "meta": meta})


def load_mdm(path=DEFAULT_WEIGHTS):
    payload = load_payload(path, "GSM MDM", TRAIN_COMMAND)

    def network_of(p):
        return with_weights(GSMTransformer(GSMModelConfig(**p["config"])), p["state_dict"])

    network = build_from_payload(payload, network_of, "GSM MDM", path, TRAIN_COMMAND)
    if (network.cfg.length, network.cfg.n_tokens) != (LENGTH, N_TOKENS):
        raise BenchError(f"GSM MDM {path} was trained on {network.cfg.length} positions and {network.cfg.n_tokens} "
                         f"token ids; the task has {LENGTH} and {N_TOKENS}; retrain it with: {TRAIN_COMMAND}")
    return GSMMDM(network, file_id(path), payload.get("meta"))
