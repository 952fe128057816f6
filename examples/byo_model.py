r"""Bring your own model: any network wrapped as a MaskedModel, run on a shipped task (Sudoku).

    PYTHONPATH=examples python -m bench run --tasks sudoku --model byo_model:make_model --strategies topk:k=3 \
        --limit 10 --out /tmp/byo/results
    python -m bench report --results /tmp/byo/results      # figures and tables in /tmp/byo/results/reports

A scratch ``--out``: the committed results/ holds the shipped models' runs only.

``--model package.module:factory`` imports the module and calls the factory (with the task when it
takes an argument). The network here is untrained (seeded): it shows the contract, not a good
model. The contract is in docs/extending.md ("Bring your own model").
"""
import hashlib

import torch
from torch import nn

from bench.core import MaskedModel, ModelOutput


class TinyDenoiser(nn.Module):
    """Any network: tokens [B, 81] (0 = mask, 1..9 = digits) -> (logits [B, 81, 9], hidden [B, 81, D])."""

    def __init__(self, width=64, layers=2):
        super().__init__()
        self.embed = nn.Embedding(10, width)
        self.position = nn.Parameter(torch.randn(81, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, 4, 4 * width, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, 9)

    def forward(self, tokens):
        hidden = self.encoder(self.embed(tokens) + self.position)
        return self.head(hidden), hidden


def weights_id(network):
    """12 hex digits of a hash of the weights: the checkpoint_id results record."""
    digest = hashlib.sha256()
    for name, tensor in sorted(network.state_dict().items()):
        digest.update(name.encode() + tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:12]


# --- the wrapper: all a model needs to be benchmarked -------------------------------------------
class Wrapped(MaskedModel):
    vocab_size = 9                                  # V: the values are the digits 1..9

    def __init__(self, network, hidden=True):
        self.network = network.eval()
        self.value_tokens = torch.arange(1, 10)     # [V] the token id the loop writes for each value
        self.checkpoint_id = "tiny-" + weights_id(network)   # names the weights in every result
        self.n_params = sum(p.numel() for p in network.parameters())
        self.with_hidden = hidden                   # False: a model without hidden states

    @torch.inference_mode()
    def __call__(self, tokens, masked):             # one call = one forward pass
        logits, hidden = self.network(tokens.masked_fill(masked, 0))
        return ModelOutput(logits=logits, hidden=hidden if self.with_hidden else None)

    def to(self, device):                           # --device: move the weights (and value ids)
        self.network.to(device)
        self.value_tokens = self.value_tokens.to(device)
        return self
# -------------------------------------------------------------------------------------------------


def make_model():
    torch.manual_seed(0)
    return Wrapped(TinyDenoiser())


def make_model_without_hidden():
    torch.manual_seed(0)
    return Wrapped(TinyDenoiser(), hidden=False)
