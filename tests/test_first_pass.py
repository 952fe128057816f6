"""The first pass shared by the runs of one invocation (bench.decode.FirstPasses): every registered
strategy's decode is identical with and without it, each use gets its own copy, and memory is bounded."""
import pytest
import torch

from bench.decode import FirstPasses, decode
from bench.presets import sweep_of
from bench.registry import STRATEGIES, load_plugins, parse_strategy
from conftest import loaded_task

INPUTS = {"sudoku": 2, "hmm_mdm": 4}   # argmax values (Sudoku) and sampled ones (hmm_mdm)


def spec_on(task_name, name):
    """The strategy's setting in the task's quick tier (its trained helpers exist there), else its default."""
    return next((spec for spec in sweep_of(task_name, "quick") if spec.partition(":")[0] == name), name)


SLOW = {("sudoku", "mi_oracle"),   # probing: 78 s here, 658 s on a loaded host; hmm_mdm's case checks the rule fast
        ("sudoku", "wino"), ("hmm_mdm", "wino")}   # a forward per verified position: 41 s and 17 s here


def cases():
    load_plugins()
    return [pytest.param(task_name, spec_on(task_name, name), id=f"{task_name}-{spec_on(task_name, name)}",
                         marks=[pytest.mark.slow] if (task_name, name) in SLOW else [])
            for task_name in INPUTS for name in sorted(STRATEGIES)]


def decoded(task, model, eval_set, name, first_pass):
    strategy = parse_strategy(name)
    strategy.bind(task, model)
    return decode(model, eval_set.tokens, eval_set.masked, strategy, task.temperature, seed=3,
                  index=torch.arange(len(eval_set)), first_pass=first_pass)


@pytest.mark.parametrize("task_name,name", cases())
def test_every_strategy_decodes_the_same_with_the_shared_first_pass(task_name, name):
    """Each registered strategy (a new one included, at its default spec) on an argmax and a sampling task."""
    task, model, eval_set = loaded_task(task_name, INPUTS[task_name])
    shared = FirstPasses(model)
    decoded(task, model, eval_set, "sequential", shared)            # another run computes the first pass
    with_shared = decoded(task, model, eval_set, name, shared)
    alone = decoded(task, model, eval_set, name, None)
    assert shared.hits == 1 and shared.misses == 1
    for field in ("tokens", "passes", "aux_passes", "log_q"):
        assert torch.equal(getattr(with_shared, field), getattr(alone, field)), field


class CountingModel:
    """A tiny model that counts its calls; its logits depend on the tokens."""
    value_tokens = torch.arange(1, 4)

    def __init__(self):
        self.calls = 0

    def __call__(self, tokens, masked):
        from bench.core import ModelOutput
        self.calls += 1
        return ModelOutput(logits=torch.nn.functional.one_hot(tokens % 3, 3).float())


def test_a_kept_first_pass_is_copied_and_the_memory_bound_holds():
    tokens, masked = torch.tensor([[1, 2, 0]]), torch.tensor([[False, False, True]])
    model = CountingModel()
    shared = FirstPasses(model)
    first = shared(tokens, masked)
    first.logits += 100                                        # a strategy writing into its output
    again = shared(tokens, masked)
    assert model.calls == 1 and again.logits.max() == 1        # reused, and untouched by the write
    shared(tokens, ~masked)                                    # another state: another entry
    assert model.calls == 2 and (shared.hits, shared.misses) == (1, 2)
    none_kept = FirstPasses(model, limit_bytes=0)
    none_kept(tokens, masked), none_kept(tokens, masked)
    assert model.calls == 4 and none_kept.kept == {}


def test_an_output_that_cannot_be_copied_is_computed_each_time():
    """A plugin model's output type that deepcopy refuses: not kept, and no error."""
    class Uncopyable:
        def __init__(self, logits):
            self.logits = logits

        def __deepcopy__(self, memo):
            raise TypeError("no copies")

    class Model(CountingModel):
        def __call__(self, tokens, masked):
            return Uncopyable(super().__call__(tokens, masked).logits)

    tokens, masked = torch.tensor([[1, 2, 0]]), torch.tensor([[False, False, True]])
    model = Model()
    shared = FirstPasses(model)
    shared(tokens, masked), shared(tokens, masked)
    assert model.calls == 2 and shared.kept == {}
