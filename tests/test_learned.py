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
from strategies.learned.policy import (
    OrderNet,
    PolicyConfig,
    choose_reveals,
    eb_cost,
    load_policy,
    position_scalars,
    reinforce_loss,
    reveal_kl,
    reveal_log_prob,
    reveal_probs,
    rloo_advantages,
    save_policy,
)
from strategies.learned.strategy import Learned
from strategies.learned.train import OrderTrainConfig, Trainer, frozen_pass, make_networks, policy_probs, resolve
from tasks.sudoku.task import SudokuTask


def random_case(generator, batch=64, n=12):
    scores = torch.randn(batch, n, generator=generator) * 3
    scores[:8] = scores[:8].round()                   # ties at the top
    masked = torch.rand(batch, n, generator=generator) < 0.5
    masked[8:12] = False
    masked[8:12, 5] = True                            # rows with a single masked position
    return scores, masked


def subsets(masked):
    """Every non-empty subset of the masked positions of a [N] mask, as bool [N] tensors."""
    where = masked.nonzero().squeeze(1).tolist()
    for size in range(1, len(where) + 1):
        for chosen in itertools.combinations(where, size):
            yield torch.zeros_like(masked).index_fill_(0, torch.tensor(chosen, dtype=torch.long), True)


@pytest.mark.parametrize("mode", ["sample", "threshold"])
@pytest.mark.parametrize("temperature", [0.05, 1.0, 20.0])
def test_reveals_at_least_one_masked_position_and_never_an_unmasked_one(mode, temperature):
    generator = torch.Generator().manual_seed(0)
    for _ in range(50):
        scores, masked = random_case(generator)
        masked[-1] = False                            # a finished row: nothing to reveal
        probs = reveal_probs(scores, masked, temperature, 1e-3)
        pick = choose_reveals(probs, masked, mode, generator)
        assert not (pick & ~masked).any()
        assert (pick.any(1) == masked.any(1)).all()
        if mode == "threshold":                       # p >= 0.5, or the best position when none is
            assert torch.equal(pick & (probs < 0.5), pick & ~(probs >= 0.5).any(1, keepdim=True))


def test_reveal_probabilities_stay_inside_eps_and_are_zero_off_the_mask():
    scores = torch.tensor([[-1e4, 0.0, 1e4, 5.0]])
    masked = torch.tensor([[True, True, True, False]])
    probs = reveal_probs(scores, masked, 1.0, 0.01)
    assert torch.allclose(probs, torch.tensor([[0.01, 0.5, 0.99, 0.0]]))


def test_conditioned_log_probabilities_sum_to_one_and_the_sampler_draws_them():
    """The exact sampler of "independent Bernoulli given at least one" against enumeration."""
    probs = torch.tensor([[0.05, 0.3, 0.0, 0.02]])
    masked = torch.tensor([[True, True, False, True]])
    exact = {tuple(r.tolist()): reveal_log_prob(probs, r[None], masked).exp().item() for r in subsets(masked[0])}
    assert sum(exact.values()) == pytest.approx(1.0, abs=1e-6)
    draws = choose_reveals(probs.expand(200_000, -1), masked.expand(200_000, -1), "sample",
                           torch.Generator().manual_seed(1))
    for reveal, p in exact.items():
        seen = (draws == torch.tensor(reveal)).all(1).double().mean().item()
        assert seen == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / 200_000) + 1e-4), reveal
    # the test can tell: unconditioned draws with the best position forced would not match
    assert exact[(False, False, False, True)] < 0.06


def enumerated_kl(q, p, masked):
    """KL(Q || P) of the conditioned distributions of one row, by enumerating every reveal."""
    total = 0.0
    for r in subsets(masked[0]):
        log_q, log_p = reveal_log_prob(q.double(), r[None], masked), reveal_log_prob(p.double(), r[None], masked)
        total += (log_q.exp() * (log_q - log_p)).item()
    return total


