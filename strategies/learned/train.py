"""`bench train order --task T [KEY=VALUE...]`: learn a generation order by variational inference.

The task's denoiser stays frozen. Two policies over reveal vectors (independent Bernoullis,
strategies/learned/policy.py) are trained together: the generative policy P_psi(r_t | x_t) and
the posterior Q_phi(r_t | x_t, x_0), whose features also hold log p(x0_n | x_t). Orders are
rolled out from Q, starting at the task's start state (Sudoku: a training puzzle's blanks
masked; protein: a training sequence fully masked; the task's ``order_examples``) and revealing x_0's values. With a fixed
step budget T (the T-th pass reveals everything still masked; no step penalty) the ELBO of x_0
is

    ELBO = E_Q[ sum_t sum_{n in r_t} log p(x0_n | x_t)  -  sum_{t < T-1} KL(Q_t || P_t) ]

with the KL analytic per step. phi gets REINFORCE on the whole return with the leave-one-out
(RLOO) baseline over K orders per example, plus the KL's pathwise gradient; psi gets the KL's
gradient. Training data only (the task's ``order_examples``: Sudoku's hard training puzzles, protein's training split);
``n_eval`` of them are set aside to measure the ELBO curve and are never trained on.
"""
import logging
import math
import time
from dataclasses import asdict, dataclass

import torch
from tqdm import tqdm

from bench.checkpoints import count_params
from bench.device import place, selected
from bench.errors import BenchError
from bench.registry import register_trainer, set_fields
from bench.training import setup_log
from strategies.learned.policy import (OrderNet, PolicyConfig, bernoulli_kl, bernoulli_log_prob, choose_reveals,
                                     file_name, position_scalars, reinforce_loss, reveal_log_probs,
                                     save_policy)

log = logging.getLogger("train.order")

# Per-task defaults come from the task's ``order_training``: batch (training examples per step),
# step_units (steps = step_units / T, so every budget gets about the same number of forward
# passes), n_eval (held-out examples) and init_gamma ({T: the EB-Sampler gamma that takes about T
# passes on the task}).


@dataclass
class OrderTrainConfig:
    T: int = 10                   # step budget: the T-th pass reveals everything still masked
    steps: int = 0                # optimiser steps (0: the task's order_training step_units / T)
    batch_size: int = 0           # training examples per step, each rolled out K times (0: task default)
    K: int = 4                    # orders per example (RLOO baseline over the other K - 1)
    lr: float = 3e-3              # peak learning rate (20 warm-up steps, cosine decay to 10%)
    temperature: float = 1.0      # of the reveal probabilities; the networks learn their own scale
    kl_eps: float = 1e-3          # probabilities are clamped to [eps, 1 - eps] inside the KL
    d_inner: int = 64             # width of both policy MLPs
    init_gamma: float = 0.0       # both policies start as EB-Sampler with this gamma (0: the task's order_training init_gamma[T])
    log_every: int = 10           # optimiser steps per point of the training curve
    n_eval: int = 0               # training examples set aside for the ELBO measurements (0: task default)
    eval_every: int = 0           # steps between ELBO measurements (0: five per run)
    seed: int = 0
    threads: int = 1              # torch CPU threads (one: training shares the machine)


