"""A lower estimate of KL(q || p) for runs that draw their order at random (issue 29, item 7).

Such a run's recorded log q sums the values' log-probabilities along the one order it drew, so
its mean log q - log p is KL(q(x, order) || p(x) r(order | x)), an upper bound on KL(q || p).
Here each decoded sample x is decoded again M times with its values forced to x, each time along
an order the strategy draws afresh (its own random stream, never the run's): the forced log q is
then log q(x | order) with the order drawn from the strategy's own law given x, so the mean over
the M orders of q(x | order) is an unbiased estimate of q(x), and its log (log-mean-exp) is
biased low by Jensen, the bias shrinking like 1/M. The KL it gives is a lower estimate: low by
that bias, stated by the same estimate over the first M/2 orders (the rise from M/2 to M is about
the bias left at M). A claim on such a run is shown only where the bound and this estimate agree
(bench.report.claims).

Each record gets ``log_q_orders`` (log-mean-exp over the M orders), ``log_q_orders_half`` (over
the first M/2) and ``orders`` (M); the summary lists them as ``derived_fields`` (a decode does not
make them, so ``--verify`` skips them) and is rescored by the task (metric ``kl_nats_orders``).

    python -m bench orders --results results --orders 64     (tasks/hmm/cli.py)
"""
import json
import math
import time
from pathlib import Path

import torch
from tqdm import tqdm

from bench.decode import decode
from bench.errors import BenchError
from bench.provenance import provenance
from bench.registry import TASKS, load_plugins, parse_strategy
from bench.results import records_file_text, run_records, text_digest, write_text_atomic
from bench.results.rescore import rescore_summary, summaries
from bench.settings import order_is_drawn

DERIVED = ("log_q_orders", "log_q_orders_half", "orders")
ORDER_STREAM = 2 ** 32   # the M order draws of input i are streams (m + 1) * ORDER_STREAM + i: never a run's own
ROWS_PER_CALL = 4096     # forced decodes per loop call (inputs x orders)


def order_streams(inputs, orders):
    """[len(inputs) * orders] stream indices: input i's m-th order draw is (m + 1) * ORDER_STREAM + i."""
    m = torch.arange(orders).repeat(len(inputs))
    return (m + 1) * ORDER_STREAM + torch.as_tensor(inputs).repeat_interleave(orders)


def log_mean_exp(values):
    """[n] log of the mean of exp(``values`` [n, M]) over its last axis, in float64."""
    return torch.logsumexp(values, dim=-1) - math.log(values.shape[-1])


def forced_log_q(task, model, strategy, values, inputs, orders, seed):
    """[n, orders] float64 log q(x_i | order) of the samples ``values`` ([n, N] value indices) of
    eval-set inputs ``inputs``, each along ``orders`` orders the strategy draws afresh."""
    n, length = values.shape
    forced = values.repeat_interleave(orders, 0)
    streams = order_streams(inputs, orders)
    out = torch.empty(n * orders, dtype=torch.float64)
    for start in range(0, n * orders, ROWS_PER_CALL):
        rows = slice(start, min(start + ROWS_PER_CALL, n * orders))
        tokens = torch.zeros(rows.stop - start, length, dtype=torch.long)
        masked = torch.ones_like(tokens, dtype=torch.bool)
        result = decode(model, tokens, masked, strategy, task.temperature, seed=seed, index=streams[rows],
                        forced=forced[rows])
        if not torch.equal(result.tokens - 1, forced[rows]):
            raise BenchError(f"{strategy.name}: a forced decode did not reproduce its sample")
        out[rows] = result.log_q
    return out.view(n, orders)


def estimate_run(path, summary, task, model, orders):
    """Add the lower estimate's fields to one run's records and rescore its summary."""
    records = run_records(summary, Path(path).parent / summary["records_file"])
    strategy = parse_strategy(summary["config"]["strategy_spec"])
    strategy.bind(task, model)
    values = torch.tensor([[int(c) for c in r["output"]] for r in records])
    inputs = torch.tensor([r["index"] for r in records])
    started = time.perf_counter()
    with torch.inference_mode():
        log_q = forced_log_q(task, model, strategy, values, inputs, orders, summary["config"]["seed"])
    full, half = log_mean_exp(log_q), log_mean_exp(log_q[:, : orders // 2])
    for record, a, b in zip(records, full.tolist(), half.tolist()):
        record.update(log_q_orders=round(a, 6), log_q_orders_half=round(b, 6), orders=orders)
    text = records_file_text(summary["config"], records)
    write_text_atomic(Path(path).parent / summary["records_file"], text)
    summary.update(records_sha256=text_digest(text), derived_fields=list(DERIVED),
                   order_estimate={"orders": orders, "seconds": round(time.perf_counter() - started, 1),
                                   "made": provenance()})
    rescore_summary(path, summary, task)


def drawn_runs(results_dir, task_names):
    """(path, summary) of every complete run of ``task_names`` under ``results_dir`` that draws its order
    and has a log q to bound."""
    def bounded(summary):
        return (summary["task"] in task_names and "kl_nats" in {m["name"] for m in summary["metrics"]}
                and order_is_drawn(summary["strategy"], summary["config"]["strategy_params"]))
    return [(path, summary) for path, summary in summaries(results_dir, None) if bounded(summary)]


def estimate_orders(results_dir="results", task_names=("hmm", "hmm_mdm"), orders=64, only="", skip=None):
    """The lower estimate at ``orders`` orders per sample for every run of ``task_names`` under
    ``results_dir`` that draws its order (``only``: those whose label contains it; ``skip``: not
    those whose label contains it); a run that already carries one at ``orders`` or more is kept as it is."""
    if not task_names or any(t not in ("hmm", "hmm_mdm") for t in task_names):
        raise BenchError(f"--tasks takes hmm and hmm_mdm, got {','.join(task_names) or 'nothing'}")
    if orders < 2 or orders % 2:
        raise BenchError(f"--orders must be an even number of at least 2, got {orders}")
    load_plugins()
    found = [(p, s) for p, s in drawn_runs(results_dir, task_names)
             if only in s["label"] and not (skip and skip in s["label"])]
    done = [p for p, s in found if s.get("order_estimate", {}).get("orders", 0) >= orders]
    found = [(p, s) for p, s in found if p not in done]
    if done:
        print(f"{len(done)} runs already carry an estimate at {orders} orders or more: kept")
    if not found and done:
        return
    if not found:
        raise BenchError(f"no complete run that draws its order under {results_dir} for {', '.join(task_names)}")
    models = {}
    for path, summary in tqdm(found, desc="orders", unit="run"):
        options = summary["config"]["task_options"]
        key = (summary["task"], json.dumps(options, sort_keys=True))
        if key not in models:
            task = TASKS[summary["task"]](**options)
            models[key] = (task, task.load_model())
        estimate_run(path, summary, *models[key], orders)
        tqdm.write(f"  {summary['task']} {summary['label']}: {summary['order_estimate']['seconds']} s")
