"""ESM-C (EvolutionaryScale's `esm` package) as a MaskedModel, and where its weights come from.

Two kinds of checkpoint:
- the project's own (default): a dict {config: {d_model, n_heads, n_layers}, state_dict, meta}
  written by `bench train protein`, shipped in tasks/protein/weights/;
- published ESM-C (`--model esmc_300m` / `esmc_600m`): the plain state dict the `esm` package
  downloads, found offline in $UNMASK_BENCH_ESMC_DIR or the local Hugging Face cache.
"""
import functools
import os
from pathlib import Path

import torch

from bench.checkpoints import file_id, load_payload, save_atomic
from bench.core import ModelOutput
from bench.errors import BenchError
from bench.files import CHECKPOINT_LIMIT, checked_path
from bench.networks import NetworkModel
from tasks.protein.fasta import AMINO_ACIDS

# The default model is stage 2 (stage 1 continued on all of Swiss-Prot); stage 1 ships as its
# starting point, and `bench train protein` with its defaults (the stage-1 recipe) rewrites it.
STAGE1_WEIGHTS = Path(__file__).parent / "weights" / "protein_esmc.pt"
DEFAULT_WEIGHTS = Path(__file__).parent / "weights" / "protein_esmc_stage2.pt"
TRAIN_COMMAND = "python -m bench train protein"
# name: (d_model, n_heads, n_layers, Hugging Face repo, file inside it)
PUBLISHED = {
    "esmc_300m": (960, 15, 30, "EvolutionaryScale/esmc-300m-2024-12", "data/weights/esmc_300m_2024_12_v0.pth"),
    "esmc_600m": (1152, 18, 36, "EvolutionaryScale/esmc-600m-2024-12", "data/weights/esmc_600m_2024_12_v0.pth"),
}


# ESM-C's token ids (its sequence vocabulary in esm 3.2.1), written out so that importing the task
# does not import esm (even for a Sudoku run); ``check_token_ids`` checks them against esm's vocabulary.
MASK_ID, PAD_ID, BOS_ID, EOS_ID = 32, 1, 0, 2
# [20] ESM ids of ACDEF...
AA_IDS = torch.tensor([5, 23, 13, 9, 18, 6, 21, 12, 15, 4, 20, 17, 14, 16, 10, 8, 11, 7, 22, 19])


def check_token_ids(vocabulary):
    """A one-line error unless ``vocabulary`` (esm's SEQUENCE_VOCAB: token by id, which ESM-C's
    tokenizer is built from) gives the ids above."""
    found = [vocabulary.index(token) if token in vocabulary else None
             for token in ("<mask>", "<pad>", "<cls>", "<eos>", *AMINO_ACIDS)]
    if found != [MASK_ID, PAD_ID, BOS_ID, EOS_ID, *AA_IDS.tolist()]:
        raise BenchError("the installed esm package numbers ESM-C's tokens otherwise than esm 3.2.1, which "
                         "this task's ids follow (tasks/protein/model.py); install esm==3.2.1")


class ESMCNetwork(torch.nn.Module):
    """ESM-C's network: the modules of ``esm.models.esmc.ESMC`` (esm's embedding, TransformerStack
    and RegressionHead, under the same names, so the same state dicts load) and its forward
    without flash attention. Not ESMC itself: that module imports esm's inference-client API
    (esm.sdk, 1 s at every start); tests/test_protein_task.py checks the outputs are ESMC's, bit
    for bit."""

    def __init__(self, d_model, n_heads, n_layers):
        from esm.layers.regression_head import RegressionHead
        from esm.layers.transformer_stack import TransformerStack
        from esm.utils.constants.esm3 import SEQUENCE_VOCAB
        super().__init__()
        check_token_ids(SEQUENCE_VOCAB)
        self.config = {"d_model": d_model, "n_heads": n_heads, "n_layers": n_layers}   # a checkpoint rebuilds it
        self.embed = torch.nn.Embedding(64, d_model)
        self.transformer = TransformerStack(d_model, n_heads, None, n_layers, n_layers_geom=0, use_flash_attn=False)
        self.sequence_head = RegressionHead(d_model, 64)

    def forward(self, sequence_tokens):
        """(logits [B, L, 64], every layer's hidden states [B, L, d_model]): ESMC's sequence_logits,
        and its hidden_states before ESMC stacks them (a copy of every layer, ~1% of a pass, when
        one layer is read)."""
        x, _, hiddens = self.transformer(self.embed(sequence_tokens), sequence_id=sequence_tokens != PAD_ID)
        return self.sequence_head(x), hiddens


