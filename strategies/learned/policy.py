"""The learned order: a policy network over positions and its reveal distribution.

A small network scores every position from the frozen model's hidden state and normalised
per-position features (``position_scalars``); the posterior's network also sees the model's
log-probability of the true token. Masked position n gets the reveal probability

    p_n = eps + (1 - 2 eps) * sigmoid(s_n / temperature)        (0 off the mask),

and a pass reveals r ~ independent Bernoulli(p_n), *conditioned on revealing at least one
position*: P(r) = prod_n p_n^r_n (1 - p_n)^(1 - r_n) / (1 - prod_n (1 - p_n)) for r != {}.
Every probability lies in [eps, 1 - eps], in sampling and in the KL alike, so the KL between
two policies is finite by construction and computed exactly (``reveal_kl``); the conditioning
replaces the old "the best-scored position always goes" rule, whose point mass made the KL
infinite wherever two policies disagreed on the best position. ``choose_reveals`` samples the
conditioned distribution exactly, and the threshold mode reveals p_n >= 0.5 (the best-scored
position if none is).

Both networks start as s = a (1 - C_n / gamma) with C_n the EB cost (the entropies of the masked
positions of lower entropy) and a = ``init_sharpness``: thresholded at p >= 0.5 that is exactly
EB-Sampler with gamma = init_gamma, and sampled it is a noisy EB-Sampler. A policy is trained
for a fixed step budget T: at step T (the T-th pass) everything still masked is revealed.

Two parameterisations of p_n from the scores (``PolicyConfig.param``):

- ``sigmoid`` (the default): p_n = eps + (1 - 2 eps) sigmoid(s_n / temperature), each position alone;
- ``relative`` (the posterior of Fox et al. 2026 as the issue describes it: each position scored
  relative to the best-scored masked one, with a temperature, so that similar scores go in the same
  step): p_n = eps + (1 - 2 eps) exp((s_n - max_m s_m) / temperature), the max over masked m. The best
  position gets 1 - eps and one scored temperature * ln 2 below it gets 1/2. Both networks start
  with slope ln 2 on C_n / gamma (s = -ln 2 C_n / gamma + const), so the untrained policy
  thresholded is again EB-Sampler(gamma) (p_n >= 1/2 exactly where C_n <= gamma); ``init_sharpness``
  is the sigmoid's alone.

Either way the reveal distribution is the same family (independent Bernoulli in [eps, 1 - eps],
conditioned on at least one reveal), so ``reveal_kl`` is the exact, finite KL for both.

Also here: RLOO advantages, and saving/loading with a check of the model checkpoint the policy
belongs to.
"""
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from bench.checkpoints import load_helper, save_atomic, with_weights
from bench.errors import BenchError

# entropy / log V, confidence, EB cost / gamma, masked flag, step / T, log1p(#masked) / log(100),
# EB cost / total masked entropy, 1 / (passes left): every feature is O(1) on every task
N_SCALARS = 8
EB_COST = 2            # index of the normalised EB cost among the scalars
MODES = ("sample", "threshold")
PARAMS = ("sigmoid", "relative")   # how scores become reveal probabilities (``reveal_probs``)
FORMAT = 2             # policy file format: 2 = sigmoid reveal probabilities conditioned on >= 1 reveal


def file_name(budget, init=False):
    """The shipped policy file of step budget ``budget``: order_policy_T{budget}.pt, or its untrained
    initialisation order_policy_T{budget}_init.pt (saved by the training command, for ablations)."""
    return f"order_policy_T{budget}{'_init' if init else ''}.pt"


def train_command(task_name, budget):
    return f"python -m bench train order --task {task_name} T={budget}"


