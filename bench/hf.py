"""Any Hugging Face masked language model on a local folder as a MaskedModel: ``--model hf:PATH``.

The folder holds what ``transformers``' ``AutoModelForMaskedLM`` and ``AutoTokenizer`` load
(``config.json``, the weights, the tokenizer's files; a vocabulary file elsewhere can be named
with ``vocab``), so a BERT or ESM-2 checkpoint on a user's disk runs like the shipped
models. Nothing is downloaded: every load is ``local_files_only``.

A task reads and writes its own token ids; the model reads its tokenizer's. The task says what
each of its ids means (``Task.symbols()``: value letters such as ``"A"`` and the roles
``<cls>``, ``<eos>``, ``<pad>``, ``<mask>``), and the model translates: a masked position is the
tokenizer's mask token, padding is its pad token and is not attended to, and the logits are
those of the task's values, in the task's value order. ``hidden`` is the output of layer
``layer`` (the last by default), for the strategies that read hidden states.
"""
import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import torch

from bench.core import MaskedModel, ModelOutput
from bench.errors import BenchError
from bench.files import CHECKPOINT_LIMIT, MiB, checked_path, read_text

ROLES = ("<cls>", "<eos>", "<pad>", "<mask>")
# Rows per network call: exact MI by probing asks for thousands of rows at once, and every layer's
# hidden states of a 26M-parameter BERT over 4,096 rows would take tens of GB.
MAX_ROWS = 256
CONFIG_LIMIT = 1 * MiB   # a model folder's config.json (BERT's and ESM-2's are under 2 KB)


def first_line(err):
    """'TypeError: the first line of its message' (at most 160 characters)."""
    return f"{type(err).__name__}: {(str(err).splitlines() or [''])[0]}"[:160]


def check_config(path, what):
    """A one-line error unless ``path``/config.json is a JSON object (what transformers reads)."""
    config = Path(path) / "config.json"
    try:
        data = json.loads(read_text(config, f"{what}: config", CONFIG_LIMIT))
    except json.JSONDecodeError as err:
        raise BenchError(f"{what}: {config} is not JSON ({err.msg} at line {err.lineno})") from None
    except RecursionError:
        raise BenchError(f"{what}: {config} is JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise BenchError(f"{what}: {config} holds a JSON {type(data).__name__}; it must be a JSON object "
                         f"(a transformers model config)")


def check_weights(path, what):
    """A one-line error naming the first ``*.safetensors`` file of the folder whose header does not
    read (cut short, not safetensors): transformers would fail deep inside with a traceback."""
    from safetensors import safe_open
    for file in sorted(Path(path).glob("*.safetensors")):
        checked_path(file, f"{what}: weights", CHECKPOINT_LIMIT)
        try:
            with safe_open(str(file), framework="pt") as weights:
                weights.keys()
        except Exception as err:  # SafetensorError (header too large, invalid JSON, ...), OSError
            raise BenchError(f"{what}: {file} is not a readable safetensors file ({first_line(err)})") from None


def tokenizer_role_tokens(tokenizer):
    """{role: the tokenizer's token for it}: BERT's [CLS]/[SEP], ESM's <cls>/<eos>."""
    return {"<cls>": tokenizer.cls_token or tokenizer.bos_token, "<eos>": tokenizer.sep_token or tokenizer.eos_token,
            "<pad>": tokenizer.pad_token, "<mask>": tokenizer.mask_token}


def id_table(symbols, tokenizer, what):
    """(long [max task id + 1]: the model's id for each task id, the task's value ids in order, the
    model's ids of those values); one-line errors for a symbol the vocabulary lacks."""
    roles = tokenizer_role_tokens(tokenizer)
    vocab = tokenizer.get_vocab()
    table = torch.full((max(symbols) + 1,), -1, dtype=torch.long)
    for task_id, symbol in symbols.items():
        token = roles.get(symbol, symbol)
        if token is None or token not in vocab:
            raise BenchError(f"{what}: the model's vocabulary has no token for {symbol!r} (task id {task_id}); "
                             f"it must hold every value letter and {', '.join(ROLES)}")
        table[task_id] = vocab[token]
    values = [task_id for task_id, symbol in sorted(symbols.items()) if symbol not in ROLES]
    return table, torch.tensor(values), table[torch.tensor(values)]