def test_kl_is_exact_and_finite_where_the_two_policies_disagree_most():
    generator = torch.Generator().manual_seed(1)
    masked = torch.tensor([[True, True, True, False, True]])
    for _ in range(20):
        q = reveal_probs(torch.randn(1, 5, generator=generator) * 4, masked, 1.0, 1e-3)
        p = reveal_probs(torch.randn(1, 5, generator=generator) * 4, masked, 1.0, 1e-3)
        assert reveal_kl(q.double(), p.double(), masked).item() == pytest.approx(enumerated_kl(q, p, masked),
                                                                                 rel=1e-6, abs=1e-9)
    # Q sure of position 0 and nothing else, P the opposite: the largest KL the family allows, finite
    q = torch.tensor([[1 - 1e-3, 1e-3, 1e-3, 0.0, 1e-3]])
    p = torch.tensor([[1e-3, 1 - 1e-3, 1 - 1e-3, 0.0, 1 - 1e-3]])
    kl = reveal_kl(q, p, masked)
    assert torch.isfinite(kl).all() and kl.item() > 10
    assert kl.item() == pytest.approx(enumerated_kl(q, p, masked), rel=1e-3)
    assert reveal_kl(q, q, masked).abs().item() < 1e-5
    assert reveal_kl(q, p, torch.zeros_like(masked)).item() == 0.0      # a finished row


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
    def self_included_loss(log_prob, r):
        return -((r - r.mean(1, keepdim=True)) * log_prob).mean()

    biased = estimated_gradient(theta, 200_000, 4, self_included_loss)
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
        table = torch.randn(2, tokens.shape[1], 8, generator=torch.Generator().manual_seed(6))
        hidden = table[masked.long(), torch.arange(tokens.shape[1])]   # a function of the mask only
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
    with pytest.raises(BenchError, match=r"order_policy_T5_init\.pt"):
        Learned(T=5, init=True).bind(Bound(tmp_path), FixedModel())


def test_init_with_a_policy_file_reads_the_initialisation_saved_beside_it(tmp_path):
    """A retrained policy's ablation (issue 29: helpers retrained under other seeds) is its own
    initialisation, not the shipped one."""
    trained, start = OrderNet(PolicyConfig(d_hidden=8)), OrderNet(PolicyConfig(d_hidden=8))
    folder = tmp_path / "seeds" / "1"
    folder.mkdir(parents=True)
    save_policy(folder / "order_policy_T5.pt", trained, None, "m", 5, 1.0, {})
    save_policy(folder / "order_policy_T5_init.pt", start, None, "m", 5, 1.0, {})
    ids = {}
    for init in (False, True):
        strategy = parse_strategy(f"learned:T=5,policy={folder / 'order_policy_T5.pt'},init={str(init).lower()}")
        strategy.bind(Bound(tmp_path), FixedModel())
        ids[init] = strategy.helper_ids()["order_policy"]
        assert strategy.policy_path.name == ("order_policy_T5_init.pt" if init else "order_policy_T5.pt")
    assert ids[False] != ids[True]


def test_a_policy_file_of_the_old_format_is_a_clear_error(tmp_path):
    network = OrderNet(PolicyConfig(d_hidden=8))
    save_policy(tmp_path / "p.pt", network, None, "m", 5, 1.0, {})
    payload = torch.load(tmp_path / "p.pt", weights_only=False)
    del payload["format"]
    torch.save(payload, tmp_path / "p.pt")
    with pytest.raises(BenchError, match="file format 1, this code reads format 2; retrain it with"):
        load_policy(tmp_path / "p.pt", "m", "sudoku", 5)


def test_bad_parameters_are_one_line_errors():
    with pytest.raises(BenchError, match="T must be at least 1"):
        parse_strategy("learned:T=0")
    with pytest.raises(BenchError, match="temperature must be > 0"):
        parse_strategy("learned:temperature=0")
    with pytest.raises(BenchError, match="mode='greedy' is not allowed"):
        parse_strategy("learned:mode=greedy")
    with pytest.raises(BenchError, match="objective='vi' is not allowed; choose from: reward, elbo"):
        resolve(OrderTrainConfig(T=5, objective="vi"), SudokuTask())
    from tasks.protein.task import ProteinTask
    with pytest.raises(BenchError, match="task protein has no per-input order reward; "
                                         "train its order with objective=elbo"):
        resolve(OrderTrainConfig(T=5, objective="reward"), ProteinTask())
    assert resolve(OrderTrainConfig(T=5), ProteinTask()).objective == "elbo"
    assert resolve(OrderTrainConfig(T=5), SudokuTask()).objective == "reward"
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


