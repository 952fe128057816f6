"""The learned order: Bernoulli reveal model, KL, RLOO, policy files, strategy and rollouts."""
import itertools
import math

import pytest
import torch

from bench.core import ModelOutput, StepState
from bench.decode import decode
from bench.errors import BenchError
from bench.registry import parse_strategy
from strategies.eb import EBSampler
from strategies.learned.policy import (PolicyConfig, OrderNet, bernoulli_kl, bernoulli_log_prob,
                                       choose_reveals, eb_cost, load_policy, position_scalars, reinforce_loss,
                                       reveal_log_probs, rloo_advantages, save_policy)
from strategies.learned.strategy import Learned
from strategies.learned.train import OrderTrainConfig, Roller, make_networks, resolve, train_step
from tasks.sudoku.task import SudokuTask


def random_case(generator, batch=64, n=12):
    scores = torch.randn(batch, n, generator=generator) * 3
    scores[:8] = scores[:8].round()                   # ties at the top
    masked = torch.rand(batch, n, generator=generator) < 0.5
    masked[8:12] = False
    masked[8:12, 5] = True                            # rows with a single masked position
    return scores, masked


@pytest.mark.parametrize("mode", ["sample", "threshold"])
@pytest.mark.parametrize("temperature", [0.05, 1.0, 20.0])
def test_reveals_at_least_one_masked_position_and_never_an_unmasked_one(mode, temperature):
    generator = torch.Generator().manual_seed(0)
    for _ in range(50):
        scores, masked = random_case(generator)
        masked[-1] = False                            # a finished row: nothing to reveal
        log_p = reveal_log_probs(scores, masked, temperature)
        pick = choose_reveals(log_p, masked, mode, generator)
        assert not (pick & ~masked).any()
        assert (pick.any(1) == masked.any(1)).all()
        best = scores.masked_fill(~masked, float("-inf")).argmax(1)
        rows = masked.any(1).nonzero().squeeze(1)
        assert pick[rows, best[rows]].all()           # the best-scored masked position always goes


def test_reveal_probabilities_are_one_at_the_best_and_zero_off_the_mask():
    scores = torch.tensor([[0.0, 2.0, 1.0, 5.0]])
    masked = torch.tensor([[True, True, True, False]])     # the top score is not masked: ignored
    probs = reveal_log_probs(scores, masked, 2.0).exp()
    expected = torch.tensor([[math.exp(-1.0), 1.0, math.exp(-0.5), 0.0]])
    assert torch.allclose(probs, expected)


def direct_kl(q, p, masked, eps):
    """sum over masked positions of q log(q/p) + (1-q) log((1-q)/(1-p)), in float64 Python."""
    total = 0.0
    for qi, pi, mi in zip(q.tolist(), p.tolist(), masked.tolist()):
        if mi:
            qi, pi = min(max(qi, eps), 1 - eps), min(max(pi, eps), 1 - eps)
            total += qi * math.log(qi / pi) + (1 - qi) * math.log((1 - qi) / (1 - pi))
    return total


def test_kl_matches_a_direct_computation_and_torch_distributions():
    generator = torch.Generator().manual_seed(1)
    scores_q, masked = random_case(generator)
    scores_p = torch.randn(scores_q.shape, generator=generator) * 3
    log_q, log_p = reveal_log_probs(scores_q, masked, 1.0), reveal_log_probs(scores_p, masked, 1.0)
    kl = bernoulli_kl(log_q, log_p, masked, 1e-3)
    for row in range(len(kl)):
        assert kl[row].item() == pytest.approx(direct_kl(log_q[row].exp(), log_p[row].exp(), masked[row], 1e-3),
                                               rel=1e-4, abs=1e-5)
    q, p = log_q.exp().clamp(1e-3, 1 - 1e-3), log_p.exp().clamp(1e-3, 1 - 1e-3)
    reference = torch.distributions.kl_divergence(torch.distributions.Bernoulli(probs=q.double()),
                                                  torch.distributions.Bernoulli(probs=p.double()))
    assert torch.allclose(kl.double(), (reference * masked).sum(1), rtol=1e-4, atol=1e-5)
    assert bernoulli_kl(log_q, log_q, masked, 1e-3).abs().max() < 1e-6


