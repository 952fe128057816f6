"""`bench train order --task T [KEY=VALUE...]`: learn a generation order for a fixed step budget T.

The task's denoiser stays frozen; the policies are strategies/learned/policy.py's networks, whose
reveal distributions keep every probability in [eps, 1 - eps] (so every KL below is finite and
exact). Two objectives:

``objective=reward`` (the default where the task has a per-input reward): REINFORCE with the
leave-one-out (RLOO) baseline over K rollouts per example, on the generative policy P alone,
rolled out exactly as `bench run` decodes with strategy ``learned:mode=sample`` (the model's
values at the task's temperature, the same reveal distribution), rewarded by the task's own
quality of the decoded input (``order_reward``: Sudoku 1 for a solved board; the exact task
log p(x) - log q(x)). It trains the policy in the mode it is evaluated.

``objective=elbo``: variational inference after Fox et al. 2026. P_psi(r_t | x_t) and a posterior
Q_phi(r_t | x_t, x0) (which also reads log p(x0_n | x_t)) are trained together on orders rolled
out from Q revealing x0's values:

    ELBO = E_Q[ sum_t sum_{n in r_t} log p(x0_n | x_t)  -  sum_{t < T-1} KL(Q_t || P_t) ]  <=  log p_P(x0)

(p_P(x0) = sum over orders of P(order) p(x0 | order); a bound because each KL is the exact KL of
the two conditioned Bernoulli families.) phi gets REINFORCE on the whole return with the RLOO
baseline plus the KL's pathwise gradient; psi gets the KL's gradient.

``denoiser=joint`` (objective elbo; the default ``frozen`` keeps the task's model as it is): the
denoiser theta learns with the order, as the paper trains it. The ELBO's cross-entropy term
sum_t sum_{n in r_t} log p_theta(x0_n | x_t), on the states Q's orders visit, is differentiated
pathwise into theta (its own learning rate ``denoiser_lr``, small: the model is already trained;
the same warm-up and cosine decay). The policies read the denoiser's hidden states and
log-probabilities as *detached* inputs: theta gets the cross-entropy's gradient only, not the
gradient of the KL or of Q's REINFORCE term through those features (a partial gradient of the
ELBO in theta, which keeps the denoiser a denoiser rather than a feature extractor for the
policies). The fine-tuned denoiser is saved beside the policy by the task's own checkpoint code
(``save_denoiser``), and the policy records that checkpoint's id, so `bench run --model` with it
decodes with the pair.

Both run on the task's ``order_examples`` (training data only); ``n_eval`` of them are held out and
measured ``eval_every`` steps: the ELBO, P's log-likelihood E_P[log p(x0 | order)] (a lower
bound on log p_P(x0) by Jensen), and the task's quality of P's decodes, sampled and thresholded.
"""
import logging
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from bench.checkpoints import count_params, file_id
from bench.decode import decode
from bench.device import place, selected
from bench.errors import BenchError
from bench.registry import register_trainer, set_fields
from bench.training import setup_log
from strategies.learned import ORDER_TASK
from strategies.learned.policy import (
    PARAMS,
    OrderNet,
    PolicyConfig,
    choose_reveals,
    file_name,
    position_scalars,
    reinforce_loss,
    reveal_kl,
    reveal_log_prob,
    reveal_probs,
    save_policy,
)

log = logging.getLogger("train.order")
OBJECTIVES = ("reward", "elbo")
DENOISERS = ("frozen", "joint")   # the task's model as it is, or fine-tuned with the order (objective elbo)

# Per-task defaults come from the task's ``order_training``: batch (training examples per step),
# step_units (steps = step_units / T, so every budget gets about the same number of forward
# passes), n_eval (held-out examples) and init_gamma ({T: the EB-Sampler gamma that takes about T
# passes on the task}).


