"""Sapiens (Prihoda et al. 2022, BioPhi; MIT licence): the antibody task's second model,
``--model sapiens``, one fairseq RoBERTa per chain (heavy: ``checkpoint_vh.pt``, light: kappa and
lambda, ``checkpoint_vl.pt``), trained on human OAS chains.

Weights: ``sapiens/models/v1/`` of the PyPI wheel sapiens 1.0.5 (later versions fetch them from a
hub), fetched by ``python -m bench data sapiens`` into the cache (or ``$UNMASK_BENCH_SAPIENS``).
The wheel needs fairseq and torch<2.5, so neither it nor fairseq is installed or imported: its
checkpoints are read as legacy pickles with ``weights_only=True`` (their one non-torch global is
``argparse.Namespace``), their tensors renamed onto transformers' ``RobertaForMaskedLM`` (the
standard fairseq RoBERTa key map; Sapiens 1.1 serves the same models that way) and saved as a
Hugging Face folder beside them, which ``bench/hf.py`` loads as it loads AntiBERTy.

fairseq's RoBERTa of these checkpoints (``TransformerSentenceEncoder``) is BERT's layout:
token plus learned position embeddings (positions count from the padding index + 1), a
LayerNorm on their sum, post-LN layers (attention, add, LayerNorm; GELU feed-forward, add,
LayerNorm), and an LM head (dense, GELU, LayerNorm, then the token embedding matrix, tied, plus
a bias). A row is ``<s>`` residues ``</s>``, as Sapiens' own ``seq2tokens`` writes it.
"""
import argparse
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import torch

from bench.checkpoints import cache_dir
from bench.core import MaskedModel, ModelOutput
from bench.errors import BenchError

WHEEL = "sapiens==1.0.5"
CHECKPOINTS = {"heavy": "checkpoint_vh.pt", "light": "checkpoint_vl.pt"}
MEMBERS = [f"sapiens/models/v1/{name}" for name in (*CHECKPOINTS.values(), "dict.txt")]
# fairseq's Dictionary puts these four first and MaskedLMTask appends <mask> after dict.txt's symbols
FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
FETCH = "python -m bench data sapiens"
PREFIX = "decoder.sentence_encoder."   # fairseq 0.9/0.10 RoBERTa's encoder keys
CHECKPOINT_LIMIT = 64 << 20            # each checkpoint is 4.6 MB, most of it optimizer state


def sapiens_dir():
    """Where the three files of the wheel's ``models/v1`` are kept (and the converted folders)."""
    override = os.environ.get("UNMASK_BENCH_SAPIENS")
    return Path(override) if override else cache_dir() / "antibody" / "sapiens-1.0.5"


def fetch_checkpoints():
    """Download the sapiens wheel (no dependencies) and keep its two checkpoints and dict.txt;
    returns their folder. Each file is written beside its place and renamed, so a fetch cut short
    leaves nothing that passes for the weights."""
    from bench.results import write_atomic
    folder = sapiens_dir()
    if all((folder / Path(member).name).is_file() for member in MEMBERS):
        return folder
    with tempfile.TemporaryDirectory() as tmp:
        print(f"fetching Sapiens' weights: pip download --no-deps {WHEEL} (a 7 MB wheel)", file=sys.stderr, flush=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", tmp, WHEEL]
        code = subprocess.run(command, stdout=2).returncode
        if code != 0:
            raise BenchError(f"pip download {WHEEL} failed (exit {code}, pip's message above); or place its "
                             f"models/v1 files {', '.join(Path(m).name for m in MEMBERS)} in $UNMASK_BENCH_SAPIENS")
        with zipfile.ZipFile(next(Path(tmp).glob("*.whl"))) as wheel:
            for member in MEMBERS:
                data = wheel.read(member)
                write_atomic(folder / Path(member).name, lambda handle, data=data: handle.write(data))
    return folder


def read_dictionary(path):
    """The model's tokens in id order: fairseq's four specials, dict.txt's symbols, ``<mask>``."""
    symbols = [line.split()[0] for line in Path(path).read_text().splitlines() if line.strip()]
    return [*FAIRSEQ_SPECIALS, *symbols, "<mask>"]


def read_checkpoint(path):
    """(training args, model state dict) of a fairseq checkpoint, read with ``weights_only=True``
    (``argparse.Namespace`` allowed: the pickle's one non-torch global); one-line errors."""
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"no Sapiens checkpoint at {path}; fetch it with: {FETCH}")
    if path.stat().st_size > CHECKPOINT_LIMIT:
        raise BenchError(f"{path} is {path.stat().st_size >> 20} MB, larger than a Sapiens checkpoint "
                         f"({CHECKPOINT_LIMIT >> 20} MB at most); fetch it again with: {FETCH}")
    torch.serialization.add_safe_globals([argparse.Namespace])
    try:
        payload = torch.load(io.BytesIO(path.read_bytes()), map_location="cpu", weights_only=True)
        return payload["args"], payload["model"]
    except Exception as err:  # an unpickling error, a truncated zip, a dict without the keys
        why = str(err).splitlines()[0][:100] if str(err) else ""
        raise BenchError(f"{path} is not a fairseq checkpoint ({type(err).__name__}: {why}); "
                         f"fetch it again with: {FETCH}") from None