def test_log_prob_of_a_reveal_vector_matches_torch_distributions():
    generator = torch.Generator().manual_seed(2)
    scores, masked = random_case(generator)
    log_p = reveal_log_probs(scores, masked, 1.5)
    pick = choose_reveals(log_p, masked, "sample", generator)
    probs = log_p.exp().clamp(1e-7, 1 - 1e-7).double()
    reference = (torch.distributions.Bernoulli(probs=probs).log_prob(pick.double()) * masked).sum(1)
    assert torch.allclose(bernoulli_log_prob(log_p, pick, masked).double(), reference, atol=1e-4)


def test_rloo_advantages_leave_each_order_out():
    rewards = torch.tensor([[1.0, 2.0, 6.0]])
    assert torch.allclose(rloo_advantages(rewards), torch.tensor([[-3.0, -1.5, 4.5]]))
    with pytest.raises(BenchError, match="at least 2"):
        rloo_advantages(torch.zeros(3, 1))


def toy_reward(x):
    """A reward over 3 binary variables with interactions: f(x) = 2 x0 - x1 + 3 x0 x2 - x1 x2."""
    return 2 * x[..., 0] - x[..., 1] + 3 * x[..., 0] * x[..., 2] - x[..., 1] * x[..., 2]


def exact_gradient(theta):
    """d/dtheta E_{x ~ Bernoulli(sigmoid(theta))}[f(x)] by enumerating all 8 outcomes."""
    theta = theta.clone().requires_grad_(True)
    p = torch.sigmoid(theta)
    value = sum(toy_reward(torch.tensor(x, dtype=torch.float64)) * torch.prod(torch.where(
        torch.tensor(x, dtype=torch.bool), p, 1 - p)) for x in itertools.product([0, 1], repeat=3))
    return torch.autograd.grad(value, theta)[0]


def estimated_gradient(theta, groups, k, loss_of):
    """The REINFORCE gradient of E[f] from ``groups`` groups of ``k`` samples, by ``loss_of(log_prob, rewards)``."""
    theta = theta.clone().requires_grad_(True)
    p = torch.sigmoid(theta)
    x = torch.bernoulli(p.detach().expand(groups, k, 3), generator=torch.Generator().manual_seed(3))
    log_prob = (x * torch.log(p) + (1 - x) * torch.log1p(-p)).sum(-1)          # [G, K]
    return -torch.autograd.grad(loss_of(log_prob, toy_reward(x)), theta)[0]


def test_rloo_estimator_is_unbiased_on_a_toy_problem():
    theta = torch.tensor([0.3, -0.8, 1.1], dtype=torch.float64)
    exact = exact_gradient(theta)
    ours = estimated_gradient(theta, 200_000, 4, reinforce_loss)
    assert torch.allclose(ours, exact, atol=0.01), (ours, exact)
    # the test can tell: a baseline that includes the sample itself shrinks the gradient by (K-1)/K
    self_included = lambda log_prob, r: -((r - r.mean(1, keepdim=True)) * log_prob).mean()  # noqa: E731
    biased = estimated_gradient(theta, 200_000, 4, self_included)
    assert not torch.allclose(biased, exact, atol=0.01)
    assert torch.allclose(biased, exact * 3 / 4, atol=0.01)


def test_eb_cost_sums_the_entropies_of_lower_entropy_masked_positions():
    entropy = torch.tensor([[0.5, 0.1, 9.0, 0.3, 0.3]])
    masked = torch.tensor([[True, True, False, True, True]])
    assert torch.allclose(eb_cost(entropy, masked), torch.tensor([[0.7, 0.0, 0.0, 0.1, 0.4]]))