@dataclass
class PolicyConfig:
    d_hidden: int = 96            # width of the frozen model's hidden states
    d_inner: int = 64             # width of the per-position MLP on the hidden state (0: none, features only)
    posterior: bool = False       # True: the posterior Q, which also reads log p(x0_n | x_t)
    init_gamma: float = 0.3       # initial policy: EB-Sampler(init_gamma); also the EB cost's unit
    init_sharpness: float = 4.0   # initial score a (1 - C / gamma): p = 0.98 at C = 0, 0.5 at gamma
    eps: float = 1e-3             # every reveal probability lies in [eps, 1 - eps]
    param: str = "sigmoid"        # PARAMS: sigmoid of each score, or exp of its gap to the best masked one

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
                                 nn.Linear(cfg.d_inner, 1)) if cfg.d_inner else None   # 0: features only
        self.linear = nn.Linear(n_scalars, 1)
        with torch.no_grad():
            if self.mlp is not None:
                self.mlp[-1].weight.zero_()
                self.mlp[-1].bias.zero_()
            self.linear.weight.zero_()
            slope = math.log(2) if cfg.param == "relative" else cfg.init_sharpness   # p = 1/2 at C = gamma
            self.linear.weight[0, EB_COST] = -slope
            self.linear.bias.fill_(slope)

    def forward(self, hidden, scalars):
        """hidden [B, N, D], scalars [B, N, S] -> scores [B, N]."""
        score = self.linear(scalars).squeeze(-1)
        if self.mlp is None:
            return score
        return score + self.mlp(torch.cat([self.norm(hidden.float()), scalars], -1)).squeeze(-1)


def position_scalars(log_probs, masked, step, budget, gamma, logp_x0=None):
    """[B, N, S] normalised per-position features (S = 8, or 9 with ``logp_x0`` for the posterior).

    Args:
        log_probs: [B, N, V] the frozen model's log-probabilities.
        masked: [B, N] bool, True where still masked.
        step: 0-based pass number.
        budget: the step budget T.
        gamma: the EB cost's unit (the policy's init_gamma).
        logp_x0: [B, N] log p(x0_n | x_t) of the true tokens (posterior only).
    """
    probs = log_probs.exp()
    entropy = torch.special.entr(probs).sum(-1)
    cost = eb_cost(entropy, masked)
    total = (entropy * masked).sum(1, keepdim=True).clamp_min(1e-6)
    count = masked.sum(1, keepdim=True).float().expand_as(entropy)
    parts = [entropy / math.log(log_probs.shape[-1]), probs.amax(-1), cost / gamma, masked.float(),
             torch.full_like(entropy, step / budget), torch.log1p(count) / math.log(100), cost / total,
             torch.full_like(entropy, 1 / max(budget - step, 1))]
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


def reveal_probs(scores, masked, temperature, eps, param="sigmoid"):
    """[B, N] reveal probabilities on masked positions, 0 elsewhere: p_n = eps + (1 - 2 eps) g_n with
    g_n = sigmoid(s_n / temperature) (``sigmoid``) or exp((s_n - max over masked s) / temperature)
    (``relative``)."""
    if param == "relative":
        best = scores.masked_fill(~masked, float("-inf")).amax(1, keepdim=True)
        gap = (scores - best).masked_fill(~masked, 0.0)      # <= 0 on the mask; 0 keeps finished rows finite
        return (eps + (1 - 2 * eps) * torch.exp(gap / temperature)) * masked
    if param != "sigmoid":
        raise BenchError(f"unknown policy parameterisation {param!r}; choose from: {', '.join(PARAMS)}")
    return (eps + (1 - 2 * eps) * torch.sigmoid(scores / temperature)) * masked


def log_nonempty(probs, masked):
    """[B] log(1 - prod_n (1 - p_n)) over masked positions: the log-probability that an unconditioned
    draw reveals something (-inf for a row with nothing masked)."""
    return torch.log(-torch.expm1(torch.log1p(-probs * masked).sum(1)))