def layer_keys(i):
    """{fairseq key: transformers key} of encoder layer ``i`` (weights and biases)."""
    src, dst = f"{PREFIX}layers.{i}.", f"roberta.encoder.layer.{i}."
    names = {"self_attn.q_proj": "attention.self.query", "self_attn.k_proj": "attention.self.key",
             "self_attn.v_proj": "attention.self.value", "self_attn.out_proj": "attention.output.dense",
             "self_attn_layer_norm": "attention.output.LayerNorm", "fc1": "intermediate.dense",
             "fc2": "output.dense", "final_layer_norm": "output.LayerNorm"}
    return {f"{src}{a}.{p}": f"{dst}{b}.{p}" for a, b in names.items() for p in ("weight", "bias")}


def key_map(n_layers):
    """{fairseq key: transformers ``RobertaForMaskedLM`` key} of a RoBERTa with ``n_layers`` layers."""
    keys = {f"{PREFIX}embed_tokens.weight": "roberta.embeddings.word_embeddings.weight",
            f"{PREFIX}embed_positions.weight": "roberta.embeddings.position_embeddings.weight",
            f"{PREFIX}emb_layer_norm.weight": "roberta.embeddings.LayerNorm.weight",
            f"{PREFIX}emb_layer_norm.bias": "roberta.embeddings.LayerNorm.bias",
            "decoder.lm_head.dense.weight": "lm_head.dense.weight", "decoder.lm_head.dense.bias": "lm_head.dense.bias",
            "decoder.lm_head.layer_norm.weight": "lm_head.layer_norm.weight",
            "decoder.lm_head.layer_norm.bias": "lm_head.layer_norm.bias", "decoder.lm_head.bias": "lm_head.bias"}
    for i in range(n_layers):
        keys.update(layer_keys(i))
    return keys


def n_layers_of(state):
    layers = {int(k[len(PREFIX) + len("layers."):].split(".")[0]) for k in state if k.startswith(f"{PREFIX}layers.")}
    return max(layers) + 1 if layers else 0


