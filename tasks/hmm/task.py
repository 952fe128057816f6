"""The exact task: generate sequences of a known hidden Markov model; the headline is KL(q || p).

q is the distribution the strategy actually samples from (values drawn at temperature 1) and
p the true chain. For a strategy whose picks depend only on the current state,
log q(x) = sum over passes of the log-probabilities of the values revealed at that pass (the
decode loop records it as ``log_q``), and log p(x) comes from the forward algorithm, so
KL = E_q[log q - log p] is estimated without bias by the mean over samples, with a bootstrap
CI. Strategies that draw their picks at random (learned, mode=sample) get an upper bound: the
same mean is then KL(q(x, order) || p(x) r(order | x)) >= KL(q || p).

Two tasks share the chain and the inputs (every position masked, one sample per input):
``hmm`` decodes with the exact denoiser (forward-backward), so its KL is the strategy's own
sampling error; ``hmm_mdm`` decodes with a small MDM trained on samples of the chain, whose
sequential KL is the denoiser's error.
"""
import hashlib
import math
from pathlib import Path

import numpy as np
import torch

from bench.checkpoints import build_from_payload, cache_dir, file_id, load_payload, with_weights
from bench.core import EvalSet, Task
from bench.errors import BenchError
from bench.files import read_bytes
from bench.provenance import portable_path
from bench.registry import register_task
from bench.results import cached_json
from bench.stats import basic_bootstrap_groups, difference_metric, mean_metric
from tasks.hmm import chain
from tasks.hmm.chain import DEFAULT_HMM, HMM_FILE_LIMIT
from tasks.hmm.model import DEFAULT_MDM, HMMMDM, ExactHMMModel, HMMModelConfig, HMMTransformer, save_mdm

HERE = Path(__file__).parent
N_SEQUENCES = 1000
TYPICAL_MASS = 0.99   # the sequence error rate's language: the chain's most probable sequences with this mass
MDM_TRAIN_COMMAND = "python -m bench train hmm_mdm"


def sequence_string(values):
    return "".join(str(int(v)) for v in values)


def transition_kl(values, pairs):
    """Transition KL-rate (arXiv 2602.19619) in nats per position: sum_a q(a) KL(q(.|a) || p(.|a))
    of the samples' pooled adjacent-value counts (``values`` [n, N]) against the chain's pair law
    ``pairs`` [V, V] (chain.pair_marginals)."""
    v = pairs.shape[0]
    counts = np.bincount((values[:, :-1] * v + values[:, 1:]).ravel(), minlength=v * v).reshape(v, v)
    joint = counts / counts.sum()
    conditional = joint / np.maximum(joint.sum(1, keepdims=True), 1e-300)
    true_conditional = pairs / pairs.sum(1, keepdims=True)
    terms = np.where(joint > 0, joint * np.log(np.maximum(conditional, 1e-300) / true_conditional), 0.0)
    return float(terms.sum())


def token_error_rate(log_p, length, entropy):
    """TER of arXiv 2502.09622 (Feng et al., "Theoretical Benefit and Limitation of Diffusion Language
    Model"), which measures token errors by perplexity: the samples' log-perplexity under the true
    chain, E_q[-log p(x)] / N nats per position (``log_p``: each sample's log p(x)). Its optimum, a
    sampler with q = p, is the chain's entropy rate H(p) / N (``entropy``: H(p) per sequence),
    stored as ``optimum``; a q sharper than p goes below it."""
    metric = mean_metric("token_error_rate", -np.asarray(log_p, dtype=float) / length, False,
                         "token error rate (arXiv 2502.09622: log-perplexity under the true chain), nats per "
                         f"position; an exact sampler scores the entropy rate {entropy / length:.4f}")
    metric["optimum"] = entropy / length
    return metric


