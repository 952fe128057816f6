"""Where models run: ``--device auto|cpu|cuda|cuda:N`` and ``--dtype float32|bfloat16``.

A ``Placement`` is the resolved pair. ``place(model, placement)`` returns the model unchanged
for ``cpu``/``float32`` (the default: nothing differs from a run without the options), else a
``Placed`` model: the wrapped model is moved with its ``to(device)`` hook, each call moves the
tokens there, runs under ``torch.autocast`` for ``bfloat16``, and hands the outputs back as
float32 on the device the tokens came from. The decode loop, the strategies' rules and every
random draw thus stay where they were (the CPU), so a GPU changes the model's numbers only.
Trained helpers (a dependency estimator, an order policy) go to the model's device with
``helper_device`` and ``run_helper``; they stay float32.

A run's config records ``device`` (its kind: ``cuda`` for any ``cuda:N``) and ``dtype`` when they
are not ``cpu``/``float32``, so results made before these options existed keep their identity.
`bench train` reads the placement the command line chose with ``selected()``.
"""
import contextlib
import re
from dataclasses import dataclass

import torch

from bench.core import MaskedModel, ModelOutput
from bench.errors import BenchError

DEVICES = "auto, cpu, cuda or cuda:N"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
DEFAULT_DEVICE, DEFAULT_DTYPE = "cpu", "float32"


def on_cpu(tensor, device):
    """``tensor`` as float32 on ``device`` (None stays None)."""
    return None if tensor is None else tensor.float().to(device)


@dataclass(frozen=True)
class Placement:
    """A resolved device (``cpu``, ``cuda``, ``cuda:1``) and dtype (``float32``, ``bfloat16``)."""
    device: str = DEFAULT_DEVICE
    dtype: str = DEFAULT_DTYPE

    @property
    def kind(self):
        """``cpu`` or ``cuda``: what joins a run's identity (``cuda:0`` and ``cuda:3`` give the same numbers)."""
        return self.device.split(":")[0]

    @property
    def is_default(self):
        return (self.kind, self.dtype) == (DEFAULT_DEVICE, DEFAULT_DTYPE)

    def config(self):
        """What a run's config records: nothing for cpu/float32, else device kind and dtype."""
        return {} if self.is_default else {"device": self.kind, "dtype": self.dtype}

    def describe(self):
        """Device, dtype and the hardware's name, for a result's summary."""
        name = torch.cuda.get_device_name(torch.device(self.device)) if self.kind == "cuda" else "cpu"
        return {"device": self.device, "dtype": self.dtype, "name": name}

    def autocast(self):
        """``torch.autocast`` to bfloat16 on this device, or nothing for float32."""
        if self.dtype == DEFAULT_DTYPE:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.kind, dtype=DTYPES[self.dtype])

    def words(self):
        """The command-line options that give this placement (none for the default)."""
        return [] if self.is_default else ["--device", self.device, "--dtype", self.dtype]


def check_device_text(text):
    """``text`` lower-cased if it names a device (auto, cpu, cuda, cuda:N), else a one-line error."""
    text = (text or "").strip().lower()
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", text):
        raise BenchError(f"--device must be {DEVICES}, got {text!r}")
    return text


def resolve_device(text, gpus=None):
    """The device ``text`` names, checked against the CUDA devices there are (``gpus``: their
    count, by default this process's ``torch.cuda.device_count()``); one-line errors."""
    text = check_device_text(text)
    gpus = (torch.cuda.device_count() if torch.cuda.is_available() else 0) if gpus is None else gpus
    if text == "auto":
        return "cuda" if gpus else "cpu"
    if text.startswith("cuda"):
        if not gpus:
            raise BenchError(f"--device {text}: CUDA is not available here (torch {torch.__version__}, "
                             f"{'a CPU-only build' if torch.version.cuda is None else 'no GPU found'}); "
                             f"use --device cpu or auto")
        index = int(text.partition(":")[2] or 0)
        if index >= gpus:
            raise BenchError(f"--device {text}: there {'is' if gpus == 1 else 'are'} {gpus} CUDA "
                             f"device{'s' if gpus != 1 else ''} (cuda:0 to cuda:{gpus - 1})")
    return text


def resolve_dtype(text):
    text = (text or "").strip().lower()
    if text not in DTYPES:
        raise BenchError(f"--dtype must be {' or '.join(DTYPES)}, got {text!r}")
    return text


def placement(device=None, dtype=None, gpus=None):
    """The Placement the options ``--device`` and ``--dtype`` name (defaults: cpu, float32)."""
    dtype = resolve_dtype(dtype or DEFAULT_DTYPE)
    return Placement(resolve_device(device or DEFAULT_DEVICE, gpus), dtype)


class Placed:
    """A MaskedModel run on a device (and in a dtype): inputs go there, outputs come back as
    float32 on the tokens' device. Every other attribute (vocab_size, checkpoint_id, n_params,
    hidden_layer, ...) is the wrapped model's. A placed model stays where it was placed: ``to``
    returns it unchanged."""

    def __init__(self, model, where):
        self.value_tokens = torch.as_tensor(model.value_tokens).clone()  # read before the move: the loop's copy
        move = getattr(model, "to", None)   # optional: a CPU-only model may have none
        if move is None and where.kind != "cpu":
            raise BenchError(f"model {model.checkpoint_id} has no to(device) hook; it cannot run on {where.device}")
        self.model = (move(torch.device(where.device)) if move else None) or model
        self.placement = where

    def __getattr__(self, name):
        if name in ("model", "placement"):
            raise AttributeError(name)
        try:
            return getattr(self.model, name)
        except AttributeError:
            return getattr(MaskedModel, name)   # an optional attribute's default (n_params, hidden_layer)

    def __call__(self, tokens, masked):
        device = torch.device(self.placement.device)
        with torch.inference_mode(), self.placement.autocast():
            out = self.model(tokens.to(device), masked.to(device))
        return ModelOutput(logits=on_cpu(out.logits, tokens.device), hidden=on_cpu(out.hidden, tokens.device))

    def to(self, device):
        return self


def place(model, where):
    """``model`` on ``where``: itself for cpu/float32, else a ``Placed`` model."""
    return model if where is None or where.is_default else Placed(model, where)


def model_placement(model):
    """Where ``model`` runs: a placed model's Placement, else cpu/float32."""
    where = getattr(model, "placement", None)
    return where if isinstance(where, Placement) else Placement()


def helper_device(model):
    """The device a strategy's trained helper runs on: the model's."""
    return torch.device(model_placement(model).device)


def run_helper(network, *inputs):
    """``network(*inputs)`` on the network's device (float32, no gradient); the result comes back
    to the device of the first input."""
    device = next(network.parameters()).device
    with torch.inference_mode():
        result = network(*(x.to(device) for x in inputs))
    return result.to(inputs[0].device)


SELECTED = [Placement()]   # what `bench train` chose on its command line


def select(where):
    """Set the placement ``selected()`` returns (the train command does, from its options)."""
    SELECTED[0] = where


def selected():
    """The placement `bench train` was given (cpu/float32 unless --device/--dtype say otherwise)."""
    return SELECTED[0]