def hf_state_dict(state, what="the Sapiens checkpoint"):
    """The fairseq RoBERTa ``state`` renamed for ``RobertaForMaskedLM``: the LM head's output
    matrix must be the token embeddings (fairseq ties them; so does transformers), the token
    type embedding (fairseq has none) is zero. One-line errors for a missing or unknown key."""
    keys = key_map(n_layers_of(state))
    missing = sorted(set(keys) - set(state))
    extra = sorted(set(state) - set(keys) - {"decoder.lm_head.weight", f"{PREFIX}version"})
    if missing or extra:
        raise BenchError(f"{what} is not a fairseq RoBERTa masked LM: "
                         + (f"it lacks {missing[0]}" if missing else f"it holds an unknown tensor {extra[0]}")
                         + f" ({len(missing)} missing, {len(extra)} unknown)")
    embeddings = state[f"{PREFIX}embed_tokens.weight"]
    head = state.get("decoder.lm_head.weight", embeddings)
    if not torch.equal(head, embeddings):
        raise BenchError(f"{what}: its LM head's output matrix is not its token embeddings (untied weights), "
                         f"which transformers' RobertaForMaskedLM ties")
    converted = {new: state[old].float() for old, new in keys.items()}
    converted["roberta.embeddings.token_type_embeddings.weight"] = torch.zeros(1, embeddings.shape[1])
    converted["lm_head.decoder.weight"] = embeddings.float()
    converted["lm_head.decoder.bias"] = state["decoder.lm_head.bias"].float()
    return converted


def roberta_config(args, state, tokens):
    """transformers' RobertaConfig of the checkpoint: sizes from its tensors and training args
    (padding index 1, positions as many as its position table)."""
    from transformers import RobertaConfig
    layers = n_layers_of(state)
    return RobertaConfig(
        vocab_size=len(tokens), hidden_size=state[f"{PREFIX}embed_tokens.weight"].shape[1],
        num_hidden_layers=layers, num_attention_heads=args.encoder_attention_heads,
        intermediate_size=state[f"{PREFIX}layers.0.fc1.weight"].shape[0], hidden_act=args.activation_fn,
        max_position_embeddings=state[f"{PREFIX}embed_positions.weight"].shape[0], type_vocab_size=1,
        layer_norm_eps=1e-5, pad_token_id=tokens.index("<pad>"), bos_token_id=tokens.index("<s>"),
        eos_token_id=tokens.index("</s>"), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def write_tokenizer(tokens, folder):
    """A BERT word-piece tokenizer whose vocabulary is the model's tokens in id order and whose
    special tokens are fairseq's (bench/hf.py reads only its vocabulary and special tokens)."""
    from transformers import BertTokenizer
    vocab = Path(folder) / "vocab.txt"
    vocab.write_text("\n".join(tokens) + "\n")
    BertTokenizer(vocab_file=str(vocab), do_lower_case=False, cls_token="<s>", sep_token="</s>", pad_token="<pad>",
                  unk_token="<unk>", mask_token="<mask>").save_pretrained(str(folder))


def convert(checkpoint, dictionary, folder):
    """Write the fairseq ``checkpoint`` (with its ``dictionary``) as a Hugging Face
    ``RobertaForMaskedLM`` folder; built in a temporary folder and renamed into place."""
    from bench.hf import check_torchvision
    check_torchvision()
    from transformers import RobertaForMaskedLM
    args, state = read_checkpoint(checkpoint)
    tokens = read_dictionary(dictionary)
    if state[f"{PREFIX}embed_tokens.weight"].shape[0] != len(tokens):
        raise BenchError(f"{checkpoint} has {state[f'{PREFIX}embed_tokens.weight'].shape[0]} token embeddings "
                         f"but {dictionary} names {len(tokens)} tokens")
    from safetensors.torch import save_file
    config, converted = roberta_config(args, state, tokens), hf_state_dict(state, str(checkpoint))
    RobertaForMaskedLM(config).load_state_dict(converted, strict=True)   # every tensor has its place
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}-"))
    try:
        config.save_pretrained(str(building))
        # every key written, each its own tensor: save_pretrained drops one of the tied biases
        # (lm_head.decoder.bias) and transformers 4.48 then ties lm_head.bias to a fresh zero one
        save_file({k: v.clone().contiguous() for k, v in converted.items()}, str(building / "model.safetensors"),
                  metadata={"format": "pt"})
        write_tokenizer(tokens, building)
        check_round_trip(building, converted, checkpoint)
        building.rename(folder)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return folder


