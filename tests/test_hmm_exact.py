"""The exact model checked against computations it does not share: an independent log-space forward
algorithm for log p, and a chi-square of drawn value pairs against the chain's exact pair
probabilities. A wrong conditional in ``tasks/hmm/chain.py`` (a transposed transition matrix, a
missed evidence term) fails these, where log q - log p from the same forward-backward cannot."""
import numpy as np
import pytest
import torch
from scipy.special import logsumexp
from scipy.stats import chisquare

from bench.decode import decode
from bench.registry import load_plugins, parse_strategy
from tasks.hmm import chain
from tasks.hmm.chain import DEFAULT_HMM
from tasks.hmm.model import ExactHMMModel

load_plugins()
PAIRS = (0, 20, 50)      # the pairs of positions (t, t + 1) whose joint values are tested


@pytest.fixture(scope="module")
def hmm():
    return chain.load_hmm(DEFAULT_HMM)


def independent_log_p(hmm, values):
    """[B] log p(x) by the forward algorithm in log space, written from the parameters alone."""
    log_init, log_trans, log_emit = (t.numpy() for t in (hmm.init.log(), hmm.trans.log(), hmm.emit.log()))
    values = values.numpy()
    log_alpha = log_init[None] + log_emit[:, values[:, 0]].T                         # [B, K]
    for t in range(1, values.shape[1]):
        log_alpha = logsumexp(log_alpha[:, :, None] + log_trans[None], axis=1) + log_emit[:, values[:, t]].T
    return logsumexp(log_alpha, axis=1)


def pair_probabilities(hmm, t):
    """[V, V] exact p(x_t = u, x_{t+1} = w): the state marginal at t from init and trans alone."""
    init, trans, emit = (x.numpy() for x in (hmm.init, hmm.trans, hmm.emit))
    state = init @ np.linalg.matrix_power(trans, t)
    return np.einsum("h,hu,hg,gw->uw", state, emit, trans, emit)


def draw(hmm, spec, n, seed):
    model = ExactHMMModel(hmm, "test")
    strategy = parse_strategy(spec)
    strategy.bind(None, model)
    tokens = torch.zeros(n, hmm.length, dtype=torch.long)
    return decode(model, tokens, tokens == 0, strategy, 1.0, seed=seed)


def pair_chi_square_p(hmm, values, t):
    """Chi-square p of the drawn (x_t, x_{t+1}) counts against the exact pair probabilities; cells
    expected below 5 pooled into one."""
    expected = pair_probabilities(hmm, t).ravel() * len(values)
    observed = np.bincount(values[:, t].numpy() * hmm.n_values + values[:, t + 1].numpy(),
                           minlength=hmm.n_values ** 2).astype(float)
    small = expected < 5
    observed = np.r_[observed[~small], observed[small].sum()]
    expected = np.r_[expected[~small], expected[small].sum()]
    return chisquare(observed, expected).pvalue


def test_forward_backward_agrees_with_an_independent_forward_algorithm(hmm):
    values, _ = chain.sample(hmm, 50, torch.Generator().manual_seed(3))
    assert np.allclose(chain.log_likelihood(hmm, values).numpy(), independent_log_p(hmm, values), atol=1e-9)


def test_sequential_log_q_is_the_independent_log_p(hmm):
    """Sequential decoding with exact conditionals samples p itself: each sample's log q (summed
    float32 conditionals) is its log p computed without the model's code."""
    result = draw(hmm, "sequential", 64, seed=0)
    gap = result.log_q.double().numpy() - independent_log_p(hmm, result.tokens - 1)
    assert np.abs(gap).max() < 1e-4


def test_sequential_draws_pass_a_chi_square_and_all_at_once_draws_fail_it(hmm):
    """Value pairs drawn by sequential decoding fit the chain's exact pair probabilities; one pass
    revealing every position (a product of exact marginals) does not: the check can fail."""
    sequential = draw(hmm, "sequential", 1500, seed=1).tokens - 1
    at_once = draw(hmm, f"topk:k={hmm.length}", 1500, seed=1).tokens - 1
    assert min(pair_chi_square_p(hmm, sequential, t) for t in PAIRS) > 1e-3 / len(PAIRS)
    assert max(pair_chi_square_p(hmm, at_once, t) for t in PAIRS) < 1e-6
