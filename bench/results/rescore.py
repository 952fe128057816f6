"""`bench rescore`: recompute result files' metrics from their per-sample records, no decoding.

For when a metric is added or its confidence interval changes: every summary under the results
folder (one task, or all) gets its ``metrics`` and ``floor`` recomputed by the current task code
from its JSONL records; its config, identity, passes and wall time stay as they were, and
``rescored`` records the commit and versions that recomputed it.
"""
import json
import sys

from tqdm import tqdm

from bench.errors import BenchError
from bench.provenance import provenance
from bench.registry import TASKS, load_plugins, lookup
from bench.results.files import check_records, records_path, to_json, write_text_atomic
from bench.results.store import Store
from bench.results.summary import mark_natural, record_metrics


def summaries(results_dir, task_name):
    """(path, summary) of every complete run of ``task_name`` (or any task) under ``results_dir``."""
    return [(path, summary) for path, summary in Store(results_dir).scan()[0]
            if "records_file" in summary and task_name in (None, summary["task"])]


def point_headline(path, summary, task):
    """Set ``summary``'s headline to ``task``'s (1), if the summary stores that metric; else say so (0)."""
    if task.headline not in {m["name"] for m in summary["metrics"]}:
        print(f"  skipped {path}: it has no {task.headline} metric; rescore it in full", file=sys.stderr)
        return 0
    summary["headline"] = task.headline
    write_text_atomic(path, to_json(summary, indent=1))   # a NaN is refused, never written
    return 1


def rescore_summary(path, summary, task):
    """Recompute one summary's metrics and floor from its records by ``task`` and write it (1), or
    say why its records cannot be used (0)."""
    records, problem = check_records(summary, records_path(path, summary))
    if problem:
        print(f"  skipped {path}: {problem}", file=sys.stderr)
        return 0
    natural = task.natural_variation(len(records))
    summary["metrics"] = mark_natural(task.summarize(records), natural) + record_metrics(records)
    if natural:
        summary["natural_variation"] = natural
    summary["headline"] = task.headline        # a task whose headline changed ranks old runs on the new one
    summary["floor"] = task.floor()
    summary["floor_label"] = task.floor_label()
    summary["rescored"] = provenance()
    write_text_atomic(path, to_json(summary, indent=1))   # a NaN is refused, never written
    return 1


def rescore(results_dir="results", task_name=None, headline_only=False):
    load_plugins()
    if task_name is not None:
        lookup("task", task_name, TASKS)
    found = summaries(results_dir, task_name)
    if not found:
        raise BenchError(f"no complete result files{' of ' + task_name if task_name else ''} under {results_dir}")
    tasks, done = {}, 0
    for path, summary in tqdm(found, desc="rescore", unit="run"):
        options = summary["config"]["task_options"]
        key = (summary["task"], json.dumps(options, sort_keys=True))
        task = tasks.setdefault(key, TASKS[summary["task"]](**options))
        if headline_only:
            done += point_headline(path, summary, task)
            continue
        done += rescore_summary(path, summary, task)
    print(f"rescored {done} of {len(found)} result file(s) under {results_dir}")
