"""Issue 17, item 6: the decode loop costs little beside the model. For every registered strategy on
each shipped task model, at 1 thread: overhead = (decode time - forward time) / forward time,
where forward time sums every model call (an oracle's probing passes too). The figures are
reported, not held to a limit: the MI strategies' read 2.4-3.0% on the 2-core machine (3.0% on a
busy day) and 3.2% on another machine, so a 3% assert failed on a slower or busier machine. Each case
puts its figures in pytest-benchmark's ``extra_info`` (``overhead``, the smallest; ``overheads``,
every decode's), so they land in the saved JSON, and asserts only a bound no noise reaches
(SANITY_LIMIT, below).

Slow (about 7 minutes): python -m pytest -m slow -s tests/test_overhead.py (prints each figure).
Saved: add --benchmark-enable --benchmark-json=PATH (one decode per case is also timed), and
`python -m bench.benchcheck BASELINE PATH` prints each case's overhead beside the baseline's
(docs/timing.md, "Benchmarks (pytest-benchmark)"). The overhead is measured here with
time.perf_counter whether benchmarking is on or off, the smallest of REPEATS decodes (other
processes on the machine only ever add time). Freed memory is kept for reuse as the bench
command keeps it (bench.allocator), in this process as there.
"""
import os
import time

import pytest
import torch

from bench.allocator import keep_freed_memory
from bench.decode import decode
from bench.registry import STRATEGIES, load_plugins, make_task, parse_strategy

# A bound only a gross regression crosses, not a target: the overhead is a ratio of two times taken
# in the same decodes at one thread (a slower or busier machine stretches both), the smallest of
# REPEATS; the largest figure measured is 3.2% (another machine) and the largest ever, before
# issue 17's work, 11.4%. What a machine or load does to it is a fraction of a point to about a
# point (2.4-3.0% here, 3.2% there); 20% is the loop costing a fifth of the model, which no noise makes.
SANITY_LIMIT = 0.20
REPEATS = 3
# proteins per decode: 16 by default (docs/lab.md's figures); UNMASK_BENCH_OVERHEAD_PROTEINS
# measures another batch (docs/lab.md gives 64)
INPUTS = {"sudoku": 64, "protein": int(os.environ.get("UNMASK_BENCH_OVERHEAD_PROTEINS", "16"))}
# Every registered strategy is measured on every task model: at its default spec, or at the
# setting named here (one from the middle of its default sweep). A new strategy needs no edit here.
# The oracle probes the model hundreds of times per input, so it decodes fewer inputs.
SETTINGS = {
    "sudoku": {"topk": "topk:k=5", "margin": "margin:k=5", "eb": "eb:gamma=0.3", "threshold": "threshold:tau=0.9",
               "mi": "mi:gamma=0.3", "mi_eb": "mi_eb:gamma=0.3", "mi_oracle": "mi_oracle:gamma=0.3,target=directed",
               "learned": "learned:T=10,mode=threshold"},
    "protein": {"topk": "topk:k=4", "margin": "margin:k=4", "eb": "eb:gamma=1", "threshold": "threshold:tau=0.7",
                "mi": "mi:gamma=6", "mi_eb": "mi_eb:gamma=10", "mi_oracle": "mi_oracle:gamma=6,target=directed",
                "learned": "learned:T=10,mode=threshold"},
}
FEWER = {"mi_oracle": {"sudoku": 8, "protein": 2}}


class TimedModel:
    """The model with the wall time of its calls summed: every forward pass, probing ones too."""

    def __init__(self, model):
        self.model, self.seconds = model, 0.0

    def __getattr__(self, name):
        return getattr(self.__dict__["model"], name)

    def __call__(self, tokens, masked):
        start = time.perf_counter()
        out = self.model(tokens, masked)
        self.seconds += time.perf_counter() - start
        return out


@pytest.fixture(scope="module")
def one_thread():
    keep_freed_memory()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


LOADED = {}


def loaded(task_name):
    if task_name not in LOADED:
        task = make_task(task_name)
        LOADED[task_name] = task, task.load_model(), task.eval_set(None, 0)
    return LOADED[task_name]


def cases():
    load_plugins()
    for task_name, settings in SETTINGS.items():
        for name in sorted(STRATEGIES):
            yield pytest.param(task_name, settings.get(name, name), id=f"{task_name}-{settings.get(name, name)}")


@pytest.mark.slow
@pytest.mark.parametrize("task_name,spec", list(cases()))
def test_decode_overhead(benchmark, one_thread, task_name, spec):
    task, model, eval_set = loaded(task_name)
    n = FEWER.get(spec.partition(":")[0], {}).get(task_name, INPUTS[task_name])
    tokens, masked = eval_set.tokens[:n], eval_set.masked[:n]
    strategy = parse_strategy(spec)
    forward = []

    def overhead():
        timed = TimedModel(model)
        strategy.bind(task, timed)   # an oracle probes the timed model
        start = time.perf_counter()
        result = decode(timed, tokens, masked, strategy, task.temperature)
        total = time.perf_counter() - start
        assert not result.tokens[result.passes > 0].eq(0).all()
        forward.append(timed.seconds)
        return (total - timed.seconds) / timed.seconds

    measured = [overhead() for _ in range(REPEATS - 1)]
    measured.append(benchmark.pedantic(overhead, rounds=1, iterations=1))
    best = min(measured)
    benchmark.group = f"decode overhead {task_name}"
    benchmark.extra_info.update(overhead=best, overheads=measured, forward_s=forward[measured.index(best)],
                                inputs=n, threads=torch.get_num_threads())
    print(f"{task_name} {spec}: overhead {100 * best:.2f}% (of {REPEATS}: "
          f"{', '.join(f'{100 * m:.2f}%' for m in measured)})")
    assert best < SANITY_LIMIT, (f"{spec} on {task_name}: overhead {100 * best:.2f}% >= {100 * SANITY_LIMIT:.0f}%, "
                                 f"a gross regression of the decode loop (it is a few percent)")