def check_round_trip(folder, converted, checkpoint):
    """The folder loads back as exactly the converted tensors (a one-line error otherwise)."""
    from transformers import AutoModelForMaskedLM
    loaded = AutoModelForMaskedLM.from_pretrained(str(folder), local_files_only=True).state_dict()
    wrong = [k for k, v in converted.items() if k not in loaded or not torch.equal(loaded[k], v)]
    if wrong:
        raise BenchError(f"{checkpoint}: its converted folder does not load back as written ({wrong[0]} differs); "
                         f"this transformers version reads RobertaForMaskedLM folders otherwise")


def converted_folder(chain, source=None):
    """The Hugging Face folder of ``chain``'s model (heavy or light), converted on first use from
    the fetched checkpoint; its name holds the checkpoint's hash, so new weights convert again."""
    source = Path(source or sapiens_dir())
    checkpoint, dictionary = source / CHECKPOINTS[chain], source / "dict.txt"
    for path in (checkpoint, dictionary):
        if not path.is_file():
            raise BenchError(f"no Sapiens {path.name} in {source}; fetch the weights with: {FETCH}")
    digest = hashlib.sha256(checkpoint.read_bytes() + dictionary.read_bytes()).hexdigest()[:12]
    folder = source / f"hf-{chain}-{digest}"
    return folder if (folder / "config.json").is_file() else convert(checkpoint, dictionary, folder)


class ChainModels(MaskedModel):
    """One masked LM per chain type as one model: each row goes to the network of its chain,
    told by its first token (``starts``: {token id: model}); logits and hidden states come back
    in the rows' order."""

    def __init__(self, starts, checkpoint_id):
        self.starts, self.checkpoint_id = starts, checkpoint_id
        first = next(iter(starts.values()))
        self.vocab_size, self.value_tokens = first.vocab_size, first.value_tokens
        self.hidden_layer = first.hidden_layer

    def __call__(self, tokens, masked):
        unknown = ~torch.isin(tokens[:, 0], torch.tensor(list(self.starts), device=tokens.device))
        if bool(unknown.any()):
            raise BenchError(f"a row starts with token {int(tokens[unknown.nonzero()[0, 0], 0])}, which names "
                             f"no chain's model (starts: {sorted(self.starts)})")
        logits = hidden = None
        for start, model in self.starts.items():
            rows = (tokens[:, 0] == start).nonzero().flatten()
            if len(rows):
                out = model(tokens[rows], masked[rows])
                if logits is None:
                    logits = out.logits.new_empty((len(tokens), *out.logits.shape[1:]))
                    hidden = out.hidden.new_empty((len(tokens), *out.hidden.shape[1:]))
                logits[rows], hidden[rows] = out.logits, out.hidden
        return ModelOutput(logits=logits, hidden=hidden)

    def to(self, device):
        for model in self.starts.values():
            model.to(device)
        self.value_tokens = next(iter(self.starts.values())).value_tokens
        return self

    @property
    def n_params(self):
        """Both networks' parameters as fairseq counts them: without the zero token-type row that
        transformers' RoBERTa adds (fairseq's has no token types)."""
        return sum(model.n_params - model.network.roberta.embeddings.token_type_embeddings.weight.numel()
                   for model in self.starts.values())


def load_sapiens(symbols, heavy_start, light_start, source=None):
    """Sapiens as one model of the antibody task: rows starting with ``heavy_start`` go to the heavy
    chain's network, ``light_start`` to the light chain's (``symbols``: the task's ids, both starts
    named ``<cls>``)."""
    from bench.hf import load_hf_model
    chains = ((heavy_start, "heavy"), (light_start, "light"))
    folders = {start: converted_folder(chain, source) for start, chain in chains}
    models = {start: load_hf_model(folder, symbols) for start, folder in folders.items()}
    # named by the fetched checkpoints' hashes (in the folders' names), not by the converted files,
    # whose config.json names the transformers version that wrote it
    digest = hashlib.sha256("/".join(folder.name for folder in folders.values()).encode()).hexdigest()[:16]
    return ChainModels(models, f"sapiens-{digest}")
