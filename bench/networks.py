"""What the shipped network-backed models share: the MaskedModel around a torch network (eval
mode, inference, chunked forward passes, moving it and counting its parameters) and the
pre-norm transformer block the small trained models stack."""
import torch
import torch.nn.functional as F
from torch import nn

from bench.checkpoints import count_params
from bench.chunks import in_chunks
from bench.core import MaskedModel


class NetworkModel(MaskedModel):
    """A MaskedModel whose forward pass is a torch network's. A subclass sets ``vocab_size`` and
    ``value_tokens`` and defines ``forward(tokens, masked) -> ModelOutput``; ``chunk_rows`` (rows
    per forward call on a CPU, bench.chunks; None: the whole batch in one call) is its own."""
    chunk_rows = None

    def __init__(self, network, checkpoint_id, meta=None):
        self.network = network.eval()
        self.checkpoint_id = checkpoint_id
        self.meta = meta or {}

    @torch.inference_mode()
    def __call__(self, tokens, masked):
        if self.chunk_rows is None:
            return self.forward(tokens, masked)
        return in_chunks(self.forward, tokens, masked, self.chunk_rows)

    def forward(self, tokens, masked):
        raise NotImplementedError

    def to(self, device):
        """Move the network (and value ids) to ``device``; returns self."""
        self.network.to(device)
        self.value_tokens = self.value_tokens.to(device)
        return self

    @property
    def n_params(self):
        return count_params(self.network)


class TransformerBlock(nn.Module):
    """Pre-norm transformer block with bidirectional attention (``attn_mask``: bool [N, N], True
    where position i may attend to j; None: everywhere). ``cfg`` gives d_model, n_heads, d_ff."""

    def __init__(self, cfg):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.norm1, self.norm2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ff = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_ff), nn.GELU(), nn.Linear(cfg.d_ff, cfg.d_model))

    def forward(self, x, attn_mask=None):
        batch, n, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(batch, n, 3, self.n_heads, -1).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)   # [B, H, N, W/H]
        x = x + self.proj(att.transpose(1, 2).reshape(batch, n, width))
        return x + self.ff(self.norm2(x))
