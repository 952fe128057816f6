"""The learned order trained as its paper trains it: the relative posterior parameterisation (its
KL against enumeration) and the denoiser fine-tuned jointly (denoiser=joint) on a tiny hmm_mdm model."""
import hashlib

import pytest
import torch

from bench.decode import decode
from bench.errors import BenchError
from strategies.eb import EBSampler
from strategies.learned.policy import (
    OrderNet,
    PolicyConfig,
    choose_reveals,
    load_policy,
    position_scalars,
    reveal_kl,
    reveal_log_prob,
    reveal_probs,
)
from strategies.learned.strategy import Learned
from strategies.learned.train import OrderTrainConfig, denoiser_path, resolve, train_order
from tasks.hmm.model import HMMModelConfig, HMMTransformer, save_mdm
from tasks.hmm.task import HMMMDMTask, HMMTask
from tasks.sudoku.task import SudokuTask
from tests.test_learned import (
    SharpeningModel,
    ToyTask,
    all_masked,
    elbo_by_enumeration,
    enumerated_kl,
    exact_prior_log_likelihood,
    random_state,
    scrambled,
    subsets,
)


def relative(scores, masked, temperature=1.0, eps=1e-3):
    return reveal_probs(scores, masked, temperature, eps, "relative")


def test_relative_probabilities_give_the_best_masked_position_one_minus_eps():
    scores = torch.tensor([[9.0, 2.0, 2.0 - 0.6931471805599453, -50.0, 0.0]])
    masked = torch.tensor([[False, True, True, True, True]])          # position 0 is not masked: not the best
    probs = relative(scores, masked)
    assert probs[0, 0] == 0 and probs[0, 1] == pytest.approx(1 - 1e-3) and probs[0, 2] == pytest.approx(0.5)
    assert probs[0, 3] == pytest.approx(1e-3) and ((probs[masked] >= 1e-3) & (probs[masked] <= 1 - 1e-3)).all()
    finished = relative(scores, torch.zeros_like(masked))
    assert torch.equal(finished, torch.zeros_like(finished))                      # no NaN on a finished row


def test_relative_kl_is_exact_against_enumeration_and_finite():
    """KL(Q || P) of two relative policies (the same conditioned Bernoulli family) against enumerating
    every reveal, at several temperatures, including the most opposed pair the family allows."""
    generator = torch.Generator().manual_seed(11)
    masked = torch.tensor([[True, True, False, True, True]])
    for temperature in (0.1, 1.0, 5.0):
        for _ in range(10):
            q = relative(torch.randn(1, 5, generator=generator) * 4, masked, temperature).double()
            p = relative(torch.randn(1, 5, generator=generator) * 4, masked, temperature).double()
            assert reveal_kl(q, p, masked).item() == pytest.approx(enumerated_kl(q, p, masked), rel=1e-6, abs=1e-9)
    q = relative(torch.tensor([[100.0, -100.0, 0.0, -100.0, -100.0]]), masked).double()   # Q: position 0 alone
    p = relative(torch.tensor([[-100.0, 100.0, 0.0, 100.0, 100.0]]), masked).double()     # P: all but it
    kl = reveal_kl(q, p, masked)
    assert torch.isfinite(kl).all() and kl.item() > 10
    assert kl.item() == pytest.approx(enumerated_kl(q, p, masked), rel=1e-6)
    probs = relative(torch.randn(1, 5, generator=generator), masked).double()
    total = sum(reveal_log_prob(probs, r[None], masked).exp().item() for r in subsets(masked[0]))
    assert total == pytest.approx(1.0, abs=1e-9)                       # a distribution over non-empty reveals


def test_relative_kl_gradient_matches_the_enumerated_kl_gradient():
    masked = torch.tensor([[True, True, True, False]])
    q_scores = torch.tensor([[0.3, -1.0, 2.0, 0.0]], dtype=torch.float64, requires_grad=True)
    p_scores = torch.tensor([[1.0, 0.5, -0.4, 0.0]], dtype=torch.float64)

    def enumerated(scores):
        q, p = relative(scores, masked), relative(p_scores, masked)
        return sum(reveal_log_prob(q, r[None], masked).exp() * (reveal_log_prob(q, r[None], masked)
                                                                - reveal_log_prob(p, r[None], masked))
                   for r in subsets(masked[0]))

    ours = torch.autograd.grad(reveal_kl(relative(q_scores, masked), relative(p_scores, masked), masked).sum(),
                               q_scores)[0]
    exact = torch.autograd.grad(enumerated(q_scores).sum(), q_scores)[0]
    assert torch.allclose(ours, exact, atol=1e-9)