def sequence_error_rate(log_p, bound):
    """SER of arXiv 2502.09622, 1 - q(L): the share of samples outside the language L of correct
    sequences. Every sequence has positive probability under the shipped chain, so L = the chain's
    support would make it 0 for every strategy; our reading (stated, not the paper's): L holds the
    chain's most probable sequences that carry TYPICAL_MASS of its mass, those with -log p(x) at
    most ``bound`` (chain.nll_quantile). An exact sampler scores 1 - TYPICAL_MASS (``optimum``)."""
    outside = (-np.asarray(log_p, dtype=float) > bound).astype(float)
    metric = mean_metric("sequence_error_rate", outside, False,
                         f"sequence error rate (arXiv 2502.09622; our reading): share of samples outside the "
                         f"chain's most probable sequences holding {TYPICAL_MASS:.0%} of its mass "
                         f"(-log p(x) > {bound:.2f} nats); an exact sampler scores {1 - TYPICAL_MASS:.2f}")
    metric["optimum"] = round(1 - TYPICAL_MASS, 6)
    return metric


def transition_kl_metric(values, pairs):
    """The transition KL-rate with a basic bootstrap CI over samples. Its bias, stated: the plug-in
    estimate is above the true rate by about (cells - rows) / (2 * pairs counted), 4e-4 nats for
    1,000 sequences here; it sees only adjacent pairs, so it is 0 for any q with the chain's
    bigram law however wrong its longer-range structure."""
    value, low, high = basic_bootstrap_groups([len(values)], lambda i: transition_kl(values[i], pairs))
    return {"name": "transition_kl_rate", "label": "transition KL-rate (bigram counts against the chain), "
            "nats per position", "value": value, "ci_low": low, "ci_high": high, "higher_is_better": False,
            "n": len(values), "ci_method": "basic bootstrap"}


