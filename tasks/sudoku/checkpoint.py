"""The shipped Sudoku model: where it lives, how it is saved and loaded as a MaskedModel."""
from pathlib import Path

import torch

from bench.checkpoints import (
    build_from_payload,
    file_id,
    load_payload,
    save_atomic,
    with_weights,
)
from bench.core import ModelOutput
from bench.networks import NetworkModel
from tasks.sudoku.model import SudokuMDM, SudokuModelConfig

DEFAULT_WEIGHTS = Path(__file__).parent / "weights" / "sudoku_mdm.pt"
TRAIN_COMMAND = "python -m bench train sudoku"


def save_checkpoint(path, model, meta):
    save_atomic(path, {"config": model.cfg.to_dict(), "state_dict": model.state_dict(), "meta": meta})


class SudokuModel(NetworkModel):
    """The MaskedModel of the Sudoku task: digits 1..9 are the values, token = value + 1."""
    vocab_size = 9
    chunk_rows = 32   # rows per forward call on a CPU: the fastest there, and bit-identical (bench.chunks)

    def __init__(self, network, checkpoint_id, meta=None):
        super().__init__(network, checkpoint_id, meta)
        self.value_tokens = torch.arange(1, 10)

    def forward(self, tokens, masked):
        logits, hidden = self.network(tokens, masked)
        return ModelOutput(logits=logits, hidden=hidden)

    @property
    def hidden_layer(self):
        """The layer ``ModelOutput.hidden`` holds (helpers record it)."""
        return self.network.cfg.hidden_layer


def load_sudoku_model(path=DEFAULT_WEIGHTS):
    """Load a checkpoint written by ``save_checkpoint``; one-line errors when absent or corrupt."""
    payload = load_payload(path, "Sudoku model", TRAIN_COMMAND)
    def network_of(p):
        return with_weights(SudokuMDM(SudokuModelConfig(**p["config"])), p["state_dict"])

    network = build_from_payload(payload, network_of, "Sudoku model", path, TRAIN_COMMAND)
    return SudokuModel(network, file_id(path), payload.get("meta"))