def test_untrained_relative_policy_thresholded_is_eb_sampler():
    generator = torch.Generator().manual_seed(4)
    for gamma in (0.1, 0.5, 2.0):
        network = OrderNet(PolicyConfig(d_hidden=8, init_gamma=gamma, param="relative"))
        for _ in range(5):
            state = random_state(generator)
            scores = network(state.out.hidden, position_scalars(state.log_probs, state.masked, 0, 10, gamma))
            pick = choose_reveals(relative(scores, state.masked), state.masked, "threshold")
            assert torch.equal(pick, EBSampler(gamma=gamma).select(state))


def test_the_relative_elbo_is_a_bound_enumerated_exactly_and_the_roller_estimates_it():
    """The ELBO of two relative policies, enumerated over Q's reveals, lies below log p_P(x0), and the
    training roller's ELBO estimates it without bias (as tests/test_learned.py checks for the sigmoid)."""
    import math

    from strategies.learned.train import Trainer, make_networks
    x0 = torch.tensor([[1, 3, 2, 2]])
    for seed in range(3):
        torch.manual_seed(0)
        cfg = resolve(OrderTrainConfig(T=3, init_gamma=0.5, K=3, batch_size=2, objective="elbo", param="relative"),
                      SudokuTask())
        trainer = scrambled(Trainer(ToyTask(), SharpeningModel(4), *make_networks(8, cfg), cfg), seed)
        elbo = elbo_by_enumeration(trainer, x0, *all_masked(x0), 0)
        assert elbo <= exact_prior_log_likelihood(trainer, x0)[0] + 1e-6
        with torch.no_grad():
            out = trainer.roller.run(x0, *all_masked(x0), x0 - 1, 20_000)
        estimate = (out.loglik - out.kl).double()
        assert estimate.mean().item() == pytest.approx(elbo, abs=4 * estimate.std().item() / math.sqrt(20_000))


# --- denoiser=joint on a tiny hmm_mdm model -----------------------------------------------------

TINY = dict(steps=3, batch_size=2, K=2, n_eval=2, eval_every=3, objective="elbo", T=8, d_inner=8)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A tiny untrained HMM MDM checkpoint written by the task's own save code."""
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny") / "tiny_mdm.pt"
    save_mdm(path, HMMTransformer(HMMModelConfig(n_layers=1, d_model=16, n_heads=2, d_ff=32)), {"tiny": True})
    return path


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def state_of(path):
    return torch.load(path, weights_only=True)["state_dict"]


def test_joint_training_changes_the_denoiser_and_its_checkpoint_decodes_through_model(tiny_model, tmp_path):
    before = digest(tiny_model)
    cfg = OrderTrainConfig(denoiser="joint", denoiser_lr=1e-2, param="relative", **TINY)
    policy = train_order(HMMMDMTask(model=str(tiny_model)), cfg, tmp_path / "order_policy_T8.pt", "cmd")
    assert digest(tiny_model) == before                                   # the base checkpoint is untouched
    tuned = denoiser_path(policy)
    old, new = state_of(tiny_model), state_of(tuned)
    assert set(old) == set(new) and any(not torch.equal(old[k], new[k]) for k in old)   # it learned
    task = HMMMDMTask(model=str(tuned))                                    # what `bench run --model` does
    model = task.load_model()
    assert model.meta["derived_from"] == HMMMDMTask(model=str(tiny_model)).load_model().checkpoint_id
    assert load_policy(policy, model.checkpoint_id, task.name, 8).cfg.param == "relative"
    with pytest.raises(BenchError, match="trained for model"):            # the policy belongs to the tuned model
        load_policy(policy, "another-model", task.name, 8)
    strategy = Learned(T=8, policy=str(policy))
    strategy.bind(task, model)
    tokens = torch.zeros(3, 64, dtype=torch.long)
    decoded = decode(model, tokens, torch.ones_like(tokens, dtype=torch.bool), strategy, 1.0)
    assert (decoded.passes <= 8).all() and not (decoded.tokens == 0).any()


