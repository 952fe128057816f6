"""`bench throughput`: forward passes per second of each task's model at several batch sizes.

A pass here is one input through the model once (what `bench run` counts per input), so at
batch B one model call is B passes. Each batch is the task's first inputs in their start state
(repeated to fill B), timed over whole calls after one warm-up call until ``seconds`` have
passed (at least ``min_calls`` calls); the table gives passes per second, milliseconds per call
and the torch threads used.
"""
import time

import torch

from bench.device import place, placement
from bench.errors import BenchError
from bench.registry import make_task, split_specs


def parse_batches(text):
    try:
        sizes = [int(part) for part in split_specs(text)]
    except ValueError:
        raise BenchError(f"--batches must be comma-separated whole numbers, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise BenchError(f"--batches needs sizes of at least 1, got {text!r}")
    return sizes


def time_calls(model, tokens, masked, seconds, min_calls):
    """(calls, seconds) of repeated model calls after one warm-up call."""
    synchronize = torch.cuda.synchronize if getattr(model, "placement", None) and \
        model.placement.kind == "cuda" else (lambda: None)
    model(tokens, masked)
    synchronize()
    calls, start = 0, time.perf_counter()
    while calls < min_calls or time.perf_counter() - start < seconds:
        model(tokens, masked)
        calls += 1
    synchronize()
    return calls, time.perf_counter() - start


def measure(task, where, sizes, seconds=2.0, min_calls=2):
    """Rows {task, batch, passes_per_second, ms_per_call, calls} of ``task``'s model on ``where``."""
    model = place(task.load_model(), where)
    eval_set = task.eval_set(None, 0)
    rows = []
    for size in sizes:
        index = torch.arange(size) % len(eval_set)
        calls, spent = time_calls(model, eval_set.tokens[index], eval_set.masked[index], seconds, min_calls)
        rows.append({"task": task.name, "batch": size, "passes_per_second": size * calls / spent,
                     "ms_per_call": 1e3 * spent / calls, "calls": calls})
    return rows


def throughput(task_names, batches, device, dtype, seconds):
    """`bench throughput`: print a Markdown table, one row per task and batch size."""
    where = placement(device, dtype)
    sizes = parse_batches(batches)
    if not seconds > 0:
        raise BenchError(f"--seconds must be above 0, got {seconds}")
    tasks = [make_task(name) for name in split_specs(task_names)]
    print(f"device {where.device}, dtype {where.dtype}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")
    print("| task | batch | passes/s | ms per call |")
    print("|---|---|---|---|")
    for task in tasks:
        for row in measure(task, where, sizes, seconds):
            print(f"| {row['task']} | {row['batch']} | {row['passes_per_second']:,.0f} | {row['ms_per_call']:,.1f} |",
                  flush=True)
