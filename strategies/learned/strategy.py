"""Learned generation order (after Fox et al. 2026): reveal by a trained policy P_psi.

Each pass, a small network scores every masked position from the frozen model's hidden state and
normalised entropy, confidence and EB-cost features; position n is revealed with probability
eps + (1 - 2 eps) sigmoid(s_n / temperature), the draws conditioned on revealing at least one
position (strategies/learned/policy.py; a policy trained with param=relative scores each position
relative to the best masked one instead). A policy is
trained for a step budget T (`python -m bench train order --task TASK T=5`) and ships as
tasks/<task>/weights/order_policy_T{T}.pt; at the T-th pass everything still masked is revealed,
so no input takes more than T passes.
"""
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from bench.checkpoints import file_id, helper_file
from bench.core import Strategy, all_finite
from bench.device import helper_device, run_helper
from bench.errors import BenchError
from bench.registry import register_strategy
from strategies.learned import ORDER_TASK
from strategies.learned.policy import (
    MODES,
    choose_reveals,
    file_name,
    load_policy,
    position_scalars,
    reveal_probs,
    train_command,
)


def check_params(budget, temperature, mode):
    if budget < 1:
        raise ValueError(f"T must be at least 1, got {budget}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")


@register_strategy
@dataclass
class Learned(Strategy):
    """Reveal by the learned policy P_psi of step budget T: Bernoulli draws (sample) or p >= 0.5 (threshold)."""
    requires: ClassVar[tuple] = (ORDER_TASK,)
    name: ClassVar[str] = "learned"
    needs: ClassVar[tuple] = ("hidden",)   # the policy reads the model's hidden states
    T: int = 10
    temperature: float = 1.0
    mode: str = field(default="sample", metadata={"choices": MODES})
    seed: int = 0
    policy: str = field(default="", metadata={"help": "policy file (default: the task's order_policy_T{T}.pt)"})
    init: bool = field(default=False, metadata={"help": "true: the policy's untrained initialisation, its "
                                                        "ablation (the file saved beside it: *_init.pt)"})

    def __post_init__(self):
        check_params(self.T, self.temperature, self.mode)
        self.network, self.policy_id = None, None

    def bind(self, task, model):
        """Load the policy of budget T that belongs to ``model`` (with init, the initialisation its
        training saved beside it); a missing or foreign one is an error."""
        path = helper_file(self.policy) if self.policy else Path(task.weights_dir) / file_name(self.T)
        if self.init:
            path = path.with_name(path.stem + "_init.pt")
        self.network = load_policy(path, model.checkpoint_id, task.name, self.T).to(helper_device(model))
        self.policy_id = file_id(path)
        self.policy_path, self.task_name = path, task.name

    def samples(self):
        return self.mode == "sample"

    def helper_ids(self):
        return {"order_policy": self.policy_id}

    def select(self, state):
        if self.network is None:
            raise BenchError("strategy learned has no policy loaded (bind(task, model) was not called)")
        if state.step >= self.T - 1:              # the budget's last pass reveals everything left
            return state.masked.clone()
        cfg = self.network.cfg
        scalars = position_scalars(state.log_probs, state.masked, state.step, self.T, cfg.init_gamma)
        scores = run_helper(self.network, state.out.hidden, scalars)   # on the model's device
        if not all_finite(scores):
            raise BenchError(f"order policy {self.policy_path} returned non-finite scores; retrain it with: "
                             f"{train_command(self.task_name, self.T)}")
        probs = reveal_probs(scores.float(), state.masked, self.temperature, cfg.eps, cfg.param)
        uniforms = state.uniform(f"learned:{self.seed}") if self.mode == "sample" else None  # each input's own draws
        return choose_reveals(probs, state.masked, self.mode, uniforms=uniforms)
