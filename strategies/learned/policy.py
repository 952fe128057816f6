"""The learned order: a policy network over positions and the Bernoulli reveal model.

A small network alpha scores every position from the frozen model's hidden state and its
per-position entropy, top probability, EB cost and mask flag (plus the step's share of the
budget and the row's count of masked positions); the posterior's network also sees the model's
log-probability of the true token. The EB cost of a masked position is the sum of the
entropies of the masked positions of lower entropy (EB-Sampler's budget spent if it were
revealed with all of them). Position n is revealed with probability

    p_n = exp((s_n - max_{m masked} s_m) / temperature)   for masked n,   0 otherwise,

independently across positions, so the best-scored masked position is always revealed,
similar scores are revealed together, and higher scores go first. A policy is trained for a
fixed step budget T: at step T (the T-th pass) everything still masked is revealed.

Both networks start as score = -(ln 2 / init_gamma) * EB cost (the MLP's output layer starts at
zero): thresholded at p >= 0.5 that is exactly EB-Sampler with gamma = init_gamma, so training
starts from the heuristic and learns where to depart from it.

Also here: the Bernoulli pieces training needs (log-probability of a reveal vector, the
analytic KL between two reveal distributions, RLOO advantages) and saving/loading with a
check of the model checkpoint the policy belongs to.
"""
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from bench.checkpoints import load_helper, save_atomic, with_weights
from bench.errors import BenchError

N_SCALARS = 6          # entropy, confidence, EB cost, masked flag, step / T, log1p(#masked) / log(100)
EB_COST = 2            # index of the EB cost among the scalars
MODES = ("sample", "threshold")


def file_name(budget):
    """The shipped policy file of step budget ``budget``: order_policy_T{budget}.pt."""
    return f"order_policy_T{budget}.pt"


def train_command(task_name, budget):
    return f"python -m bench train order --task {task_name} T={budget}"


@dataclass
class PolicyConfig:
    d_hidden: int = 96            # width of the frozen model's hidden states
    d_inner: int = 64             # width of the per-position MLP
    posterior: bool = False       # True: the posterior Q, which also reads log p(x0_n | x_t)
    init_gamma: float = 0.3       # initial score = -(ln 2 / init_gamma) * EB cost: EB-Sampler(init_gamma)

    def to_dict(self):
        return asdict(self)


class OrderNet(nn.Module):
    """Scores s [B, N] from per-position features: a linear term plus an MLP (zero at init)."""

    def __init__(self, cfg: PolicyConfig):
        super().__init__()
        self.cfg = cfg
        n_scalars = N_SCALARS + int(cfg.posterior)
        self.norm = nn.LayerNorm(cfg.d_hidden)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_hidden + n_scalars, cfg.d_inner), nn.GELU(),
                                 nn.Linear(cfg.d_inner, 1))
        self.linear = nn.Linear(n_scalars, 1)
        with torch.no_grad():
            self.mlp[-1].weight.zero_()
            self.mlp[-1].bias.zero_()
            self.linear.weight.zero_()
            self.linear.weight[0, EB_COST] = -math.log(2) / cfg.init_gamma
            self.linear.bias.zero_()

    def forward(self, hidden, scalars):
        """hidden [B, N, D], scalars [B, N, S] -> scores [B, N]."""
        x = torch.cat([self.norm(hidden.float()), scalars], -1)
        return (self.mlp(x) + self.linear(scalars)).squeeze(-1)


def position_scalars(log_probs, masked, step, budget, logp_x0=None):
    """[B, N, S] per-position scalar features (S = 6, or 7 with ``logp_x0`` for the posterior).

    Args:
        log_probs: [B, N, V] the frozen model's log-probabilities.
        masked: [B, N] bool, True where still masked.
        step: 0-based pass number.
        budget: the step budget T.
        logp_x0: [B, N] log p(x0_n | x_t) of the true tokens (posterior only).
    """
    probs = log_probs.exp()
    entropy = torch.special.entr(probs).sum(-1)
    confidence = probs.amax(-1)
    count = masked.sum(1, keepdim=True).float().expand_as(entropy)
    parts = [entropy, confidence, eb_cost(entropy, masked), masked.float(), torch.full_like(entropy, step / budget),
             torch.log1p(count) / math.log(100)]
    if logp_x0 is not None:
        parts.append(logp_x0.clamp_min(-20) / 5)
    return torch.stack(parts, -1)


