"""A masked diffusion transformer over the 81 cells, attention restricted to Sudoku peers."""
from dataclasses import asdict, dataclass

import torch
from torch import nn

from bench.networks import TransformerBlock
from tasks.sudoku.solver import BOX_OF, COL_OF, ROW_OF

MASK_TOKEN = 0  # tokens: 0 = mask, 1..9 = digits


@dataclass
class SudokuModelConfig:
    n_layers: int = 8          # transformer blocks
    d_model: int = 96          # width of the residual stream
    n_heads: int = 4           # attention heads per block
    d_ff: int = 384            # hidden width of each feed-forward layer
    peer_attention: bool = True  # each cell attends only to itself and its 20 peers
    hidden_layer: int = -1     # which block's output ModelOutput.hidden exposes

    def to_dict(self):
        return asdict(self)


def peer_mask():
    """bool [81, 81]: True where cell i may attend to cell j (same row, column or box)."""
    row, col, box = (torch.as_tensor(t) for t in (ROW_OF, COL_OF, BOX_OF))
    return (row[:, None] == row) | (col[:, None] == col) | (box[:, None] == box)


class SudokuMDM(nn.Module):
    """tokens [B, 81] -> (logits over digits 1..9 [B, 81, 9], hidden [B, 81, D])."""

    def __init__(self, cfg: SudokuModelConfig):
        super().__init__()
        self.cfg = cfg
        self.token_emb = nn.Embedding(10, cfg.d_model)
        self.pos_emb = nn.ModuleList(nn.Embedding(9, cfg.d_model) for _ in range(3))  # row, col, box
        self.blocks = nn.ModuleList(TransformerBlock(cfg) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, 9)
        self.register_buffer("units", torch.as_tensor(list(zip(ROW_OF, COL_OF, BOX_OF))).T.contiguous(),
                             persistent=False)  # [3, 81]
        self.register_buffer("attn_mask", peer_mask() if cfg.peer_attention else torch.ones(81, 81, dtype=torch.bool),
                             persistent=False)

    def forward(self, tokens, masked):
        x = self.token_emb(tokens.masked_fill(masked, MASK_TOKEN))
        for emb, index in zip(self.pos_emb, self.units):
            x = x + emb(index)
        hidden = None
        for depth, block in enumerate(self.blocks):
            x = block(x, self.attn_mask)
            if depth == self.cfg.hidden_layer % self.cfg.n_layers:
                hidden = x
        return self.head(self.norm(x)), hidden