def folder_id(path, vocab=None):
    """sha256 (first 16 hex) of the folder's files' names and bytes and of a vocabulary file kept
    elsewhere: identifies the weights and how ids are read."""
    digest, vocab = hashlib.sha256(), Path(vocab) if vocab else None
    for file in sorted(p for p in Path(path).rglob("*") if p.is_file()) + ([vocab] if vocab else []):
        digest.update(file.name.encode() if file == vocab else file.relative_to(path).as_posix().encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def load_tokenizer(path, vocab, what):
    check_torchvision()
    from transformers import AutoTokenizer, BertTokenizer
    try:
        if vocab is not None:
            return BertTokenizer(vocab_file=str(vocab), do_lower_case=False)
        return AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except Exception as err:  # a damaged tokenizer file fails anywhere inside transformers
        raise BenchError(f"{what}: no tokenizer could be loaded ({first_line(err)}); "
                         f"the folder must hold the tokenizer's files") from None


class HFMaskedLM(MaskedModel):
    """A ``transformers`` masked LM read through a task's symbols (module docstring)."""

    def __init__(self, network, tokenizer, symbols, checkpoint_id, layer=-1, what="the model"):
        self.network, self.layer, self.hidden_layer = network.eval(), layer, layer
        self.id_table, self.value_tokens, self.model_values = id_table(symbols, tokenizer, what)
        self.vocab_size = len(self.value_tokens)
        self.mask_id = tokenizer.mask_token_id
        self.pad_id = int(self.id_table[next(i for i, s in symbols.items() if s == "<pad>")]) \
            if "<pad>" in symbols.values() else None
        self.checkpoint_id = checkpoint_id

    @torch.inference_mode()
    def __call__(self, tokens, masked):
        if int(tokens.max()) >= len(self.id_table) or bool((self.id_table[tokens] < 0).any()):
            raise BenchError("the inputs hold a token id the task's symbols do not name")
        ids = self.id_table[tokens].masked_fill(masked, self.mask_id)
        attention = (ids != self.pad_id).long() if self.pad_id is not None else torch.ones_like(ids)
        parts = [self.forward_rows(ids[s:s + MAX_ROWS], attention[s:s + MAX_ROWS])
                 for s in range(0, len(ids), MAX_ROWS)]
        return ModelOutput(logits=torch.cat([p[0] for p in parts]), hidden=torch.cat([p[1] for p in parts]))

    def forward_rows(self, ids, attention):
        """(value logits, hidden states of ``layer``) of at most MAX_ROWS rows."""
        out = self.network(input_ids=ids, attention_mask=attention, output_hidden_states=True)
        return out.logits[..., self.model_values].float(), out.hidden_states[self.layer].float()

    def to(self, device):
        self.network.to(device)
        self.id_table, self.value_tokens = self.id_table.to(device), self.value_tokens.to(device)
        self.model_values = self.model_values.to(device)
        return self

    @property
    def n_params(self):
        return sum(p.numel() for p in self.network.parameters())


def check_torchvision():
    """Keep a torchvision that cannot be imported out of transformers' way. `esm` asks for torchvision,
    and PyPI's build of it may not import beside this torch ("operator torchvision::nms does not
    exist"); transformers would then import it inside its model modules and fail. Nothing here uses
    torchvision, so transformers is told it is absent (``_torchvision_available``, read by
    ``is_torchvision_available``) and the suite works whether or not it is installed: a re-install
    that brings it back breaks nothing. Call before importing a transformers model."""
    if importlib.util.find_spec("torchvision") is None:
        return
    try:
        import torchvision  # noqa: F401
    except Exception:  # RuntimeError: operator torchvision::nms does not exist, OSError: CUDA libraries
        sys.modules.pop("torchvision", None)   # a half-imported module would be found again
        import transformers.utils.import_utils as import_utils
        import_utils._torchvision_available = False


def load_hf_model(path, symbols, *, vocab=None, layer=-1):
    """The masked LM in folder ``path`` (``vocab``: a BERT vocabulary file kept elsewhere) read
    through ``symbols`` ({task id: symbol}); one-line errors for a missing folder, weights that
    do not load, or a vocabulary without the task's symbols."""
    what = f"--model hf:{path}"
    if not Path(path).is_dir() or not (Path(path) / "config.json").is_file():
        raise BenchError(f"{what}: no folder with a config.json there; give a local Hugging Face model folder")
    if not symbols:
        raise BenchError(f"{what}: this task names no symbols for its token ids (Task.symbols), so a "
                         f"Hugging Face model cannot read its inputs")
    check_config(path, what)
    check_weights(path, what)
    check_torchvision()
    from transformers import AutoModelForMaskedLM
    from transformers.utils import logging
    logging.set_verbosity_error()   # unused heads of a checkpoint (AntiBERTy's species head) are expected
    try:
        network = AutoModelForMaskedLM.from_pretrained(str(path), local_files_only=True)
    except Exception as err:  # a config or weights file that does not fit can fail anywhere inside
        if isinstance(err, BenchError):
            raise
        raise BenchError(f"{what}: the weights do not load as a masked LM ({first_line(err)})") from None
    tokenizer = load_tokenizer(path, vocab, what)
    return HFMaskedLM(network, tokenizer, symbols, f"hf-{folder_id(path, vocab)}", layer=layer, what=what)