def eb_cost(entropy, masked):
    """[B, N] sum of the entropies of the masked positions before each masked one in ascending-entropy
    order (ties to the lower index, as EB-Sampler sorts); 0 on unmasked positions."""
    ordered, order = torch.sort(entropy.masked_fill(~masked, float("inf")), dim=1, stable=True)
    ordered = ordered.masked_fill(torch.isinf(ordered), 0.0)
    before = ordered.cumsum(1) - ordered
    return torch.empty_like(before).scatter_(1, order, before).masked_fill(~masked, 0.0)


def reveal_log_probs(scores, masked, temperature):
    """[B, N] log p_n = (s_n - max_{m masked} s_m) / temperature on masked positions, -inf elsewhere."""
    top = scores.masked_fill(~masked, float("-inf")).amax(1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))   # rows with nothing masked
    return ((scores - top) / temperature).masked_fill(~masked, float("-inf"))


def choose_reveals(log_p, masked, mode, generator=None, uniforms=None):
    """bool [B, N]: reveal by independent Bernoulli draws (``sample``: ``uniforms`` [B, N] in
    [0, 1), or drawn from ``generator``) or where p_n >= 0.5 (``threshold``); the best-scored
    masked position (p = 1) is always revealed."""
    if mode == "threshold":
        pick = log_p >= math.log(0.5)
    elif mode == "sample":
        if uniforms is None:
            uniforms = torch.rand(log_p.shape, generator=generator)
        pick = uniforms < log_p.exp()
    else:
        raise BenchError(f"unknown reveal mode {mode!r}; choose from: {', '.join(MODES)}")
    return masked & (pick | (log_p == 0))


def log1mexp(log_p):
    """log(1 - exp(log_p)) for log_p <= 0; finite (about -13.8) at log_p = 0."""
    return torch.log(-torch.expm1(log_p.clamp_max(-1e-6)))


def bernoulli_log_prob(log_p, reveal, masked):
    """[B] log-probability of the reveal vector ``reveal`` under independent Bernoulli(p) on masked positions."""
    terms = torch.where(reveal, log_p, log1mexp(log_p))
    return terms.masked_fill(~masked, 0.0).sum(1)


def bernoulli_kl(log_q, log_p, masked, eps):
    """[B] KL(Q || P) of independent Bernoulli vectors, summed over masked positions.

    Both probabilities are clamped to [eps, 1 - eps] first: the position each distribution
    reveals for sure (p = 1) would otherwise make the KL infinite wherever the two disagree.
    """
    q = log_q.exp().clamp(eps, 1 - eps)
    p = log_p.exp().clamp(eps, 1 - eps)
    kl = q * (q.log() - p.log()) + (1 - q) * (torch.log1p(-q) - torch.log1p(-p))
    return kl.masked_fill(~masked, 0.0).sum(1)


def rloo_advantages(rewards):
    """[B, K] leave-one-out advantages: each reward minus the mean of the other K - 1 of its row."""
    k = rewards.shape[1]
    if k < 2:
        raise BenchError(f"RLOO needs at least 2 orders per example, got K={k}")
    return rewards - (rewards.sum(1, keepdim=True) - rewards) / (k - 1)


def reinforce_loss(log_prob, rewards):
    """Scalar loss whose gradient is minus the RLOO REINFORCE estimate of d E[reward].

    Args:
        log_prob: [B, K] log-probability of each sampled order (with gradient).
        rewards: [B, K] rewards of those orders (treated as constants).
    """
    return -(rloo_advantages(rewards.detach()) * log_prob).mean()


def save_policy(path, prior, posterior, model_id, budget, temperature, meta):
    """Write the generative policy P (``state_dict``) and the posterior Q beside it."""
    save_atomic(path, {"config": prior.cfg.to_dict(), "state_dict": prior.state_dict(),
                       "posterior_config": posterior.cfg.to_dict(), "posterior_state_dict": posterior.state_dict(),
                       "model_id": model_id, "budget": budget, "temperature": temperature, "meta": meta})


def load_policy(path, model_id, task_name, budget):
    """The generative policy at ``path``, checked to belong to ``model_id`` and budget T; one-line errors."""
    how = train_command(task_name, budget)
    build = lambda p: with_weights(OrderNet(PolicyConfig(**p["config"])), p["state_dict"])  # noqa: E731
    network, payload = load_helper(Path(path), "order policy", how, model_id, build)
    if payload.get("budget") != budget:
        raise BenchError(f"order policy {path} was trained for T={payload.get('budget')}, not T={budget}; "
                         f"pass T={payload.get('budget')} or train one with: {how}")
    return network