@dataclass
class OrderTrainConfig:
    T: int = 10                   # step budget: the T-th pass reveals everything still masked
    objective: str = ""           # reward or elbo ("": reward where the task has an order_reward)
    steps: int = 0                # optimiser steps (0: the task's order_training step_units / T)
    batch_size: int = 0           # training examples per step, each rolled out K times (0: task default)
    K: int = 4                    # rollouts per example (RLOO baseline over the other K - 1)
    lr: float = 1e-2              # peak learning rate (20 warm-up steps, cosine decay to 10%)
    temperature: float = 1.0      # of the reveal probabilities; the networks learn their own scale
    eps: float = 1e-3             # every reveal probability lies in [eps, 1 - eps]
    init_sharpness: float = 4.0   # initial score a (1 - EB cost / gamma)
    match_weight: float = 0.0     # objective reward: adds this times the share of positions decoded as x0
                                  # (dense shaping)
    loglik_weight: float = 0.0    # objective reward: adds this times the mean log p(x0_n | x_t) at each reveal
                                  # (dense shaping)
    d_inner: int = 64             # width of the policy MLPs (0: a linear policy on the features alone)
    init_gamma: float = 0.0       # the policies start as EB-Sampler with this gamma
                                  # (0: the task's order_training init_gamma[T])
    log_every: int = 10           # optimiser steps per point of the training curve
    n_eval: int = 0               # training examples set aside for the held-out measurements (0: task default)
    eval_every: int = 0           # steps between held-out measurements (0: ten per run)
    seed: int = 0
    threads: int = 1              # torch CPU threads (one: training shares the machine)
    denoiser: str = "frozen"      # DENOISERS: frozen, or joint (objective elbo: fine-tuned with the ELBO's
                                  # cross-entropy, saved beside the policy)
    denoiser_lr: float = 3e-5     # peak learning rate of the denoiser under denoiser=joint (3% of the
                                  # shipped models' pretraining peak 1e-3: it is trained already)
    param: str = "sigmoid"        # PARAMS: how both policies turn scores into reveal probabilities