def choose_reveals(probs, masked, mode, generator=None, uniforms=None):
    """bool [B, N]: a draw from the conditioned Bernoulli (``sample``; ``uniforms`` [B, N] in [0, 1),
    or drawn from ``generator``) or p_n >= 0.5 (``threshold``, the best position if none is).

    Exact sampling of "independent Bernoulli given at least one": walk the positions in order;
    until the first reveal, position n goes with p_n / (1 - prod_{m >= n} (1 - p_m)) (which is 1 at
    the last masked position), and after it with p_n.
    """
    if mode == "threshold":
        best = torch.zeros_like(masked).scatter_(1, probs.masked_fill(~masked, -1.0).argmax(1, keepdim=True), True)
        return masked & ((probs >= 0.5) | (best & ~(probs >= 0.5).any(1, keepdim=True)))
    if mode != "sample":
        raise BenchError(f"unknown reveal mode {mode!r}; choose from: {', '.join(MODES)}")
    if uniforms is None:
        uniforms = torch.rand(probs.shape, generator=generator, dtype=torch.float64)
    probs = probs.double() * masked
    tail_none = torch.log1p(-probs).flip(1).cumsum(1).flip(1)          # log prod_{m >= n} (1 - p_m)
    tail_some = -torch.expm1(tail_none)
    first_prob = torch.where(tail_some > 0, probs / tail_some.clamp_min(1e-300), torch.zeros_like(probs))
    hits = (uniforms < first_prob) & masked
    position = torch.arange(masked.shape[1], device=masked.device)
    first = torch.where(hits.any(1), hits.float().argmax(1), masked.shape[1])[:, None]
    return masked & ((position == first) | ((position > first) & (uniforms < probs)))


def reveal_log_prob(probs, reveal, masked):
    """[B] log P(reveal) under the conditioned Bernoulli on masked positions (0 for finished rows)."""
    terms = torch.where(reveal, torch.log(probs.clamp_min(1e-12)), torch.log1p(-probs))
    log_prob = terms.masked_fill(~masked, 0.0).sum(1) - log_nonempty(probs, masked)
    return torch.where(masked.any(1), log_prob, torch.zeros_like(log_prob))


def reveal_kl(q, p, masked):
    """[B] KL(Q || P) of two conditioned Bernoulli reveal distributions, exactly.

    With f(r) = log Q~(r) - log P~(r) of the unconditioned products, KL = (E_Q~[f] - Q~({}) f({})) / Z_Q
    - log Z_Q + log Z_P, where E_Q~[f] is the product KL and Z the probability of a non-empty draw.
    Finite whenever p and q lie in [eps, 1 - eps].
    """
    on = masked.any(1)
    q, p = torch.where(masked, q, 0.5), torch.where(masked, p, 0.5)   # keep the logs finite off the mask
    product_kl = (q * (q.log() - p.log()) + (1 - q) * (torch.log1p(-q) - torch.log1p(-p))) * masked
    empty_f = ((torch.log1p(-q) - torch.log1p(-p)) * masked).sum(1)
    q_empty = torch.exp((torch.log1p(-q) * masked).sum(1))
    log_zq, log_zp = log_nonempty(q, masked), log_nonempty(p, masked)
    kl = (product_kl.sum(1) - q_empty * empty_f) / log_zq.exp() - log_zq + log_zp
    return torch.where(on, kl, torch.zeros_like(kl))


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
    """Write the generative policy P (``state_dict``) and the posterior Q beside it (None: none trained)."""
    save_atomic(path, {"format": FORMAT, "config": prior.cfg.to_dict(), "state_dict": prior.state_dict(),
                       "posterior_config": posterior.cfg.to_dict() if posterior else None,
                       "posterior_state_dict": posterior.state_dict() if posterior else None,
                       "model_id": model_id, "budget": budget, "temperature": temperature, "meta": meta})


def load_policy(path, model_id, task_name, budget):
    """The generative policy at ``path``, checked to belong to ``model_id`` and budget T; one-line errors."""
    how = train_command(task_name, budget)

    def build(payload):
        if payload.get("format") != FORMAT:
            raise BenchError(f"order policy {path} has file format {payload.get('format', 1)}, this code reads "
                             f"format {FORMAT}; retrain it with: {how}")
        return with_weights(OrderNet(PolicyConfig(**payload["config"])), payload["state_dict"])

    network, payload = load_helper(Path(path), "order policy", how, model_id, build)
    if payload.get("budget") != budget:
        raise BenchError(f"order policy {path} was trained for T={payload.get('budget')}, not T={budget}; "
                         f"pass T={payload.get('budget')} or train one with: {how}")
    return network
