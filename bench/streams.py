"""Random numbers per input: counter-based uniforms keyed by (seed, input, pass, purpose, position).

Every random number the decode loop or a strategy draws for an input is a hash of the run's
seed, the input's index in the eval set, the pass number, what it is drawn for (``purpose``, a
string) and the position: nothing advances, so an input's draws never depend on which inputs
share its batch, on the batch size, on the shard that decodes it, or on what was drawn
elsewhere. A run cut any way gives the same records, and a few of its inputs decoded alone
reproduce them (``bench run --verify``).

The hash is splitmix64's (Steele, Lea and Flood 2014): its finaliser, applied to a state that
absorbs each key part in turn, and to ``state + position * golden gamma`` for the position's
own number; the top 53 bits make a float64 uniform in [0, 1).
"""
import functools
import hashlib

import numpy as np
import torch

GOLDEN = 0x9E3779B97F4A7C15
MASK64 = 2 ** 64 - 1


def mix(x):
    """splitmix64's finaliser on a uint64 numpy array (wrapping arithmetic, logical shifts)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def absorb(state, value):
    """The state after absorbing ``value`` (uint64 arrays that broadcast; arrays, never numpy
    scalars, so that wrapping arithmetic raises no overflow warning)."""
    value = np.asarray(value, dtype=np.uint64).reshape(-1)
    return mix(state + (value + np.uint64(1)) * np.uint64(GOLDEN))


@functools.lru_cache(maxsize=64)
def purpose_key(purpose):
    """A 64-bit number for a purpose string (``values``, ``learned:0``)."""
    return int.from_bytes(hashlib.sha256(str(purpose).encode()).digest()[:8], "little")


def as_uint64(values):
    """uint64 numpy array of non-negative integers (a tensor, a list or an int)."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=np.int64).astype(np.uint64)


class Streams:
    """The random streams of some inputs of a run: row r of a batch is input ``index[r]``.

    Args:
        seed: the run's seed (any non-negative integer below 2**64).
        index: [B] the eval-set index of each row (default 0..B-1).
    """

    def __init__(self, seed=0, index=None, rows=None):
        self.seed = int(seed)
        if index is None:
            index = torch.arange(rows or 0)
        self.index = torch.as_tensor(index, dtype=torch.long).cpu()
        self.inputs = {}          # purpose -> [B] uint64, input_states' (made once per purpose)
        self.parent = None        # (streams, [B] rows of it) where taken from a larger batch

    def __len__(self):
        return len(self.index)

    def take(self, rows):
        """The streams of rows ``rows`` ([R] long) of this batch."""
        rows = torch.as_tensor(rows).cpu()
        taken = Streams(self.seed, self.index[rows])
        taken.parent = (self, rows.numpy())
        return taken

    def input_states(self, purpose):
        """[B] uint64: each row's stream state after the seed, ``purpose`` and its input index.
        The decode loop takes the rows still active from one Streams every pass; their states are
        made there once and picked, not hashed again each pass."""
        if purpose not in self.inputs:
            if self.parent is not None:
                streams, rows = self.parent
                self.inputs[purpose] = streams.input_states(purpose)[rows]
            else:
                head = (self.seed * GOLDEN + purpose_key(purpose)) & MASK64
                self.inputs[purpose] = absorb(mix(np.array([head], dtype=np.uint64)), as_uint64(self.index))
        return self.inputs[purpose]

    def row_states(self, step, purpose):
        """[B] uint64: the state of each row's stream at pass ``step`` for ``purpose``."""
        return absorb(self.input_states(purpose), [step])

    def uniform(self, step, purpose, rows, positions):
        """[P] float64 uniforms in [0, 1): one per (row, position) pair, ``rows`` and ``positions``
        [P] long (rows of this batch), the same for an input whatever its batch."""
        states = self.row_states(step, purpose)[as_uint64(rows)]
        bits = absorb(states, as_uint64(positions)) >> np.uint64(11)
        return torch.from_numpy(bits.astype(np.float64) * 2.0 ** -53)

    def uniform_grid(self, step, purpose, width):
        """[B, width] float64 uniforms: every position of every row."""
        batch = len(self.index)
        rows = torch.arange(batch).repeat_interleave(width)
        positions = torch.arange(width).repeat(batch)
        return self.uniform(step, purpose, rows, positions).view(batch, width)


def categorical(probs, uniforms):
    """[P] long: the value whose cumulative-probability interval holds ``uniforms`` [P] (inverse
    CDF, in float64); ``probs`` [P, V] non-negative, each row with a positive sum. A value of
    probability 0 is never drawn. In numpy on the CPU (a third of torch's per-call time here; the
    same float64 sums, in the same order)."""
    probs = probs.detach().cpu().numpy()
    cdf = np.cumsum(probs, -1, dtype=np.float64)                      # [P, V]
    target = uniforms.detach().cpu().numpy().astype(np.float64, copy=False) * cdf[:, -1]
    drawn = (cdf <= target[:, None]).sum(-1)                          # first value whose cdf exceeds the target
    last = np.cumsum(probs > 0, -1).argmax(-1)                        # the last value of positive probability
    return torch.from_numpy(np.minimum(drawn, last))