def build_esmc(d_model, n_heads, n_layers):
    return ESMCNetwork(d_model=d_model, n_heads=n_heads, n_layers=n_layers)


class ProteinModel(NetworkModel):
    """MaskedModel over ESM token ids: logits over the 20 standard amino acids."""
    vocab_size = 20

    def __init__(self, network, checkpoint_id, hidden_layer=-1, meta=None):
        super().__init__(network, checkpoint_id, meta)
        self.hidden_layer = hidden_layer
        self.value_tokens = AA_IDS

    chunk_rows = 16   # rows per forward call on a CPU (side by side on 2 or more threads): the fastest
    #                   (250 rows on 1 thread: 1.88 s at 16 rows a call against 2.68 s in one call),
    #                   and bit-identical (bench.chunks)

    def __call__(self, tokens, masked):
        self.grow_rotary_tables(tokens.shape[1], tokens.device)
        return super().__call__(tokens, masked)

    def grow_rotary_tables(self, length, device):
        """Each attention layer's rotary embedding keeps a cos/sin table that its forward grows
        when it first meets a longer input. It is grown here first, in the caller's thread, with
        the arguments the forward would pass, so that chunks run side by side (bench.chunks) never
        race to grow it (one thread could read the old, shorter table as another grows it)."""
        dtype = self.network.embed.weight.dtype      # the dtype of the queries it rotates
        for module in self.rotaries:
            module._update_cos_sin_cache(length, device=device, dtype=dtype)

    @functools.cached_property
    def rotaries(self):
        """The network's rotary embeddings, found once (not by walking every module each pass)."""
        from esm.layers.rotary import RotaryEmbedding
        return [module for module in self.network.modules() if isinstance(module, RotaryEmbedding)]

    def forward(self, tokens, masked):
        logits, hiddens = self.network(tokens.masked_fill(masked, MASK_ID))
        return ModelOutput(logits=logits[..., self.value_tokens].float(), hidden=hiddens[self.hidden_layer].float())



def save_protein_checkpoint(path, network, config, meta):
    save_atomic(path, {"config": config, "state_dict": network.state_dict(), "meta": meta})


def published_weights(name):
    """Local path of a published ESM-C state dict, without any network call, or a one-line error."""
    _, _, _, repo, filename = PUBLISHED[name]
    folder = os.environ.get("UNMASK_BENCH_ESMC_DIR")
    if folder and (Path(folder) / Path(filename).name).is_file():
        return Path(folder) / Path(filename).name
    from huggingface_hub import try_to_load_from_cache
    cached = try_to_load_from_cache(repo, filename, cache_dir=os.environ.get("HF_HUB_CACHE"))
    if isinstance(cached, str):
        return Path(cached)
    raise BenchError(f"{name} weights are not available offline: put {Path(filename).name} in "
                     f"$UNMASK_BENCH_ESMC_DIR, or download {repo} into the Hugging Face cache "
                     f"(huggingface-cli download {repo}) on a machine with network access")


def load_published(name):
    d_model, n_heads, n_layers, _, _ = PUBLISHED[name]
    path = checked_path(published_weights(name), f"{name} weights", CHECKPOINT_LIMIT)
    network = build_esmc(d_model, n_heads, n_layers)
    try:
        network.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    except Exception as err:  # a corrupt or foreign file: one line, never a traceback
        raise BenchError(f"{name} weights at {path} could not be loaded ({type(err).__name__})") from None
    return ProteinModel(network, file_id(path))


def load_protein_model(model=None):
    """The shipped model (None), a published name (esmc_300m, esmc_600m) or a checkpoint path."""
    if model in PUBLISHED:
        return load_published(model)
    path = Path(model) if model else DEFAULT_WEIGHTS
    payload = load_payload(path, "protein model", TRAIN_COMMAND)
    try:
        network = build_esmc(**payload["config"])
        network.load_state_dict(payload["state_dict"])
    except (TypeError, KeyError, RuntimeError) as err:
        raise BenchError(f"protein checkpoint {path} does not match ESMC "
                         f"({str(err).splitlines()[0][:120]}); known names: {', '.join(PUBLISHED)}") from None
    return ProteinModel(network, file_id(path), meta=payload.get("meta"))