def toy_trainer(budget, model=None, objective="elbo", n=9):
    torch.manual_seed(0)
    cfg = resolve(OrderTrainConfig(T=budget, init_gamma=0.5, K=3, batch_size=2, objective=objective), SudokuTask())
    prior, posterior = make_networks(8, cfg)
    return Trainer(ToyTask(), model or FixedModel(n), prior, posterior, cfg), cfg


class ToyTask:
    """A task for the training loop: sampled values, reward = positions decoded as x0."""
    temperature = 1.0

    def order_reward(self, x0, tokens, log_q):
        return (tokens == x0).float().sum(1)


def toy_batch():
    x0 = torch.tensor([[1, 2, 3, 1, 2, 3, 1, 2, 3], [3, 3, 3, 2, 2, 2, 1, 1, 1]])
    masked = torch.ones_like(x0, dtype=torch.bool)
    masked[1, :3] = False                                     # three givens in the second example
    return x0, torch.where(masked, 0, x0), masked, x0 - 1


def test_rollouts_reveal_everything_within_t_and_score_every_revealed_position():
    trainer, cfg = toy_trainer(3)
    x0, start, masked, values = toy_batch()
    out = trainer.roller.run(x0, start, masked, values, cfg.K)
    log_probs = torch.log_softmax(trainer.model.logits, -1)                # [9, 3], the same in every state
    per_position = log_probs.gather(1, values.T).T                          # [2, 9]
    expected = (per_position * masked).sum(1).repeat_interleave(cfg.K)
    assert torch.allclose(out.loglik, expected, atol=1e-5)                 # every masked position, once
    assert (out.passes <= 3).all() and (out.passes >= 1).all()
    assert out.kl.abs().max() < 1e-5                                         # P and Q start equal


def order_tree(net, model, cfg, x0, tokens, masked, t):
    """[(probability, log p(x0 | order), expected positions decoded as x0)] of every order P = ``net``
    can take from this state, enumerated (the toy models' states depend on the mask only)."""
    if not masked.any():
        return [(1.0, 0.0, 0.0)]
    hidden, log_probs, lpx0 = frozen_pass(model, tokens, masked, x0 - 1)
    if t == cfg.T - 1:
        return [(1.0, lpx0[masked].sum().item(), lpx0[masked].exp().sum().item())]
    probs = policy_probs(net, hidden, log_probs, masked, t, cfg).detach().double()
    leaves = []
    for reveal in subsets(masked[0]):
        chance = reveal_log_prob(probs, reveal[None], masked).exp().item()
        gained, hits = lpx0[0, reveal].sum().item(), lpx0[0, reveal].exp().sum().item()
        after = order_tree(net, model, cfg, x0, torch.where(reveal[None], x0, tokens), masked & ~reveal[None], t + 1)
        leaves += [(chance * c, gained + ll, hits + h) for c, ll, h in after]
    return leaves


def elbo_by_enumeration(trainer, x0, tokens, masked, t):
    """E_Q[log p(x0 | order) - sum_t KL(Q_t || P_t)] from this state, enumerated over Q's reveals."""
    if not masked.any():
        return 0.0
    hidden, log_probs, lpx0 = frozen_pass(trainer.model, tokens, masked, x0 - 1)
    if t == trainer.cfg.T - 1:
        return lpx0[masked].sum().item()
    p = policy_probs(trainer.prior, hidden, log_probs, masked, t, trainer.cfg).detach().double()
    q = policy_probs(trainer.posterior, hidden, log_probs, masked, t, trainer.cfg, lpx0).detach().double()
    total = -reveal_kl(q, p, masked).item()
    for reveal in subsets(masked[0]):
        later = elbo_by_enumeration(trainer, x0, torch.where(reveal[None], x0, tokens), masked & ~reveal[None], t + 1)
        total += reveal_log_prob(q, reveal[None], masked).exp().item() * (lpx0[0, reveal].sum().item() + later)
    return total


def all_masked(x0):
    return torch.zeros_like(x0), torch.ones_like(x0, dtype=torch.bool)


def exact_prior_log_likelihood(trainer, x0):
    """(log p_P(x0) = log sum over orders of P(order) p(x0 | order), E_P[log p(x0 | order)], expected
    positions decoded as x0 with sampled values), enumerated."""
    leaves = order_tree(trainer.prior, trainer.model, trainer.cfg, x0, *all_masked(x0), 0)
    return (math.log(sum(c * math.exp(ll) for c, ll, _ in leaves)), sum(c * ll for c, ll, _ in leaves),
            sum(c * h for c, _, h in leaves))


