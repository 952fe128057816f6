"""The hidden Markov model of the exact task and exact inference on it, batched in torch.

An HMM with K hidden states and V values: h_1 ~ init, h_t | h_{t-1} ~ trans[h_{t-1}],
x_t | h_t ~ emit[h_t]. A partly revealed sequence gives evidence e_t(k) = emit[k, x_t] at
revealed positions and 1 at masked ones. Scaled forward-backward (Rabiner's c_t) gives

    gamma_t(k) = p(h_t = k | revealed)           (the exact model's hidden states)
    p(x_t = v | revealed) = sum_k gamma_t(k) emit[k, v]   for masked t
    log p(revealed) = sum_t log c_t              (log p(x) of a complete sequence)

and pair posteriors p(h_i, h_j | revealed) = alpha_i (prod_{t=i+1..j} trans diag(e_t)) beta_j
(normalised), hence exact pairwise conditional MI of masked positions. Every function is
vectorised over the batch; the loops run over positions or offsets only. float64 throughout.
"""
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bench.errors import BenchError
from bench.files import MiB, read_text

TOLERANCE = 1e-6   # rows of a parameter file must sum to 1 within this
DEFAULT_HMM = Path(__file__).parent / "data" / "hmm.json"   # the shipped chain
# An HMM parameter file: the shipped chain (6 states, 8 values) is 2.5 KB; 16 MiB holds a chain of
# about 800 states written with full float precision, whose forward-backward is already slow.
HMM_FILE_LIMIT = 16 * MiB


@dataclass(frozen=True)
class HMM:
    init: torch.Tensor    # [K] float64
    trans: torch.Tensor   # [K, K] float64, rows sum to 1
    emit: torch.Tensor    # [K, V] float64, rows sum to 1
    length: int           # N, positions per sequence

    @property
    def n_states(self):
        return self.init.shape[0]

    @property
    def n_values(self):
        return self.emit.shape[1]


def float64_tensor(array):
    return torch.tensor(array, dtype=torch.float64)


def draw_hmm(seed, n_states=6, n_values=8, length=64, stay=0.97, emit_concentration=0.15):
    """Parameters drawn from ``seed``: sticky states (self-transition ``stay``, the rest spread by a
    Dirichlet(1)) and peaked emissions (Dirichlet(``emit_concentration``): each state puts most
    of its mass on one or two values), so a value carries information far along the chain."""
    rng = np.random.default_rng(seed)
    trans = np.zeros((n_states, n_states))
    for k in range(n_states):
        others = rng.dirichlet(np.ones(n_states - 1)) * (1 - stay)
        trans[k] = np.insert(others, k, stay)
    emit = rng.dirichlet(np.full(n_values, emit_concentration), size=n_states)
    emit = (emit + 1e-3) / (emit + 1e-3).sum(1, keepdims=True)   # no value impossible: log p stays finite
    init = np.full(n_states, 1.0 / n_states)
    return HMM(float64_tensor(init), float64_tensor(trans), float64_tensor(emit), length)


def check_stochastic(name, array, ndim, path):
    """One-line errors for a parameter that is not a non-negative ``ndim``-array with rows summing to 1."""
    if array.ndim != ndim or array.size == 0:
        raise BenchError(f"HMM file {path}: {name} must be a non-empty {ndim}-d array, got shape {array.shape}")
    if not np.isfinite(array).all() or (array < 0).any():
        raise BenchError(f"HMM file {path}: {name} has a negative or non-finite entry; probabilities must be >= 0")
    sums = array.sum(-1)
    if np.abs(sums - 1).max() > TOLERANCE:
        raise BenchError(f"HMM file {path}: a row of {name} sums to {sums.flat[np.abs(sums - 1).argmax()]:.9g}, "
                         f"not 1 within {TOLERANCE:g}")


