"""MI-guided unmasking: a small network predicts pairwise MI from the model's hidden states;
positions that depend on each other are not revealed together (rule: strategies/mi/greedy.py)."""
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import torch

from bench.checkpoints import file_id, helper_file
from bench.core import Strategy
from bench.device import helper_device, run_helper
from bench.errors import BenchError
from bench.registry import register_strategy
from strategies.mi import MI_TASK
from strategies.mi.estimator import FILE_NAME, WholeMatrix, load_estimator
from strategies.mi.greedy import greedy_select, greedy_select_ranked


def check_budget(gamma, lam):
    if not gamma >= 0:
        raise ValueError(f"gamma must be >= 0, got {gamma}")
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam}")


@register_strategy
@dataclass
class MIGuided(Strategy):
    """Entropy-ordered greedy reveal; cost = entropy + lam * predicted MI with those chosen, budget gamma."""
    requires: ClassVar[tuple] = (MI_TASK,)
    name: ClassVar[str] = "mi"
    needs: ClassVar[tuple] = ("hidden",)   # the estimator reads the model's hidden states
    gamma: float = 0.3
    lam: float = 1.0
    estimator: str = field(default="", metadata={"help": "estimator file (default: the task's shipped one)"})

    def __post_init__(self):
        check_budget(self.gamma, self.lam)
        self.network, self.estimator_id = None, None

    def bind(self, task, model):
        """Load the estimator that belongs to ``model``; a missing or foreign one is an error."""
        path = helper_file(self.estimator) if self.estimator else Path(task.weights_dir) / FILE_NAME
        self.network = load_estimator(path, model.checkpoint_id, task.name).to(helper_device(model))
        self.estimator_id = file_id(path)
        self.estimator_path = path

    def helper_ids(self):
        return {"mi_estimator": self.estimator_id}

    def reader(self, state, need=None, order=None):
        """The estimator's MI of the state as a PairReader (computed as far as it is read, on the
        model's device), exact between the positions ``need`` (default: the masked ones); a
        one-line error when unbound. A network without ``reader`` gives the whole matrix.
        ``order``: rank_masked(-entropy, masked)'s order, where the caller has it already."""
        if self.network is None:
            raise BenchError(f"strategy {self.name} has no estimator loaded (bind(task, model) was not called)")
        if not hasattr(self.network, "reader"):
            inputs = (state.out.hidden, state.probs, state.masked)
            return WholeMatrix(run_helper(self.network, *inputs) if isinstance(self.network, torch.nn.Module)
                               else self.network(*inputs))
        return self.network.reader(state.out.hidden, state.probs, state.entropy, state.masked, need, order)

    def checked(self, reader, result):
        """``result``, or a one-line error where the estimator gave a non-finite number."""
        if not reader.finite:
            raise BenchError(f"MI estimator {self.estimator_path} returned non-finite values; retrain it "
                             f"with: python -m bench train mi")
        return result

    def select(self, state):
        if self.lam == 0:   # the penalty is 0 whatever MI is: nothing of the estimator is read
            return greedy_select(state.entropy, state.masked, self.gamma, self.lam, mi_row=None)
        # the rule reads MI only between positions it can take: those whose entropy fits the budget
        reader = self.reader(state, state.masked & (state.entropy <= self.gamma))
        if not hasattr(reader, "extend"):
            return self.checked(reader, greedy_select(state.entropy, state.masked, self.gamma, self.lam, reader.rows))
        return self.checked(reader, greedy_select_ranked(state.masked, self.gamma, self.lam, reader))
