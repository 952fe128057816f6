"""Bring your own model: ``--model package.module:factory``, and the checks every model passes.

A ``--model`` value that holds ``:`` and names no existing file is an import spec: the module is
imported (from ``sys.path``: the current folder under ``python -m bench``, or ``PYTHONPATH``)
and the callable called, with the task when it takes an argument, else with none. It must
return a MaskedModel (``bench/core.py``): ``vocab_size``, ``value_tokens``, ``checkpoint_id``
and ``__call__(tokens, masked) -> ModelOutput``. Before any decoding, the model is run once on
one input of the task (a copy: it must leave it unchanged): its ``value_tokens`` must be distinct
and not the inputs' blank id, its logits ``[1, N, vocab_size]`` and finite, and where a
strategy needs hidden states (``Strategy.needs``) ``ModelOutput.hidden`` must be a
``[1, N, D]`` tensor. Every failure is one line naming the missing piece. The decode loop
checks the model again at every pass (``bench.decode.forward``).
"""
import importlib
import inspect
import re
from pathlib import Path

import torch

from bench.core import all_finite
from bench.decode import check_inputs_kept
from bench.errors import BenchError

SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
REQUIRED = ("vocab_size", "value_tokens", "checkpoint_id")
HF_PREFIX = "hf:"   # --model hf:PATH: a Hugging Face masked LM in a local folder


def is_import_spec(text):
    """Whether a ``--model`` value is ``module:callable`` (holds ':', is no existing file and no
    ``hf:PATH``)."""
    return bool(text) and ":" in text and not Path(text).exists() and not text.startswith(HF_PREFIX)


def import_factory(spec):
    """The callable ``package.module:name`` names; one-line errors."""
    if not SPEC.fullmatch(spec):
        raise BenchError(f"--model {spec}: no such file, and not an import spec package.module:factory")
    module_name, _, attr = spec.partition(":")
    try:
        found = importlib.import_module(module_name)
    except Exception as err:  # ImportError, or anything the module raises while importing
        raise BenchError(f"--model {spec}: cannot import {module_name} ({type(err).__name__}: "
                         f"{str(err).splitlines()[0] if str(err) else ''}; is its folder on PYTHONPATH?)") from None
    for part in attr.split("."):
        if not hasattr(found, part):
            raise BenchError(f"--model {spec}: {module_name} has no attribute {attr!r}")
        found = getattr(found, part)
    if not callable(found):
        raise BenchError(f"--model {spec}: {attr} is not callable")
    return found


def takes_an_argument(factory):
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params)


def check_contract(model, what):
    """The attributes every MaskedModel has; one-line errors naming the missing piece."""
    missing = [name for name in REQUIRED if not hasattr(model, name)]
    if missing or not callable(model):
        piece = ", ".join(missing) if missing else "__call__(tokens, masked)"
        raise BenchError(f"{what} is no MaskedModel: it lacks {piece} (see docs/extending.md, bring your own model)")
    values = torch.as_tensor(model.value_tokens)
    if values.dim() != 1 or values.dtype not in (torch.int64, torch.int32) or len(values) != model.vocab_size:
        raise BenchError(f"{what}: value_tokens must be a 1-d integer tensor of vocab_size ({model.vocab_size}) "
                         f"token ids, got {tuple(values.shape)} {values.dtype}")
    if not isinstance(model.checkpoint_id, str) or not model.checkpoint_id:
        raise BenchError(f"{what}: checkpoint_id must be a non-empty string (it names the weights in results)")
    return model


def load_factory_model(spec, task):
    """The MaskedModel ``spec``'s factory returns for ``task``."""
    factory = import_factory(spec)
    try:
        model = factory(task) if takes_an_argument(factory) else factory()
    except BenchError:
        raise
    except Exception as err:
        raise BenchError(f"--model {spec}: the factory raised {type(err).__name__}: "
                         f"{str(err).splitlines()[0] if str(err) else ''}") from None
    return check_contract(model, f"--model {spec} (returned {type(model).__name__})")


def load_model(task, model_arg=None):
    """The task's model: its own loader (its shipped weights, a checkpoint path, a name it knows),
    for ``hf:PATH`` the Hugging Face masked LM in that folder (bench/hf.py), or for an import spec
    the factory's; the spec is kept on the task (``model_spec``) for the run's config."""
    if model_arg and model_arg.startswith(HF_PREFIX):
        from bench.hf import load_hf_model
        task.model_spec = model_arg
        return check_contract(load_hf_model(model_arg[len(HF_PREFIX):], task.symbols()), f"--model {model_arg}")
    if is_import_spec(model_arg):
        task.model_spec = model_arg
        return load_factory_model(model_arg, task)
    return task.load_model()


def check_value_ids(model, eval_set, what):
    """The ids the loop writes (``value_tokens``) are distinct and never the blank: the one id the
    inputs hold at every masked position (a blank cell's id, a padding id), which the task's
    scoring reads as not decoded. Inputs that keep several ids under their mask (real values
    hidden from the model) name no blank; only distinctness is checked there."""
    values = torch.as_tensor(model.value_tokens).cpu()
    if len(values.unique()) != len(values):
        twice = next(v for v in values.tolist() if values.tolist().count(v) > 1)
        raise BenchError(f"{what}: value_tokens must be distinct token ids; {twice} is there twice")
    blanks = eval_set.tokens[eval_set.masked].unique()
    if len(blanks) == 1 and bool((values == blanks).any()):
        raise BenchError(f"{what}: value_tokens hold {int(blanks)}, the id the inputs hold at masked positions "
                         f"(a position revealed as {int(blanks)} would still read as blank); give the real values' ids")


def probe(model, strategies, eval_set, what):
    """One forward pass on (a copy of) the first input: value ids apart from the blank, the input
    left as given, logits of the right shape, finite, and hidden states where a strategy needs
    them; one-line errors before any decoding."""
    check_value_ids(model, eval_set, what)
    tokens, masked = eval_set.tokens[:1].clone(), eval_set.masked[:1].clone()   # a write must not reach the inputs
    try:
        out = model(tokens, masked)
    except Exception as err:
        raise BenchError(f"{what}: a forward pass on one input failed ({type(err).__name__}: "
                         f"{str(err).splitlines()[0][:160] if str(err) else ''})") from None
    check_inputs_kept((tokens, masked), (eval_set.tokens[:1], eval_set.masked[:1]), what, "in one forward pass")
    expected = (1, tokens.shape[1], model.vocab_size)
    logits = getattr(out, "logits", None)
    if not isinstance(logits, torch.Tensor) or tuple(logits.shape) != expected:
        got = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise BenchError(f"{what}: logits must be [batch, positions, vocab_size] = {list(expected)}, got {got}")
    if not all_finite(logits):
        raise BenchError(f"{what}: the logits of one forward pass are not finite")
    hidden = getattr(out, "hidden", None)
    for strategy in strategies:
        if "hidden" in strategy.needs and not (isinstance(hidden, torch.Tensor) and hidden.dim() == 3
                                               and tuple(hidden.shape[:2]) == expected[:2]):
            raise BenchError(f"strategy {strategy.name} needs hidden states, and {what} gives "
                             f"{'none' if hidden is None else 'no [batch, positions, D] tensor'} "
                             f"(ModelOutput.hidden); its trained helper reads them")