def random_state(generator, batch=32, n=20, v=5, d=8):
    logits = torch.randn(batch, n, v, generator=generator) * 3
    masked = torch.rand(batch, n, generator=generator) < 0.7
    masked[:, 0] = True
    out = ModelOutput(logits=logits, hidden=torch.randn(batch, n, d, generator=generator))
    return StepState(torch.zeros(batch, n, dtype=torch.long), masked, out, 0)


def bound_strategy(network, tmp_path, budget, **params):
    save_policy(tmp_path / "p.pt", network, network, "m", budget, 1.0, {})
    strategy = Learned(T=budget, policy=str(tmp_path / "p.pt"), **params)
    strategy.bind(Bound(tmp_path), FixedModel())
    return strategy


def test_untrained_policy_thresholded_is_eb_sampler(tmp_path):
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(4)
    for gamma in (0.1, 0.5, 2.0):
        strategy = bound_strategy(OrderNet(PolicyConfig(d_hidden=8, init_gamma=gamma)), tmp_path, 10,
                                  mode="threshold")
        for _ in range(5):
            state = random_state(generator)
            assert torch.equal(strategy.select(state), EBSampler(gamma=gamma).select(state))


class Bound:
    """What the runner passes to bind(): a task with a weights folder."""
    name = "sudoku"

    def __init__(self, folder):
        self.weights_dir = folder


class FixedModel:
    """A MaskedModel with fixed logits per position (the order cannot change any log-likelihood)."""
    vocab_size = 3
    checkpoint_id = "m"

    def __init__(self, n=9):
        self.logits = torch.randn(n, 3, generator=torch.Generator().manual_seed(5))
        self.value_tokens = torch.tensor([1, 2, 3])

    def __call__(self, tokens, masked):
        batch = tokens.shape[0]
        hidden = torch.randn(batch, tokens.shape[1], 8, generator=torch.Generator().manual_seed(6))
        return ModelOutput(logits=self.logits.expand(batch, -1, -1).clone(), hidden=hidden)


def test_policy_of_another_model_or_budget_is_a_clear_error(tmp_path):
    network = OrderNet(PolicyConfig(d_hidden=8))
    save_policy(tmp_path / "p.pt", network, network, "model-a", 5, 1.0, {})
    assert load_policy(tmp_path / "p.pt", "model-a", "sudoku", 5) is not None
    with pytest.raises(BenchError, match="trained for model model-a.*bench train order --task sudoku T=5"):
        load_policy(tmp_path / "p.pt", "model-b", "sudoku", 5)
    with pytest.raises(BenchError, match="trained for T=5, not T=10"):
        load_policy(tmp_path / "p.pt", "model-a", "sudoku", 10)


def test_missing_policy_names_the_file_and_the_training_command(tmp_path):
    with pytest.raises(BenchError, match=r"order_policy_T5\.pt.*python -m bench train order --task sudoku T=5"):
        Learned(T=5).bind(Bound(tmp_path), FixedModel())


def test_bad_parameters_are_one_line_errors():
    with pytest.raises(BenchError, match="T must be at least 1"):
        parse_strategy("learned:T=0")
    with pytest.raises(BenchError, match="temperature must be > 0"):
        parse_strategy("learned:temperature=0")
    with pytest.raises(BenchError, match="mode='greedy' is not allowed"):
        parse_strategy("learned:mode=greedy")
    with pytest.raises(BenchError, match="K must be at least 2"):
        resolve(OrderTrainConfig(T=5, K=1), SudokuTask())
    with pytest.raises(BenchError, match="no default init_gamma for T=7"):
        resolve(OrderTrainConfig(T=7), SudokuTask())