@register_task
class HMMTask(Task):
    """Exact task: 1,000 sequences of a known HMM (N=64, V=8), exact denoiser; KL(q||p) in nats."""
    name = "hmm"
    headline = "kl_nats"
    temperature = 1.0   # values are drawn: q is the sampling distribution
    needs_sampling = True   # KL(q || p) reads log q of each sample: --temperature 0 is refused
    weights_dir = HERE / "weights" / "exact"
    extra_figures = ("share_over_1nat",)
    mi_label_sizes = {"train": 4000, "heldout": 500, "ood": 500}
    # order policies: fully masked samples of the chain; eb:gamma=g reaches about T passes
    # trained on the exact reward log p(x) - log q(x) (objective reward)
    order_training = {"objective": "reward", "batch": 32, "step_units": 6000, "n_eval": 256,
                      "init_gamma": {8: 10.0, 16: 4.0, 32: 1.5}}
    options = {"data": "HMM parameter JSON: length, init [K], trans [K, K], emit [K, V] (default: the shipped chain)"}

    def __init__(self, data=None, model=None):
        self.data_path = Path(data) if data else DEFAULT_HMM
        self.model_path = model
        self._hmm = None
        self._entropy = None
        self._typical = None

    @property
    def hmm(self):
        if self._hmm is None:
            self._hmm = chain.load_hmm(self.data_path)
        return self._hmm

    def config(self):
        return {"data": portable_path(self.data_path), "model": self.model_path and portable_path(self.model_path)}

    def load_model(self):
        if self.model_path:
            raise BenchError(f"task {self.name} decodes with the exact chain and takes no --model; "
                             f"a trained model runs as task hmm_mdm")
        return ExactHMMModel(self.hmm, file_id(self.data_path, "HMM file", HMM_FILE_LIMIT))

    def eval_set(self, limit=None, seed=0):
        n = N_SEQUENCES if limit is None else min(limit, N_SEQUENCES)   # --limit: at most the first N
        tokens = torch.zeros(n, self.hmm.length, dtype=torch.long)
        digest = hashlib.sha256(read_bytes(self.data_path, "HMM file", HMM_FILE_LIMIT)).hexdigest()[:12]
        return EvalSet(tokens=tokens, masked=torch.ones_like(tokens, dtype=torch.bool), data_id=digest, extras={})

    def data_summary(self):
        hmm = self.hmm
        return (f"every position masked; chain with {hmm.n_states} hidden states, {hmm.n_values} values, "
                f"length {hmm.length}")

    def records(self, tokens, passes, rows, eval_set):
        values = tokens - 1
        log_p = chain.log_likelihood(self.hmm, values).tolist()
        return [{"index": row, "passes": n, "log_p": round(lp, 6), "output": sequence_string(v)}
                for v, n, lp, row in zip(values, passes.tolist(), log_p, rows.tolist())]

    def entropy(self):
        """(H(p) of the chain in nats, its Monte Carlo standard error): estimated once from 100,000
        samples and cached per chain file (bench cache, ``hmm/entropy-DIGEST.json``)."""
        if self._entropy is None:
            digest = hashlib.sha256(read_bytes(self.data_path, "HMM file", HMM_FILE_LIMIT)).hexdigest()[:16]
            self._entropy = cached_json(cache_dir() / "hmm" / f"entropy-{digest}.json",
                                        lambda: list(chain.entropy_estimate(self.hmm)),
                                        lambda stored: isinstance(stored, list) and len(stored) == 2)
        return self._entropy

    def typical_bound(self):
        """-log p(x) at the TYPICAL_MASS quantile under the chain (chain.nll_quantile, 100,000
        samples), cached per chain file (bench cache, ``hmm/typical-MASS-DIGEST.json``)."""
        if self._typical is None:
            digest = hashlib.sha256(read_bytes(self.data_path, "HMM file", HMM_FILE_LIMIT)).hexdigest()[:16]
            self._typical = cached_json(cache_dir() / "hmm" / f"typical-{TYPICAL_MASS}-{digest}.json",
                                        lambda: chain.nll_quantile(self.hmm, TYPICAL_MASS),
                                        lambda stored: isinstance(stored, float))
        return self._typical

    def error_rates(self, log_p):
        """The token and sequence error rates of arXiv 2502.09622 (``token_error_rate``,
        ``sequence_error_rate``), read from each sample's log p(x) alone."""
        return [token_error_rate(log_p, self.hmm.length, self.entropy()[0]),
                sequence_error_rate(log_p, self.typical_bound())]

    def sample_measures(self, records):
        """Measures read from the samples alone, on one scale for every strategy (re-masking ones
        and those that sample their order included, whose summed log q is not log q(x)):
        the cross-entropy under the true chain minus its entropy, the transition KL-rate, and the
        token and sequence error rates of arXiv 2502.09622 (``error_rates``)."""
        log_p = np.array([r["log_p"] for r in records], dtype=float)
        entropy, error = self.entropy()
        values = np.array([[int(c) for c in r["output"]] for r in records])
        return [
            mean_metric("nll_excess_nats", -log_p - entropy, False,
                        f"E_q[-log p(x)] - H(p), nats per sequence: KL(q||p) + H(q) - H(p), so below the KL "
                        f"(even negative) for a q sharper than p; H(p) by Monte Carlo, standard error {error:.2f}"),
            transition_kl_metric(values, chain.pair_marginals(self.hmm).numpy()),
        ] + self.error_rates(log_p)

    def summarize(self, records):
        if "log_q" not in records[0]:
            raise BenchError(f"records of task {self.name} lack log_q (values must be sampled, temperature > 0)")
        def column(key):
            return np.array([r[key] for r in records], dtype=float)

        measures = self.sample_measures(records) + [
            mean_metric("passes", column("passes"), False, "forward passes per sequence", field="passes")]
        if "remasked" in records[0] or "picked_by_value" in records[0]:   # its summed log q is not log q(x)
            return measures
        log_q, log_p = column("log_q"), column("log_p")
        bits = 1 / (self.hmm.length * math.log(2))
        return [
            difference_metric("kl_nats", log_q, log_p, False,
                              "KL(q||p) in nats per sequence: mean of log q - log p", fields=("log_q", "log_p")),
            difference_metric("kl_bits_per_position", log_q * bits, log_p * bits, False,
                              "KL(q||p) in bits per position"),
            mean_metric("share_over_1nat", (log_q - log_p > 1).astype(float), False,
                        "share of samples with log q - log p > 1 nat"),
        ] + self.order_estimate(records, log_p) + measures

    @staticmethod
    def order_estimate(records, log_p):
        """[the lower estimate of KL(q||p)] for a run that draws its order and whose records carry
        tasks/hmm/orders.py's log-mean-exp over M orders (else []), with the same estimate over
        M/2 orders: the rise from M/2 to M is about the downward bias left at M."""
        if "log_q_orders" not in records[0]:
            return []
        orders = records[0]["orders"]
        full = np.array([r["log_q_orders"] for r in records], dtype=float)
        half = np.array([r["log_q_orders_half"] for r in records], dtype=float)
        metric = difference_metric(
            "kl_nats_orders", full, log_p, False,
            f"KL(q||p) lower estimate, nats per sequence: log q(x) as the log-mean-exp of q(x | order) over "
            f"{orders} orders drawn afresh, minus log p (low by Jensen; bias about 1/M)",
            fields=("log_q_orders", "log_p"))
        metric.update(orders=orders, value_half_orders=float((half - log_p).mean()))
        return [metric]

    def value_frequencies(self):
        """[V] each value's frequency in samples of the chain (what the MDM trains on; PC-Sampler's
        background, strategies/schedules): the emission marginals averaged over positions."""
        return chain.value_marginals(self.hmm).mean(0).tolist()

    def mi_contexts(self, model, split, n, generator):
        from tasks.hmm.hooks import mi_contexts
        return mi_contexts(self.hmm, model, split, n, generator)

    def order_examples(self):
        from tasks.hmm.hooks import order_examples
        return order_examples(self.hmm)

    def order_reward(self, x0, tokens, log_q):
        """log p(x) - log q(x): minus the sample's term of the headline KL (exact)."""
        return chain.log_likelihood(self.hmm, tokens - 1).double() - log_q