def resolve(cfg, task):
    """Fill the task's defaults (its ``order_training``) into ``cfg`` and check it; returns cfg."""
    ORDER_TASK.check(task, "bench train order")
    defaults = task.order_training
    if not defaults:
        raise BenchError(f"task {task.name} has no order_training defaults; it cannot train a learned order")
    cfg.objective = cfg.objective or defaults.get("objective", "elbo")
    cfg.batch_size = cfg.batch_size or defaults["batch"]
    cfg.steps = cfg.steps or max(1, round(defaults["step_units"] / cfg.T))
    cfg.n_eval = cfg.n_eval or defaults["n_eval"]
    cfg.eval_every = cfg.eval_every or max(1, cfg.steps // 10)
    cfg.init_gamma = cfg.init_gamma or defaults["init_gamma"].get(cfg.T, 0.0)
    check_choices(cfg)
    if cfg.objective == "reward" and not has_reward(task):
        raise BenchError(f"task {task.name} has no per-input order reward; train its order with objective=elbo")
    if cfg.init_gamma <= 0:
        raise BenchError(f"no default init_gamma for T={cfg.T} on {task.name} (defaults for T in "
                         f"{', '.join(map(str, defaults['init_gamma']))}); give init_gamma=G > 0")
    if cfg.T < 2:
        raise BenchError(f"T must be at least 2 (T=1 reveals everything at once and has nothing to learn), got {cfg.T}")
    if cfg.K < 2:
        raise BenchError(f"K must be at least 2 for the leave-one-out baseline, got {cfg.K}")
    if not (cfg.temperature > 0 and 0 < cfg.eps < 0.5):
        raise BenchError(f"need temperature > 0 and 0 < eps < 0.5, got {cfg.temperature}, {cfg.eps}")
    return cfg


def check_choices(cfg):
    """One-line errors for the options with a fixed set of values, and denoiser=joint's needs."""
    for key, allowed in (("objective", OBJECTIVES), ("denoiser", DENOISERS), ("param", PARAMS)):
        if getattr(cfg, key) not in allowed:
            raise BenchError(f"{key}={getattr(cfg, key)!r} is not allowed; choose from: {', '.join(allowed)}")
    if cfg.denoiser == "joint" and cfg.objective != "elbo":
        raise BenchError(f"denoiser=joint trains the denoiser on the ELBO's cross-entropy; it needs objective=elbo, "
                         f"got objective={cfg.objective}")
    if not cfg.denoiser_lr > 0:
        raise BenchError(f"denoiser_lr must be > 0, got {cfg.denoiser_lr}")


def check_trainable(task, model):
    """denoiser=joint needs a torch network behind the model and the task's way to save it."""
    if not isinstance(getattr(model, "network", None), torch.nn.Module) or not hasattr(task, "save_denoiser"):
        raise BenchError(f"task {task.name} has no trainable denoiser (a torch network and the task's "
                         f"save_denoiser); train its order with denoiser=frozen")


def has_reward(task):
    """Whether ``task`` defines a per-input ``order_reward`` (protein does not: its quality is a set metric)."""
    return hasattr(task, "order_reward")


def value_index(model, x0):
    """[n, N] index of each token of ``x0`` among the model's values (0 where it is no value)."""
    lut = torch.zeros(int(max(model.value_tokens.max(), x0.max())) + 1, dtype=torch.long)
    lut[model.value_tokens] = torch.arange(len(model.value_tokens))
    return lut[x0]


def frozen_pass(model, tokens, masked, values):
    """(hidden, log_probs, log p(x0_n | x_t)) of one denoiser pass, as ordinary tensors."""
    with torch.no_grad():
        out = model(tokens, masked)
    log_probs = torch.log_softmax(out.logits.float().cpu().clone(), -1)   # clones leave inference mode
    return out.hidden.float().cpu().clone(), log_probs, log_probs.gather(-1, values[..., None]).squeeze(-1)


def joint_pass(model, tokens, masked, values):
    """(hidden, log_probs, log p(x0_n | x_t)) of one pass with gradient into the denoiser: the
    policies' inputs (hidden, log_probs) detached, log p(x0) not (the ELBO's cross-entropy term)."""
    device = next(model.network.parameters()).device
    out = model.forward(tokens.to(device), masked.to(device))   # the network's own pass, outside inference mode
    log_probs = torch.log_softmax(out.logits.float().cpu(), -1)
    lpx0 = log_probs.gather(-1, values[..., None]).squeeze(-1)
    return out.hidden.float().cpu().detach(), log_probs.detach(), lpx0


def policy_probs(network, hidden, log_probs, masked, t, cfg, lpx0=None):
    """[B, N] the reveal probabilities of ``network`` at step t (with gradient)."""
    scalars = position_scalars(log_probs, masked, t, cfg.T, network.cfg.init_gamma, lpx0)
    return reveal_probs(network(hidden, scalars), masked, cfg.temperature, network.cfg.eps, network.cfg.param)


@dataclass
class Rollout:
    """Per-row sums over one rolled-out order (rows = examples x orders)."""
    loglik: torch.Tensor     # [R] sum of log p(x0_n | x_t) over every revealed position
    kl: torch.Tensor         # [R] sum over steps of KL(Q_t || P_t) (with gradient; 0 for orders from P)
    log_q: torch.Tensor      # [R] log-probability of the sampled order under the policy drawn from (with gradient)
    passes: torch.Tensor     # [R] forward passes the order took


class Roller:
    """Rolls out orders of a batch revealing x0's values, drawn from Q (``use='posterior'``) or P (``'prior'``).

    Args:
        model: the MaskedModel (its passes carry gradient into it where ``cfg.denoiser`` is joint and
            gradients are on).
        prior: P_psi, an OrderNet without the true-token feature.
        posterior: Q_phi, an OrderNet with it (None: only ``use='prior'`` works).
        cfg: the OrderTrainConfig (T, temperature).
        generator: torch.Generator of the Bernoulli draws.
    """

    def __init__(self, model, prior, posterior, cfg, generator):
        self.model, self.prior, self.posterior = model, prior, posterior
        self.cfg, self.generator = cfg, generator

    def step(self, view, masked, t, use):
        """(reveal, log-probability of the reveal, KL(Q_t || P_t)) of one step before the last;
        ``view`` = (hidden, log_probs, log p(x0))."""
        hidden, log_probs, lpx0 = view
        p = policy_probs(self.prior, hidden, log_probs, masked, t, self.cfg)
        if use == "prior":
            reveal = choose_reveals(p.detach(), masked, "sample", self.generator)
            return reveal, reveal_log_prob(p, reveal, masked), torch.zeros(len(masked))
        q = policy_probs(self.posterior, hidden, log_probs, masked, t, self.cfg, lpx0.detach())
        reveal = choose_reveals(q.detach(), masked, "sample", self.generator)
        return reveal, reveal_log_prob(q, reveal, masked), reveal_kl(q, p, masked)

    def run(self, x0, start, start_masked, values, k, use="posterior"):
        """Roll out ``k`` orders per example; a Rollout over the B * k rows (example-major).

        Args:
            x0: [B, N] the true tokens.
            start: [B, N] tokens of the start state.
            start_masked: [B, N] bool, the positions masked at the start.
            values: [B, N] index of each true token among the model's values.
            k: orders per example.
            use: ``posterior`` (draw from Q) or ``prior`` (draw from P).
        """
        first = [part.repeat_interleave(k, 0) for part in self.model_pass(start, start_masked, values)]
        x0, values = x0.repeat_interleave(k, 0), values.repeat_interleave(k, 0)
        tokens, masked = start.repeat_interleave(k, 0), start_masked.repeat_interleave(k, 0)
        out = Rollout(torch.zeros(len(x0)), torch.zeros(len(x0)), torch.zeros(len(x0)),
                      torch.zeros(len(x0), dtype=torch.long))
        for t in range(self.cfg.T):
            idx = masked.any(1).nonzero().squeeze(1)
            if idx.numel() == 0:
                break
            view = [part[idx] for part in first] if t == 0 else self.model_pass(
                tokens[idx], masked[idx], values[idx])    # the start state's pass is shared
            reveal = self.reveal(view, masked[idx], t, use, idx, out)
            tokens[idx] = torch.where(reveal, x0[idx], tokens[idx])
            masked[idx] &= ~reveal
        return out

    def model_pass(self, tokens, masked, values):
        """The denoiser's pass: with gradient into it under denoiser=joint while training, else frozen."""
        if self.cfg.denoiser == "joint" and torch.is_grad_enabled():
            return joint_pass(self.model, tokens, masked, values)
        return frozen_pass(self.model, tokens, masked, values)

    def reveal(self, view, masked, t, use, idx, out):
        """The positions revealed at step t (all that is left at the last step); adds the step to ``out``."""
        if t == self.cfg.T - 1:
            reveal = masked
        else:
            reveal, log_q, kl = self.step(view, masked, t, use)
            out.log_q, out.kl = out.log_q.index_add(0, idx, log_q), out.kl.index_add(0, idx, kl)
        out.loglik = out.loglik.index_add(0, idx, view[2].masked_fill(~reveal, 0.0).sum(1))
        out.passes[idx] += 1
        return reveal


@dataclass
class Play:
    """P's decodes of a batch, made as `bench run` makes them."""
    tokens: torch.Tensor     # [B, N] decoded tokens
    log_q: torch.Tensor      # [B] float64 log-probability of the drawn values (0 for argmax values)
    log_pi: torch.Tensor     # [B] log-probability of the order under P (with gradient; 0 thresholded)
    passes: torch.Tensor     # [B] forward passes
    loglik: torch.Tensor     # [B] sum over revealed positions of log p(x0_n | x_t) at the pass revealing them


class PolicyRecorder:
    """The strategy ``learned`` does with the policy under training (its reveal distribution, its
    last-pass rule), recording per input the log-probability of its reveals (with gradient) and,
    with ``values``, log p(x0_n | x_t) at the pass that revealed n. Decodes with input index = row."""
    name = "learned (training)"

    def __init__(self, policy, cfg, mode, rows, values=None):
        self.policy, self.cfg, self.mode, self.values = policy, cfg, mode, values
        self.log_pi, self.loglik = torch.zeros(rows), torch.zeros(rows)

    def select(self, state):
        rows, masked = state.streams.index, state.masked
        logits = state.out.logits.float().clone()                 # clones leave inference mode
        if state.step == self.cfg.T - 1:
            pick = masked
        else:
            probs = policy_probs(self.policy, state.out.hidden.float().clone(), torch.log_softmax(logits, -1),
                                 masked, state.step, self.cfg)
            uniforms = state.uniform("learned:train") if self.mode == "sample" else None
            pick = choose_reveals(probs.detach(), masked, self.mode, uniforms=uniforms)
            if self.mode == "sample":
                self.log_pi = self.log_pi.index_add(0, rows, reveal_log_prob(probs, pick, masked))
        if self.values is not None:
            x0_lp = torch.log_softmax(logits, -1).gather(-1, self.values[rows][..., None]).squeeze(-1)
            self.loglik[rows] += x0_lp.masked_fill(~pick, 0.0).sum(1)
        return pick


def play(model, policy, start, start_masked, cfg, value_temperature, seed, mode="sample", values=None):
    """Decode ``start`` [B, N] through the benchmark's decode loop with the policy as strategy
    ``learned`` (PolicyRecorder); ``seed`` keys every random number (bench.streams), so a play is
    reproducible. ``values`` [B, N]: x0's value indices, for ``loglik``."""
    recorder = PolicyRecorder(policy, cfg, mode, len(start), values)
    decoded = decode(model, start, start_masked, recorder, value_temperature, seed=seed)
    return Play(decoded.tokens, decoded.log_q, recorder.log_pi, decoded.passes, recorder.loglik)


def lr_factor(step, total, warmup=20):
    """Linear warm-up, then cosine decay to 10% of the peak."""
    if step < warmup:
        return (step + 1) / warmup
    return 0.1 + 0.45 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


class Trainer:
    """The policies of one training run with the steps and measurements of its objective.

    Args:
        task: the task (its ``order_reward`` and ``temperature``).
        model: the frozen MaskedModel.
        prior: P_psi.
        posterior: Q_phi (objective elbo) or None (objective reward).
        cfg: the resolved OrderTrainConfig.
    """

    def __init__(self, task, model, prior, posterior, cfg):
        self.task, self.model, self.prior, self.posterior, self.cfg = task, model, prior, posterior, cfg
        self.generator = torch.Generator().manual_seed(cfg.seed)
        self.roller = Roller(model, prior, posterior, cfg, self.generator)

    def parameters(self):
        """The policies' parameters."""
        return [p for net in (self.prior, self.posterior) if net is not None for p in net.parameters()]

    def denoiser_parameters(self):
        """The denoiser's parameters under denoiser=joint, else none (it stays frozen)."""
        return list(self.model.network.parameters()) if self.cfg.denoiser == "joint" else []

    def loss(self, batch, step):
        """(loss, stats) of one optimiser step's batch (x0, start, start_masked, values)."""
        return self.elbo_loss(batch) if self.cfg.objective == "elbo" else self.reward_loss(batch, step)

    def elbo_loss(self, batch):
        """K orders per example from Q: RLOO REINFORCE for phi, the KL for phi and psi."""
        cfg, (x0, start, start_masked, values) = self.cfg, batch
        out = self.roller.run(x0, start, start_masked, values, cfg.K)
        elbo = (out.loglik - out.kl).detach()
        loss = reinforce_loss(out.log_q.view(-1, cfg.K), elbo.view(-1, cfg.K)) + out.kl.mean()
        if out.loglik.requires_grad:          # denoiser=joint: the cross-entropy, pathwise into theta
            loss = loss - out.loglik.mean()
        return loss, {"elbo": elbo.mean().item(), "loglik": out.loglik.mean().item(), "kl": out.kl.mean().item(),
                      "passes": out.passes.float().mean().item()}

    def reward_loss(self, batch, step):
        """K decodes per example from P, as `bench run` makes them: RLOO REINFORCE on the task's reward."""
        cfg = self.cfg
        x0, start, start_masked, values = (part.repeat_interleave(cfg.K, 0) for part in batch)
        decoded = play(self.model, self.prior, start, start_masked, cfg, self.task.temperature,
                       cfg.seed * 2 ** 24 + step + 1, values=values)
        reward = self.task.order_reward(x0, decoded.tokens, decoded.log_q).float()
        shaped = (reward + cfg.match_weight * (decoded.tokens == x0).float().mean(1)
                  + cfg.loglik_weight * decoded.loglik / start_masked.sum(1).clamp_min(1))
        loss = reinforce_loss(decoded.log_pi.view(-1, cfg.K), shaped.view(-1, cfg.K))
        return loss, {"reward": reward.mean().item(), "passes": decoded.passes.float().mean().item()}

    @torch.no_grad()
    def measure(self, held_out):
        """Held-out numbers, with the same random numbers every time (they differ by the policies only):
        P's log-likelihood of x0 along its own orders, the task's reward of P's decodes sampled and
        thresholded, and for objective elbo the ELBO from Q."""
        cfg, (x0, start, start_masked, _) = self.cfg, held_out
        stats = {"loglik_p": self.rollout(held_out, "prior").loglik.mean().item()}
        for mode in ("sample", "threshold"):
            decoded = play(self.model, self.prior, start, start_masked, cfg, self.task.temperature, 2 ** 40 + cfg.seed,
                           mode)
            if has_reward(self.task):
                reward = self.task.order_reward(x0, decoded.tokens, decoded.log_q).float()
                stats[f"reward_{mode}"] = reward.mean().item()
            stats[f"passes_{mode}"] = decoded.passes.float().mean().item()
        if self.posterior is not None:
            from_q = self.rollout(held_out, "posterior")
            stats.update(elbo=(from_q.loglik - from_q.kl).mean().item(), kl=from_q.kl.mean().item())
        return stats

    def rollout(self, held_out, use):
        """One order per held-out example from P or Q with a fixed generator."""
        generator, self.roller.generator = self.roller.generator, torch.Generator().manual_seed(self.cfg.seed + 1)
        out = self.roller.run(*held_out, 1, use)
        self.roller.generator = generator
        return out


def make_networks(d_hidden, cfg):
    """(P_psi, Q_phi or None), both starting as EB-Sampler with gamma = cfg.init_gamma."""
    def order_net(posterior):
        return OrderNet(PolicyConfig(d_hidden, cfg.d_inner, posterior, cfg.init_gamma, cfg.init_sharpness, cfg.eps,
                                     cfg.param))

    return order_net(False), (order_net(True) if cfg.objective == "elbo" else None)


def batches(n_train, cfg, generator):
    """Index tensors of training examples, one per step (reshuffled each epoch)."""
    order = torch.randperm(n_train, generator=generator)
    for step in range(cfg.steps):
        start = (step * cfg.batch_size) % n_train
        if start + cfg.batch_size > n_train:
            order, start = torch.randperm(n_train, generator=generator), 0
        yield order[start:start + cfg.batch_size]


def fit(trainer, data, held_out):
    """Train the policies (and the denoiser under denoiser=joint) in place; returns (training curve,
    held-out curve). Each has its own learning rate and its own gradient clip, so the denoiser's
    larger gradient does not shrink the policies' steps."""
    cfg, params, theta = trainer.cfg, trainer.parameters(), trainer.denoiser_parameters()
    groups = [{"params": params, "lr": cfg.lr}] + ([{"params": theta, "lr": cfg.denoiser_lr}] if theta else [])
    opt = torch.optim.Adam(groups)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg.steps))
    curve, evals, window = [], [dict(step=0, **trainer.measure(held_out))], []
    log.info("step 0 held-out %s", stats_text(evals[-1]))
    scale = data[2].sum(1).float().mean()                      # per masked position, for a stable clip
    bar = tqdm(enumerate(batches(len(data[0]), cfg, trainer.generator)), total=cfg.steps, desc=f"order T={cfg.T}")
    for step, rows in bar:
        loss, stats = trainer.loss([part[rows] for part in data], step)
        opt.zero_grad()
        (loss / scale).backward()
        for group in groups:
            torch.nn.utils.clip_grad_norm_(group["params"], 1.0)
        opt.step()
        sched.step()
        window.append(stats)
        if (step + 1) % cfg.log_every == 0 or step + 1 == cfg.steps:
            curve.append({"step": step + 1, **{k: sum(w[k] for w in window) / len(window) for k in window[0]}})
            window = []
            log.info("step %d train %s", step + 1, stats_text(curve[-1]))
            bar.set_postfix({k: f"{v:.3f}" for k, v in curve[-1].items() if k != "step"})
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            evals.append(dict(step=step + 1, **trainer.measure(held_out)))
            log.info("step %d held-out %s", step + 1, stats_text(evals[-1]))
    return curve, evals