def resolve(cfg, task):
    """Fill the task's defaults (its ``order_training``) into ``cfg`` and check it; returns cfg."""
    defaults = task.order_training
    if not defaults:
        raise BenchError(f"task {task.name} has no order_training defaults; it cannot train a learned order")
    cfg.batch_size = cfg.batch_size or defaults["batch"]
    cfg.steps = cfg.steps or max(1, round(defaults["step_units"] / cfg.T))
    cfg.n_eval = cfg.n_eval or defaults["n_eval"]
    cfg.eval_every = cfg.eval_every or max(1, cfg.steps // 5)
    cfg.init_gamma = cfg.init_gamma or defaults["init_gamma"].get(cfg.T, 0.0)
    if cfg.init_gamma <= 0:
        raise BenchError(f"no default init_gamma for T={cfg.T} on {task.name} (defaults for T in "
                         f"{', '.join(map(str, defaults['init_gamma']))}); give init_gamma=G > 0")
    if cfg.T < 2:
        raise BenchError(f"T must be at least 2 (T=1 reveals everything at once and has nothing to learn), got {cfg.T}")
    if cfg.K < 2:
        raise BenchError(f"K must be at least 2 for the leave-one-out baseline, got {cfg.K}")
    if not (cfg.temperature > 0 and 0 < cfg.kl_eps < 0.5):
        raise BenchError(f"need temperature > 0 and 0 < kl_eps < 0.5, got {cfg.temperature}, {cfg.kl_eps}")
    return cfg


def value_index(model, x0):
    """[n, N] index of each token of ``x0`` among the model's values (0 where it is no value)."""
    lut = torch.zeros(int(max(model.value_tokens.max(), x0.max())) + 1, dtype=torch.long)
    lut[model.value_tokens] = torch.arange(len(model.value_tokens))
    return lut[x0]


def frozen_pass(model, tokens, masked, values):
    """(hidden, log_probs, log p(x0_n | x_t)) of one denoiser pass, as ordinary tensors."""
    out = model(tokens, masked)
    log_probs = torch.log_softmax(out.logits.float().clone(), -1)
    return out.hidden.float().clone(), log_probs, log_probs.gather(-1, values[..., None]).squeeze(-1)


@dataclass
class Rollout:
    """Per-row sums over one rolled-out order (rows = examples x orders)."""
    loglik: torch.Tensor     # [R] sum of log p(x0_n | x_t) over every revealed position
    kl: torch.Tensor         # [R] sum over steps of KL(Q_t || P_t) (with gradient)
    log_q: torch.Tensor      # [R] log Q of the sampled order (with gradient)
    passes: torch.Tensor     # [R] forward passes the order took


class Roller:
    """Rolls out orders of a batch with x0's values, drawn from Q (``use='posterior'``) or P (``'prior'``).

    Args:
        model: the frozen MaskedModel.
        prior: P_psi, an OrderNet without the true-token feature.
        posterior: Q_phi, an OrderNet with it.
        cfg: the OrderTrainConfig (T, temperature, kl_eps).
        generator: torch.Generator of the Bernoulli draws.
    """

    def __init__(self, model, prior, posterior, cfg, generator):
        self.model, self.prior, self.posterior = model, prior, posterior
        self.cfg, self.generator = cfg, generator

    def step(self, view, masked, t, use):
        """(reveal, log Q(reveal), KL(Q_t || P_t)) of one step before the last; ``view`` = (hidden,
        log_probs, log p(x0))."""
        hidden, log_probs, lpx0 = view
        cfg = self.cfg
        log_p = reveal_log_probs(self.prior(hidden, position_scalars(log_probs, masked, t, cfg.T)),
                                 masked, cfg.temperature)
        log_q = reveal_log_probs(self.posterior(hidden, position_scalars(log_probs, masked, t, cfg.T, lpx0)),
                                 masked, cfg.temperature)
        with torch.no_grad():
            reveal = choose_reveals(log_q if use == "posterior" else log_p, masked, "sample", self.generator)
        return reveal, bernoulli_log_prob(log_q, reveal, masked), bernoulli_kl(log_q, log_p, masked, cfg.kl_eps)

    def run(self, x0, start, start_masked, values, k, use="posterior"):
        """Roll out ``k`` orders per example.

        Args:
            x0: [B, N] the true tokens.
            start: [B, N] tokens of the start state.
            start_masked: [B, N] bool, the positions masked at the start.
            values: [B, N] index of each true token among the model's values.
            k: orders per example.
            use: ``posterior`` (draw from Q) or ``prior`` (draw from P).

        Returns:
            A Rollout over the B * k rows (example-major).
        """
        first = [part.repeat_interleave(k, 0) for part in frozen_pass(self.model, start, start_masked, values)]
        x0, values = x0.repeat_interleave(k, 0), values.repeat_interleave(k, 0)
        tokens, masked = start.repeat_interleave(k, 0), start_masked.repeat_interleave(k, 0)
        out = Rollout(torch.zeros(len(x0)), torch.zeros(len(x0)), torch.zeros(len(x0)),
                      torch.zeros(len(x0), dtype=torch.long))
        for t in range(self.cfg.T):
            idx = masked.any(1).nonzero().squeeze(1)
            if idx.numel() == 0:
                break
            view = [part[idx] for part in first] if t == 0 else frozen_pass(
                self.model, tokens[idx], masked[idx], values[idx])    # the start state's pass is shared
            reveal = self.reveal(view, masked[idx], t, use, idx, out)
            tokens[idx] = torch.where(reveal, x0[idx], tokens[idx])
            masked[idx] &= ~reveal
        return out

    def reveal(self, view, masked, t, use, idx, out):
        """The positions revealed at step t (all that is left at the last step); adds the step to ``out``."""
        if t == self.cfg.T - 1:
            reveal = masked
        else:
            reveal, log_q, kl = self.step(view, masked, t, use)
            out.log_q, out.kl = out.log_q.index_add(0, idx, log_q), out.kl.index_add(0, idx, kl)
        out.loglik[idx] += view[2].masked_fill(~reveal, 0.0).sum(1)
        out.passes[idx] += 1
        return reveal


def lr_factor(step, total, warmup=20):
    """Linear warm-up, then cosine decay to 10% of the peak."""
    if step < warmup:
        return (step + 1) / warmup
    return 0.1 + 0.45 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


def train_step(roller, batch, opt, cfg):
    """One optimiser step: K orders per example from Q, RLOO REINFORCE for phi, the KL for phi and psi.

    Args:
        roller: the Roller holding both policies.
        batch: (x0, start, start_masked, values), each [B, N].
        opt: the optimiser over both policies' parameters.
        cfg: the OrderTrainConfig.

    Returns:
        Mean ELBO, log-likelihood, KL (nats per example) and passes of the batch's orders.
    """
    x0, start, start_masked, values = batch
    out = roller.run(x0, start, start_masked, values, cfg.K)
    elbo = (out.loglik - out.kl).detach()
    scale = start_masked.sum(1).float().mean()                  # per masked position, for a stable lr
    loss = (reinforce_loss(out.log_q.view(-1, cfg.K), elbo.view(-1, cfg.K)) + out.kl.mean()) / scale
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_([p for g in opt.param_groups for p in g["params"]], 1.0)
    opt.step()
    return {"elbo": elbo.mean().item(), "loglik": out.loglik.mean().item(), "kl": out.kl.mean().item(),
            "passes": out.passes.float().mean().item()}


@torch.no_grad()
def measure(roller, held_out):
    """ELBO (orders from Q) and the log-likelihood of x0 along orders from P, per example, on the
    held-out batch; the same random numbers every time, so measurements differ by the policies only."""
    generator, roller.generator = roller.generator, torch.Generator().manual_seed(roller.cfg.seed + 1)
    from_q = roller.run(*held_out, 1, "posterior")
    roller.generator.manual_seed(roller.cfg.seed + 2)
    from_p = roller.run(*held_out, 1, "prior")
    roller.generator = generator
    return {"elbo": (from_q.loglik - from_q.kl).mean().item(), "kl": from_q.kl.mean().item(),
            "loglik_q": from_q.loglik.mean().item(), "loglik_p": from_p.loglik.mean().item(),
            "passes_p": from_p.passes.float().mean().item()}


def make_networks(d_hidden, cfg):
    """(P_psi, Q_phi), both starting as EB-Sampler with gamma = cfg.init_gamma."""
    make = lambda posterior: OrderNet(PolicyConfig(d_hidden, cfg.d_inner, posterior, cfg.init_gamma))  # noqa: E731
    return make(False), make(True)


def batches(n_train, cfg, generator):
    """Index tensors of training examples, one per step (reshuffled each epoch)."""
    order = torch.randperm(n_train, generator=generator)
    for step in range(cfg.steps):
        start = (step * cfg.batch_size) % n_train
        if start + cfg.batch_size > n_train:
            order, start = torch.randperm(n_train, generator=generator), 0
        yield order[start:start + cfg.batch_size]


def fit(roller, data, held_out, cfg):
    """Train P and Q in place; returns (training curve, held-out ELBO curve)."""
    params = list(roller.prior.parameters()) + list(roller.posterior.parameters())
    opt = torch.optim.Adam(params, lr=cfg.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg.steps))
    curve, evals, window = [], [dict(step=0, **measure(roller, held_out))], []
    log.info("step 0 held-out %s", fmt(evals[-1]))
    bar = tqdm(enumerate(batches(len(data[0]), cfg, roller.generator)), total=cfg.steps, desc=f"order T={cfg.T}")
    for step, rows in bar:
        window.append(train_step(roller, [part[rows] for part in data], opt, cfg))
        sched.step()
        if (step + 1) % cfg.log_every == 0 or step + 1 == cfg.steps:
            curve.append({"step": step + 1, **{k: sum(w[k] for w in window) / len(window) for k in window[0]}})
            window = []
            log.info("step %d train %s", step + 1, fmt(curve[-1]))
            bar.set_postfix(elbo=f"{curve[-1]['elbo']:.2f}", kl=f"{curve[-1]['kl']:.2f}")
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            evals.append(dict(step=step + 1, **measure(roller, held_out)))
            log.info("step %d held-out %s", step + 1, fmt(evals[-1]))
    return curve, evals