def load_hmm(path):
    """Read and check an HMM parameter file (JSON: length, init [K], trans [K, K], emit [K, V])."""
    path = Path(path)
    text = read_text(path, "HMM file", HMM_FILE_LIMIT)
    try:
        raw = json.loads(text)
        arrays = {key: np.asarray(raw[key], dtype=float) for key in ("init", "trans", "emit")}
        length = raw["length"]
    except (json.JSONDecodeError, ValueError, TypeError, RecursionError) as err:
        raise BenchError(f"HMM file {path} is not a JSON object of numeric arrays: "
                         f"{str(err).splitlines()[0]}") from None
    except KeyError as err:
        raise BenchError(f"HMM file {path} lacks {err.args[0]!r}; it needs length, init, trans and emit") from None
    for name, ndim in (("init", 1), ("trans", 2), ("emit", 2)):
        check_stochastic(name, arrays[name], ndim, path)
    k = arrays["init"].shape[0]
    if arrays["trans"].shape != (k, k) or arrays["emit"].shape[0] != k:
        raise BenchError(f"HMM file {path}: shapes init {arrays['init'].shape}, trans {arrays['trans'].shape}, "
                         f"emit {arrays['emit'].shape} disagree; need [K], [K, K], [K, V]")
    if not isinstance(length, int) or isinstance(length, bool) or not 2 <= length <= 4096:
        raise BenchError(f"HMM file {path}: length must be an integer in [2, 4096], got {length!r}")
    return HMM(float64_tensor(arrays["init"]), float64_tensor(arrays["trans"]), float64_tensor(arrays["emit"]),
               length)


def sample(hmm, n, generator):
    """(values [n, N] long, hidden states [n, N] long): ancestral samples."""
    states = torch.empty(n, hmm.length, dtype=torch.long)
    states[:, 0] = torch.multinomial(hmm.init.expand(n, -1), 1, generator=generator).squeeze(1)
    for t in range(1, hmm.length):
        states[:, t] = torch.multinomial(hmm.trans[states[:, t - 1]], 1, generator=generator).squeeze(1)
    values = torch.multinomial(hmm.emit[states.reshape(-1)], 1, generator=generator).view(n, hmm.length)
    return values, states


def evidence(hmm, values, revealed):
    """[B, N, K]: emit[k, x_t] at revealed positions, 1 at masked ones."""
    emitted = hmm.emit.T[values.clamp(0, hmm.n_values - 1)]          # [B, N, K]
    return torch.where(revealed[..., None], emitted, torch.ones_like(emitted))


def forward_backward(hmm, values, revealed):
    """(alpha_hat, beta_hat, log_c), each over [B, N(, K)]: scaled messages and log scale factors.
    Computed time-major (contiguous [B, K] slices per position), returned batch-major."""
    e = evidence(hmm, values, revealed).transpose(0, 1).contiguous()      # [N, B, K]
    n = e.shape[0]
    alpha, c = torch.empty_like(e), torch.empty(e.shape[:2], dtype=torch.float64)
    a = hmm.init * e[0]
    for t in range(n):
        if t:
            a = (alpha[t - 1] @ hmm.trans) * e[t]
        c[t] = a.sum(1)
        alpha[t] = a / c[t, :, None]
    beta = torch.ones_like(e)
    for t in range(n - 2, -1, -1):
        beta[t] = ((e[t + 1] * beta[t + 1]) @ hmm.trans.T) / c[t + 1, :, None]
    return alpha.transpose(0, 1), beta.transpose(0, 1), c.log().T


def log_likelihood(hmm, values):
    """[B] log p(x) of complete sequences (the forward algorithm), in nats."""
    revealed = torch.ones(values.shape, dtype=torch.bool)
    return forward_backward(hmm, values, revealed)[2].sum(1)


def state_posteriors(hmm, values, revealed):
    """[B, N, K] p(h_t | revealed values)."""
    alpha, beta, _ = forward_backward(hmm, values, revealed)
    gamma = alpha * beta
    return gamma / gamma.sum(-1, keepdim=True)


def value_log_probs(hmm, gamma):
    """[B, N, V] log p(x_t = v | revealed) from state posteriors (exact at masked positions)."""
    return (gamma @ hmm.emit).clamp_min(1e-300).log()


