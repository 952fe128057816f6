"""Files besides results: weights (atomic writes, clear errors, a content hash as identity) and
the cache folder. Every file is read through bench.files (regular files within a size limit)."""
import functools
import hashlib
import os
import zipfile
from pathlib import Path

import numpy as np
import torch

from bench.errors import BenchError
from bench.files import CACHE_LIMIT, CHECKPOINT_LIMIT, HELPER_LIMIT, MissingFile, checked_path, sha256_of
from bench.results import write_atomic


def cache_dir():
    """Where generated data sets, label sets and downloaded weights are cached
    (``UNMASK_BENCH_CACHE`` or ~/.cache/unmask-bench)."""
    return Path(os.environ.get("UNMASK_BENCH_CACHE", Path.home() / ".cache" / "unmask-bench"))


def helper_file(path):
    """The file a strategy parameter names (an estimator, a policy): a relative path that is not
    there from the working directory is read from the suite's checkout, so the shipped presets'
    helper paths (tasks/<task>/weights/...) work from any folder; a user's own file
    is read where it is."""
    from bench.provenance import REPO
    path = Path(path)
    if path.is_absolute() or path.exists() or not (REPO / path).exists():
        return path
    return REPO / path


def save_atomic(path, payload):
    """torch.save to a temp file, then rename: a killed write never leaves a half file."""
    write_atomic(path, lambda handle: torch.save(payload, handle))


def load_payload(path, what, how_to_make, limit=CHECKPOINT_LIMIT):
    """torch.load a checkpoint dict of at most ``limit`` bytes, or raise a one-line BenchError
    naming the file."""
    try:
        path = checked_path(path, f"{what} checkpoint", limit)
    except MissingFile as err:
        raise BenchError(f"{err} (make it with: {how_to_make})") from None
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # a foreign or damaged file makes the unpickler raise almost anything
        raise BenchError(f"{what} checkpoint {path} is corrupt or unreadable "
                         f"({type(err).__name__}); remake it with: {how_to_make}") from None
    if not isinstance(payload, dict) or "state_dict" not in payload:
        raise BenchError(f"{what} checkpoint {path} has no state_dict; remake it with: {how_to_make}")
    return payload


def file_id(path, what="file", limit=CHECKPOINT_LIMIT):
    """First 12 hex digits of the file's SHA-256: the identity results record. Hashed once per
    process while the file (inode, size, modification time) stays the same."""
    stat = checked_path(path, what, limit).stat()
    return _content_id(str(Path(path).resolve()), (stat.st_ino, stat.st_size, stat.st_mtime_ns), what, limit)


@functools.lru_cache(maxsize=256)
def _content_id(path, version, what, limit):
    """``version``: (inode, size, modification time), the cache key's part that changes with the file."""
    return sha256_of(path, what, limit)[:12]


def cached_arrays(name, depends_on, make):
    """``make()`` (a dict of numpy arrays), kept in ``<cache>/<name>-KEY.npz`` where KEY hashes the
    files it ``depends_on`` (its data and the code that derives it): a later process reads the
    arrays back instead of making them again. A damaged file is made again; a read-only cache
    costs the time only."""
    key = hashlib.sha256(" ".join(file_id(path) for path in depends_on).encode()).hexdigest()[:16]
    path = cache_dir() / f"{name}-{key}.npz"
    try:
        with np.load(checked_path(path, "cached arrays", CACHE_LIMIT), allow_pickle=False) as stored:
            return {field: stored[field] for field in stored.files}
    except (BenchError, OSError, ValueError, EOFError, zipfile.BadZipFile):
        pass    # absent, damaged or no regular file: made again below
    arrays = make()
    try:
        write_atomic(path, lambda handle: np.savez(handle, **arrays))
    except OSError:
        pass
    return arrays


def build_from_payload(payload, build, what, path, how_to_make):
    """``build(payload)`` (a network with its weights loaded), or a one-line BenchError when the
    file does not fit the code."""
    try:
        return build(payload)
    except BenchError:
        raise                 # the builder's own one-line message says it best
    except Exception as err:  # a config that does not fit the code can fail anywhere in the constructor
        raise BenchError(f"{what} {path} does not match the {what.split()[-1]} code "
                         f"({str(err).splitlines()[0][:100]}); remake it with: {how_to_make}") from None


def load_helper(path, what, how_to_make, model_id, build):
    """A trained helper of a model (a dependency estimator, an order policy): (network in eval mode, payload).

    The file must record ``model_id``, the checkpoint of the model it was trained on.
    """
    payload = load_payload(path, what, how_to_make, HELPER_LIMIT)
    if payload.get("model_id") != model_id:
        raise BenchError(f"{what} {path} was trained for model {payload.get('model_id')}, "
                         f"not the model in use ({model_id}); retrain it with: {how_to_make}")
    return build_from_payload(payload, build, what, path, how_to_make).eval(), payload


def count_params(network):
    return sum(p.numel() for p in network.parameters())


def with_weights(network, state_dict):
    """``network`` with ``state_dict`` loaded."""
    network.load_state_dict(state_dict)
    return network


def weight_tensors(path):
    """{name: tensor} of every state dict in a checkpoint file (keys ending in ``state_dict``):
    what a retraining must reproduce; the rest (the command, the seconds it took) may differ."""
    path = checked_path(path, "checkpoint", CHECKPOINT_LIMIT)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # a foreign or damaged file makes the unpickler raise almost anything
        raise BenchError(f"checkpoint {path} is corrupt or not a checkpoint ({type(err).__name__})") from None
    tensors = {f"{key}.{name}": tensor for key, part in sorted(payload.items())
               if key.endswith("state_dict") and isinstance(part, dict) for name, tensor in part.items()} \
        if isinstance(payload, dict) else {}
    if not tensors or not all(isinstance(t, torch.Tensor) for t in tensors.values()):
        raise BenchError(f"checkpoint {path} holds no state_dict of tensors; it is not a checkpoint of a network")
    return tensors


def weight_difference(made, shipped):
    """(tensors compared, bit-identical, largest absolute difference) of two checkpoints' weights;
    a BenchError where they do not hold the same tensors."""
    a, b = weight_tensors(made), weight_tensors(shipped)
    if a.keys() != b.keys() or any(a[k].shape != b[k].shape for k in a):
        raise BenchError(f"{made} and {shipped} do not hold the same tensors; they are not one network's weights")
    identical = all(torch.equal(a[k], b[k]) for k in a)
    largest = max(((a[k].float() - b[k].float()).abs().max().item() for k in a if a[k].numel()), default=0.0)
    return len(a), identical, largest


def written_beside(out, shipped):
    """[(file a training wrote, the shipped file it reproduces)]: ``out`` and every file beside it
    whose name starts with its stem (a policy's initialisation, its fine-tuned denoiser), each
    paired with the file of the same name beside ``shipped``."""
    out, shipped = Path(out), Path(shipped)
    made = sorted(p for p in out.parent.glob(out.stem + "*.pt"))
    return [(p, shipped.with_name(shipped.stem + p.name[len(out.stem):])) for p in made]