def test_a_run_with_the_joint_pair_names_the_fine_tuned_model_in_its_identity(tiny_model, tmp_path):
    """`bench run --model <fine-tuned> --strategies learned:policy=<its policy>`: the result's identity
    holds the fine-tuned checkpoint's id, and its summary names the model it was fine-tuned from."""
    import json

    from bench.cli import main
    cfg = OrderTrainConfig(denoiser="joint", denoiser_lr=1e-2, **TINY)
    policy = train_order(HMMMDMTask(model=str(tiny_model)), cfg, tmp_path / "order_policy_T8.pt", "cmd")
    tuned = denoiser_path(policy)
    assert main(["run", "--tasks", "hmm_mdm", "--model", str(tuned), "--strategies", f"learned:T=8,policy={policy}",
                 "--limit", "2", "--out", str(tmp_path / "results")]) == 0
    (summary_path,) = (tmp_path / "results" / "hmm_mdm").glob("*.json")
    summary = json.loads(summary_path.read_text())
    tuned_id = HMMMDMTask(model=str(tuned)).load_model().checkpoint_id
    assert summary["config"]["model_id"] == tuned_id == summary["model"]["id"]
    assert summary["model"]["derived_from"] == HMMMDMTask(model=str(tiny_model)).load_model().checkpoint_id


@pytest.mark.parametrize("task_name", ["sudoku", "protein"])
def test_a_task_saves_a_fine_tuned_denoiser_as_its_model_option_loads_it(tmp_path, task_name):
    from bench.registry import TASKS, load_plugins
    load_plugins()
    task_class = TASKS[task_name]
    model = task_class().load_model()
    task_class().save_denoiser(model, tmp_path / "tuned.pt", {"derived_from": model.checkpoint_id})
    again = task_class(model=str(tmp_path / "tuned.pt")).load_model()
    assert again.meta["derived_from"] == model.checkpoint_id
    assert all(torch.equal(v, again.network.state_dict()[k]) for k, v in model.network.state_dict().items())


def test_frozen_training_leaves_the_denoiser_untouched(tiny_model, tmp_path):
    before, weights = digest(tiny_model), state_of(tiny_model)
    task = HMMMDMTask(model=str(tiny_model))
    policy = train_order(task, OrderTrainConfig(denoiser="frozen", **TINY), tmp_path / "order_policy_T8.pt", "cmd")
    assert digest(tiny_model) == before and not denoiser_path(policy).exists()
    model = task.load_model()
    assert all(torch.equal(weights[k], v) for k, v in model.network.state_dict().items())
    assert load_policy(policy, model.checkpoint_id, task.name, 8) is not None


def test_bad_joint_options_are_one_line_errors(tiny_model):
    with pytest.raises(BenchError, match="denoiser='tuned' is not allowed; choose from: frozen, joint"):
        resolve(OrderTrainConfig(T=5, objective="elbo", denoiser="tuned"), SudokuTask())
    with pytest.raises(BenchError, match="param='softmax' is not allowed; choose from: sigmoid, relative"):
        resolve(OrderTrainConfig(T=5, param="softmax"), SudokuTask())
    with pytest.raises(BenchError, match="denoiser=joint .* needs objective=elbo, got objective=reward"):
        resolve(OrderTrainConfig(T=5, denoiser="joint"), SudokuTask())
    with pytest.raises(BenchError, match="denoiser_lr must be > 0"):
        resolve(OrderTrainConfig(T=5, objective="elbo", denoiser="joint", denoiser_lr=0), SudokuTask())
    with pytest.raises(BenchError, match="task hmm has no trainable denoiser"):
        train_order(HMMTask(), OrderTrainConfig(denoiser="joint", **TINY))
    with pytest.raises(BenchError, match="unknown policy parameterisation 'x'; choose from: sigmoid, relative"):
        reveal_probs(torch.zeros(1, 2), torch.ones(1, 2, dtype=torch.bool), 1.0, 1e-3, "x")