def mi_rows(hmm, values, revealed, rows, positions, chunk=512):
    """[R, N] float32: exact I(X_i; X_j | revealed values of row ``rows[r]``) for i = ``positions[r]``
    and every j (0 where j = i or j is revealed).

    The pair marginals come from forward-backward with X_i clamped to each value u in turn:
    p(x_i = u, x_j = w | revealed) = p(x_i = u | revealed) p(x_j = w | x_i = u, revealed), so
    I = H(X_j) - sum_u p(x_i = u) H(X_j | X_i = u). ``chunk`` rows (times V clamped copies) at a time."""
    out = torch.zeros(len(rows), values.shape[1])
    for start in range(0, len(rows), chunk):
        r, p = rows[start:start + chunk], positions[start:start + chunk]
        out[start:start + chunk] = clamped_mi(hmm, values[r], revealed[r], p)
    return out


def clamped_mi(hmm, values, revealed, positions):
    """mi_rows for one chunk: row r of ``values``/``revealed`` with i = ``positions[r]``."""
    n_rows, n_values = len(positions), hmm.n_values
    arange = torch.arange(n_rows)
    marginal = value_log_probs(hmm, state_posteriors(hmm, values, revealed)).exp()          # [R, N, V]
    entropy = torch.special.entr(marginal).sum(-1)                                          # [R, N]
    copies = torch.arange(n_rows).repeat_interleave(n_values)                               # [R * V]
    clamped_values, clamped_revealed = values[copies].clone(), revealed[copies].clone()
    where = positions[copies]
    clamped_values[torch.arange(len(copies)), where] = torch.arange(n_values).repeat(n_rows)
    clamped_revealed[torch.arange(len(copies)), where] = True
    conditional = value_log_probs(hmm, state_posteriors(hmm, clamped_values, clamped_revealed)).exp()
    cond_entropy = torch.special.entr(conditional).sum(-1).view(n_rows, n_values, -1)        # [R, V, N]
    weights = marginal[arange, positions]                                                   # [R, V] p(x_i = u)
    mi = (entropy - (weights[..., None] * cond_entropy).sum(1)).clamp_min(0.0)
    keep = ~revealed
    keep[arange, positions] = False
    return (mi * keep).float()


def pair_mi(hmm, values, revealed):
    """[B, N, N] float32: exact I(X_i; X_j | revealed) for every masked pair (symmetric; 0 elsewhere)."""
    batch, n = values.shape
    rows, positions = (~revealed).nonzero(as_tuple=True)
    mi = torch.zeros(batch, n, n)
    mi[rows, positions] = mi_rows(hmm, values, revealed, rows, positions)
    return mi



def state_marginals(hmm):
    """[N, K] p(h_t): the hidden state's distribution at each position."""
    marginals = [hmm.init]
    for _ in range(1, hmm.length):
        marginals.append(marginals[-1] @ hmm.trans)
    return torch.stack(marginals)


def value_marginals(hmm):
    """[N, V] p(x_t): each position's value distribution."""
    return state_marginals(hmm) @ hmm.emit


def pair_marginals(hmm):
    """[V, V] p(x_t = a, x_t+1 = b) averaged over the N - 1 adjacent pairs (the bigram law
    that counts of a sample's adjacent values estimate)."""
    states = state_marginals(hmm)[:-1]                                     # [N-1, K]
    joint = states[:, :, None] * hmm.trans                                 # [N-1, K, K] p(h_t, h_t+1)
    return torch.einsum("ka,nkl,lb->ab", hmm.emit, joint, hmm.emit) / (hmm.length - 1)


def entropy_estimate(hmm, n=100_000, seed=0):
    """(H(X) in nats, its Monte Carlo standard error): the mean of -log p(x) over ``n`` samples of
    the chain drawn with ``seed`` (the entropy of an HMM's output has no closed form)."""
    values, _ = sample(hmm, n, torch.Generator().manual_seed(seed))
    nll = -log_likelihood(hmm, values)
    return float(nll.mean()), float(nll.std() / n ** 0.5)


def nll_quantile(hmm, level, n=100_000, seed=0):
    """The ``level`` quantile of -log p(X) in nats for X drawn from the chain, over ``n`` samples
    drawn with ``seed``: sequences with -log p(x) at most this hold a ``level`` share of the
    chain's mass, its most probable ones (the exact task's sequence error rate reads it)."""
    values, _ = sample(hmm, n, torch.Generator().manual_seed(seed + 1))   # not entropy_estimate's draws
    return float(torch.quantile(-log_likelihood(hmm, values), level))