@register_task
class HMMMDMTask(HMMTask):
    """Exact task with a trained denoiser: a small MDM trained on samples of the same chain."""
    name = "hmm_mdm"
    weights_dir = HERE / "weights" / "mdm"
    mi_probe = 16   # probed positions per MI context (the trained model has no exact MI)
    options = {"data": HMMTask.options["data"] + "; the model must be trained on it",
               "model": "checkpoint path (default: the shipped MDM, tasks/hmm/weights/hmm_mdm.pt)"}

    def __init__(self, data=None, model=None):
        super().__init__(data, model)
        self.model_path = Path(model) if model else DEFAULT_MDM

    def load_model(self):
        payload = load_payload(self.model_path, "HMM MDM", MDM_TRAIN_COMMAND)
        def network_of(p):
            return with_weights(HMMTransformer(HMMModelConfig(**p["config"])), p["state_dict"])

        network = build_from_payload(payload, network_of, "HMM MDM", self.model_path, MDM_TRAIN_COMMAND)
        if (network.cfg.length, network.cfg.n_values) != (self.hmm.length, self.hmm.n_values):
            raise BenchError(f"model {self.model_path} was trained on length {network.cfg.length} with "
                             f"{network.cfg.n_values} values; the HMM file {self.data_path} has "
                             f"{self.hmm.length} and {self.hmm.n_values}")
        return HMMMDM(network, file_id(self.model_path), payload.get("meta"))

    def train_model(self, settings, out):
        from tasks.hmm.hooks import train_model
        train_model(settings, out)

    def save_denoiser(self, model, path, meta):
        """A fine-tuned MDM (the learned order's denoiser=joint) as ``--model PATH`` loads it."""
        save_mdm(path, model.network, meta)