def stats_text(stats):
    return " ".join(f"{k} {v:.4f}" for k, v in stats.items() if k != "step")


def default_path(task, cfg):
    """Where a policy goes without --out: the task's order_policy_T{T}.pt, or under denoiser=joint
    weights/joint/ (a joint pair never overwrites the shipped frozen-denoiser policy)."""
    folder = Path(task.weights_dir) / ("joint" if cfg.denoiser == "joint" else "")
    return folder / file_name(cfg.T)


def denoiser_path(policy_path):
    """The fine-tuned denoiser's checkpoint beside its policy: order_policy_T5.pt -> order_policy_T5_denoiser.pt."""
    return Path(policy_path).with_name(Path(policy_path).stem + "_denoiser.pt")


def save_joint_denoiser(task, model, path, meta):
    """Save the fine-tuned denoiser with the task's checkpoint code; returns its checkpoint id (what
    the policy beside it records, and what `bench run --model PATH` names the model)."""
    task.save_denoiser(model, path, meta)
    return file_id(path)


def train_order(task, cfg, out=None, command=None):
    """Train and save the order policy of ``task``'s model at budget ``cfg.T``; its untrained
    initialisation is saved beside it (``*_init.pt``). Under denoiser=joint the fine-tuned denoiser
    is saved beside it too (``*_denoiser.pt``), and the policy belongs to that checkpoint.

    Args:
        task: a task with ``order_examples`` and ``order_training`` (and ``order_reward`` for objective reward).
        cfg: an OrderTrainConfig; task defaults fill its zero fields.
        out: where to write the weights (default: the task's order_policy_T{T}.pt).
        command: the command line that made it (recorded; default the plain `bench train order`).

    Returns:
        The path of the saved policy.
    """
    cfg = resolve(cfg, task)
    torch.manual_seed(cfg.seed)
    model = place(task.load_model(), selected())   # the model on --device; the policies stay on the CPU
    if cfg.denoiser == "joint":
        check_trainable(task, model)
    base_id = model.checkpoint_id
    x0, start, start_masked = task.order_examples()
    keep = start_masked.any(1)
    data = [x0[keep], start[keep], start_masked[keep], value_index(model, x0)[keep]]
    held_out = [part[-cfg.n_eval:] for part in data]
    data = [part[:-cfg.n_eval] for part in data]
    log.info("task %s model %s: %d training examples, %d held out; config %s", task.name, model.checkpoint_id,
             len(data[0]), cfg.n_eval, asdict(cfg))
    prior, posterior = make_networks(frozen_pass(model, *held_out[1:3], held_out[3])[0].shape[-1], cfg)
    path = Path(out or default_path(task, cfg))
    save_policy(path.with_name(path.stem + "_init.pt"), prior.eval(), None, model.checkpoint_id, cfg.T, cfg.temperature,
                {"untrained": True, "train_config": asdict(cfg)})
    began = time.perf_counter()
    curve, evals = fit(Trainer(task, model, prior.train(), posterior, cfg), data, held_out)
    seconds = round(time.perf_counter() - began, 1)
    meta = {"train_config": asdict(cfg), "curve": curve, "held_out": evals, "seconds": seconds,
            "train_examples": len(data[0]), "n_params": sum(count_params(n) for n in (prior, posterior) if n),
            "command": command or f"python -m bench train order --task {task.name}{task.helper_flags()} T={cfg.T}"}
    model_id = base_id
    if cfg.denoiser == "joint":
        model_id = save_joint_denoiser(task, model, denoiser_path(path), {**meta, "derived_from": base_id,
                                                                          "policy": path.name})
        meta = {**meta, "derived_from": base_id, "denoiser": denoiser_path(path).name}
        log.info("saved the fine-tuned denoiser %s: model %s (from %s)", denoiser_path(path), model_id, base_id)
    save_policy(path, prior.eval(), posterior and posterior.eval(), model_id, cfg.T, cfg.temperature, meta)
    log.info("saved %s: held-out %s -> %s, %.0f s", path, stats_text(evals[0]), stats_text(evals[-1]), seconds)
    return path


@register_trainer("order", "the learned order policy of --task's model at budget T (T=5, 10, 15)")
def train_order_command(task, settings, out):
    """`bench train order --task T KEY=VALUE...`."""
    cfg = resolve(set_fields(OrderTrainConfig(), settings, "order training"), task)
    torch.set_num_threads(cfg.threads)
    path = out or default_path(task, cfg)
    setup_log(str(path).replace(".pt", ".log"))
    words = (["python", "-m", "bench", "train", "order", "--task", task.name, *settings]
             + (["--out", str(out)] if out else []))
    log.info("command: %s", " ".join(words))
    path = train_order(task, cfg, path, " ".join(words))
    print(f"saved {path}")