def fmt(stats):
    return " ".join(f"{k} {v:.3f}" for k, v in stats.items() if k != "step")


def train_order(task, cfg, out=None):
    """Train and save the order policy of ``task``'s model at budget ``cfg.T``.

    Args:
        task: a task with ``order_examples`` and ``order_training``.
        cfg: an OrderTrainConfig; task defaults fill its zero fields.
        out: where to write the weights (default: the task's order_policy_T{T}.pt).

    Returns:
        The path of the saved policy.
    """
    cfg = resolve(cfg, task)
    torch.manual_seed(cfg.seed)
    generator = torch.Generator().manual_seed(cfg.seed)
    model = place(task.load_model(), selected())   # the frozen model on --device; the policies stay on the CPU
    x0, start, start_masked = task.order_examples()
    keep = start_masked.any(1)
    data = [x0[keep], start[keep], start_masked[keep], value_index(model, x0)[keep]]
    held_out = [part[-cfg.n_eval:] for part in data]
    data = [part[:-cfg.n_eval] for part in data]
    log.info("task %s model %s: %d training examples, %d held out; config %s", task.name, model.checkpoint_id,
             len(data[0]), cfg.n_eval, asdict(cfg))
    prior, posterior = make_networks(frozen_pass(model, *held_out[1:3], held_out[3])[0].shape[-1], cfg)
    roller = Roller(model, prior, posterior, cfg, generator)
    began = time.perf_counter()
    curve, evals = fit(roller, data, held_out, cfg)
    seconds = round(time.perf_counter() - began, 1)
    meta = {"train_config": asdict(cfg), "curve": curve, "held_out": evals, "seconds": seconds,
            "train_examples": len(data[0]), "n_params": count_params(prior) + count_params(posterior),
            "command": f"python -m bench train order --task {task.name} T={cfg.T}"}
    path = out or task.weights_dir / file_name(cfg.T)
    save_policy(path, prior.eval(), posterior.eval(), model.checkpoint_id, cfg.T, cfg.temperature, meta)
    log.info("saved %s: held-out ELBO %.3f -> %.3f nats per example, %.0f s", path, evals[0]["elbo"],
             evals[-1]["elbo"], seconds)
    return path


@register_trainer("order", "the learned order policy of --task's model at budget T (T=5, 10, 15)")
def train_order_command(task, settings, out):
    """`bench train order --task T KEY=VALUE...`."""
    cfg = resolve(set_fields(OrderTrainConfig(), settings, "order training"), task)
    torch.set_num_threads(cfg.threads)
    path = out or task.weights_dir / file_name(cfg.T)
    setup_log(str(path).replace(".pt", ".log"))
    path = train_order(task, cfg, path)
    print(f"saved {path}")