def test_decoding_stays_within_the_budget_and_is_reproducible(tmp_path):
    torch.manual_seed(0)
    network = OrderNet(PolicyConfig(d_hidden=8, init_gamma=0.01))   # few positions per pass before the last
    strategy = bound_strategy(network, tmp_path, 3, mode="sample")
    assert set(strategy.helper_ids()) == {"order_policy"}
    tokens, masked = torch.zeros(4, 9, dtype=torch.long), torch.ones(4, 9, dtype=torch.bool)
    first = decode(FixedModel(), tokens, masked, strategy)
    again = decode(FixedModel(), tokens, masked, strategy)
    assert (first.passes == 3).all() and not (first.tokens == 0).any()
    assert torch.equal(first.tokens, again.tokens) and torch.equal(first.passes, again.passes)


class SharpeningModel(FixedModel):
    """FixedModel whose logits sharpen as positions are revealed: the order changes the likelihood."""

    def __call__(self, tokens, masked):
        out = super().__call__(tokens, masked)
        revealed = (~masked).float().mean(1)[:, None, None]
        return ModelOutput(logits=out.logits * (1 + 3 * revealed), hidden=out.hidden)


def toy_roller(budget, model=None):
    torch.manual_seed(0)
    cfg = resolve(OrderTrainConfig(T=budget, init_gamma=0.5, K=3, batch_size=2), SudokuTask())
    prior, posterior = make_networks(8, cfg)
    return Roller(model or FixedModel(), prior, posterior, cfg, torch.Generator().manual_seed(7)), cfg


def toy_batch():
    x0 = torch.tensor([[1, 2, 3, 1, 2, 3, 1, 2, 3], [3, 3, 3, 2, 2, 2, 1, 1, 1]])
    masked = torch.ones_like(x0, dtype=torch.bool)
    masked[1, :3] = False                                     # three givens in the second example
    return x0, torch.where(masked, 0, x0), masked, x0 - 1


def test_rollouts_reveal_everything_within_t_and_score_every_revealed_position():
    roller, cfg = toy_roller(3)
    x0, start, masked, values = toy_batch()
    out = roller.run(x0, start, masked, values, cfg.K)
    log_probs = torch.log_softmax(roller.model.logits, -1)                 # [9, 3], the same in every state
    per_position = log_probs.gather(1, values.T).T                          # [2, 9]
    expected = (per_position * masked).sum(1).repeat_interleave(cfg.K)
    assert torch.allclose(out.loglik, expected, atol=1e-5)                 # every masked position, once
    assert (out.passes <= 3).all() and (out.passes >= 1).all()
    assert out.kl.abs().max() < 1e-5                                         # P and Q start equal


def test_training_steps_move_both_policies():
    roller, cfg = toy_roller(3, SharpeningModel())
    params = lambda net: [p.detach().clone() for p in net.parameters()]  # noqa: E731
    before = params(roller.prior), params(roller.posterior)
    opt = torch.optim.Adam(itertools.chain(roller.prior.parameters(), roller.posterior.parameters()), lr=1e-2)
    for _ in range(2):   # Q moves first (REINFORCE); P follows through the KL once Q differs from it
        stats = train_step(roller, list(toy_batch()), opt, cfg)
        assert all(math.isfinite(v) for v in stats.values())
    for old, net in zip(before, (roller.prior, roller.posterior)):
        assert any(not torch.equal(a, b) for a, b in zip(old, params(net)))


def test_position_scalars_add_the_true_token_only_for_the_posterior():
    state = random_state(torch.Generator().manual_seed(8))
    prior = position_scalars(state.log_probs, state.masked, 2, 10)
    posterior = position_scalars(state.log_probs, state.masked, 2, 10, torch.zeros(state.masked.shape))
    assert prior.shape[-1] + 1 == posterior.shape[-1] and torch.equal(prior, posterior[..., :-1])
    assert torch.allclose(prior[..., 0], state.entropy) and torch.allclose(prior[..., 1], state.confidence)