def scrambled(trainer, seed):
    """The trainer with both policies' output layers randomised: P and Q differ, orders matter."""
    generator = torch.Generator().manual_seed(seed)
    for net in (trainer.prior, trainer.posterior):
        with torch.no_grad():
            net.mlp[-1].weight.copy_(torch.randn(net.mlp[-1].weight.shape, generator=generator) * 2)
            net.linear.weight.add_(torch.randn(net.linear.weight.shape, generator=generator) * 2)
    return trainer


def test_the_elbo_is_a_bound_enumerated_exactly_and_the_roller_estimates_it():
    x0 = torch.tensor([[1, 3, 2, 2]])
    for seed in range(3):
        trainer = scrambled(toy_trainer(3, SharpeningModel(4), n=4)[0], seed)
        elbo = elbo_by_enumeration(trainer, x0, *all_masked(x0), 0)
        log_px0 = exact_prior_log_likelihood(trainer, x0)[0]
        assert elbo <= log_px0 + 1e-6, (elbo, log_px0)
        with torch.no_grad():   # the training roller's ELBO is an unbiased estimate of the enumerated one
            out = trainer.roller.run(x0, *all_masked(x0), x0 - 1, 20_000)
        estimate = (out.loglik - out.kl).double()
        assert estimate.mean().item() == pytest.approx(elbo, abs=4 * estimate.std().item() / math.sqrt(20_000))


@pytest.mark.parametrize("objective", ["elbo", "reward"])
def test_training_steps_raise_the_priors_log_likelihood_on_a_toy_problem(objective):
    """On a model that sharpens as positions are revealed, revealing fewer per pass is better; a few
    steps of either objective must move P there (a sign error in any gradient would not)."""
    budget, model = 4, SharpeningModel(5)
    x0 = model.logits.argmax(-1)[None] + 1           # the values that get likelier as the logits sharpen
    trainer, cfg = toy_trainer(budget, model, objective, n=5)
    _, before, reward_before = exact_prior_log_likelihood(trainer, x0)
    opt = torch.optim.Adam(trainer.parameters(), lr=3e-2)
    batch = [x0.expand(8, -1), torch.zeros(8, 5, dtype=torch.long), torch.ones(8, 5, dtype=torch.bool),
             (x0 - 1).expand(8, -1)]
    for step in range(100):
        loss, stats = trainer.loss(batch, step)
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert all(math.isfinite(v) for v in stats.values())
    _, after, reward_after = exact_prior_log_likelihood(trainer, x0)
    assert after > before + 0.05, (before, after)
    assert reward_after > reward_before, (reward_before, reward_after)     # the task's reward rises with it


def test_position_scalars_add_the_true_token_only_for_the_posterior():
    state = random_state(torch.Generator().manual_seed(8))
    prior = position_scalars(state.log_probs, state.masked, 2, 10, 0.5)
    posterior = position_scalars(state.log_probs, state.masked, 2, 10, 0.5, torch.zeros(state.masked.shape))
    assert prior.shape[-1] + 1 == posterior.shape[-1] and torch.equal(prior, posterior[..., :-1])
    assert torch.allclose(prior[..., 0], state.entropy / math.log(5)) and torch.allclose(prior[..., 1],
                                                                                        state.confidence)
    assert prior.abs().max() <= 30    # normalised: no feature on a scale the optimiser cannot move


def test_sudoku_reward_is_the_tasks_solved_board():
    from tasks.sudoku.data import TEST_SET, read_puzzles
    from tasks.sudoku.hooks import solved_boards
    from tasks.sudoku.solver import breaks_rules
    pairs = read_puzzles(TEST_SET)
    grids = torch.as_tensor(pairs.solutions[:40], dtype=torch.long).clone()
    generator = torch.Generator().manual_seed(9)
    for row in range(0, 40, 2):                          # every other board: one cell changed
        cell = torch.randint(81, (1,), generator=generator).item()
        grids[row, cell] = grids[row, cell] % 9 + 1
    grids[1, 0] = 0                                      # a board with a blank left
    expected = [float(bool((g > 0).all()) and not breaks_rules(g.numpy())) for g in grids]
    assert solved_boards(grids).tolist() == expected and sum(expected) == 19
