"""`bench run`: strategies on tasks, batches through the decode loop, resumable result files."""
import argparse
import hashlib
import json
import re
import sys
from dataclasses import asdict
from pathlib import Path

import torch
from tqdm import tqdm

from bench.decode import decode
from bench.errors import BenchError
from bench.presets import plan
from bench.provenance import provenance
from bench.registry import canonical, make_task, parse_strategy, split_specs
from bench.results import SCHEMA_VERSION, append_records, read_records, read_result, write_text_atomic
from bench.stats import mean_metric
from bench.table import render_text


def run_config(task, model, eval_set, strategy, seed, limit, batch_size):
    """Everything that determines a run's numbers (its identity)."""
    config = {"task": task.name, "task_options": task.config(), "strategy_spec": canonical(strategy),
              "strategy_params": asdict(strategy), "seed": seed, "limit": limit, "batch_size": batch_size,
              "data_id": eval_set.data_id, "model_id": model.checkpoint_id, "temperature": task.temperature}
    if strategy.helper_ids():  # trained helpers (an MI estimator) are part of the identity
        config["helper_ids"] = strategy.helper_ids()
    return config


def result_paths(out_dir, config):
    """(summary .json, records .jsonl, in-progress .partial.jsonl) of a run."""
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:10]
    slug = re.sub(r"[^A-Za-z0-9.]+", "_", config["strategy_spec"]).strip("_")
    stem = str(Path(out_dir) / config["task"] / f"{slug}-seed{config['seed']}-{digest}")
    return Path(stem + ".json"), Path(stem + ".jsonl"), Path(stem + ".partial.jsonl")  # slugs may hold dots


def completed_batches(partial_path, batch_rows):
    """Records of fully written batches; the partial file is rewritten to hold just those."""
    records = read_records(partial_path)
    counts = {}
    for record in records:
        counts[record["batch"]] = counts.get(record["batch"], 0) + 1
    done = {b for b, c in counts.items() if c == len(batch_rows[b])}
    kept = [r for r in records if r["batch"] in done]
    if Path(partial_path).exists():  # drop a batch cut short, so appends start on a clean line
        write_text_atomic(partial_path, "".join(json.dumps(r) + "\n" for r in kept))
    return kept, done


def decode_batches(task, model, eval_set, strategy, config, partial_path, label):
    """Decode every batch not yet in the partial file, appending its records as it finishes."""
    n, size = len(eval_set), config["batch_size"]
    batch_rows = [torch.arange(i, min(i + size, n)) for i in range(0, n, size)]
    records, done = completed_batches(partial_path, batch_rows)
    for batch, rows in enumerate(tqdm(batch_rows, desc=f"{task.name} {label}", unit="batch", leave=False)):
        if batch in done:
            continue
        generator = torch.Generator().manual_seed(config["seed"] * 100_003 + batch)
        result = decode(model, eval_set.tokens[rows], eval_set.masked[rows], strategy,
                        task.temperature, generator)
        new = task.records(result.tokens, result.passes, rows, eval_set)
        for i, record in enumerate(new):
            record.update(batch=batch, batch_seconds=result.seconds)
            if strategy.aux_passes_metric:
                record[strategy.aux_passes_metric] = int(result.aux_passes[i])
        append_records(partial_path, new)
        records += new
    return sorted(records, key=lambda r: r["index"])


AUX_PASS_METRICS = ("probe_passes",)  # record names of passes a strategy spends besides decoding


def aux_pass_metrics(records):
    """Passes a strategy spent besides decoding (an oracle's probing), reported apart."""
    return [mean_metric(name, [r[name] for r in records], False,
                        "probing passes per sample (oracle; not decoding passes)", field=name)
            for name in AUX_PASS_METRICS if records and name in records[0]]


def summarize(task, model, config, records, label):
    seconds = sum({r["batch"]: r["batch_seconds"] for r in records}.values())
    return {"schema_version": SCHEMA_VERSION, "task": task.name, "strategy": config["strategy_spec"].split(":")[0],
            "label": label, "config": config, "headline": task.headline,
            "model": {"id": model.checkpoint_id, "path": config["task_options"].get("model"),
                      "n_params": model.n_params},
            "metrics": task.summarize(records) + aux_pass_metrics(records),
            "n_samples": len(records), "wall_seconds": seconds, "extra_figures": list(task.extra_figures),
            "floor": task.floor(), "provenance": provenance()}


def run_one(task, model, eval_set, strategy, label, seed, limit, batch_size, out_dir):
    """Run (or resume, or skip if already complete) one strategy on one task; returns the summary."""
    strategy.bind(task, model)  # strategies with trained helpers or probing load them here
    config = run_config(task, model, eval_set, strategy, seed, limit, batch_size)
    summary_path, records_path, partial_path = result_paths(out_dir, config)
    existing = read_result(summary_path)
    if existing is not None and existing["config"] == config and records_path.exists():
        print(f"  {label}: complete already ({summary_path})", file=sys.stderr)
        return existing
    records = decode_batches(task, model, eval_set, strategy, config, partial_path, label)
    summary = summarize(task, model, config, records, label)
    summary["records_file"] = records_path.name
    write_text_atomic(records_path, "".join(json.dumps(r) + "\n" for r in records))
    write_text_atomic(summary_path, json.dumps(summary, indent=1))
    partial_path.unlink(missing_ok=True)
    return summary


def make_tasks(task_names, data, model):
    names = split_specs(task_names)
    if (data or model) and len(names) != 1:
        raise BenchError("--data and --model apply to one task; run one task at a time with them")
    return [make_task(name, data=data, model=model) for name in names]


def run_tasks(args):
    """Run a preset (``default`` unless --preset) with the command line's overrides."""
    plans = plan(args.preset, args.tasks, args.strategies, args.limit, args.seed)
    tasks = make_tasks(",".join(p.task for p in plans), args.data, args.model)
    parsed = [[(spec, parse_strategy(spec)) for spec in p.specs] for p in plans]  # all before any work
    for task, task_plan, strategies in zip(tasks, plans, parsed):
        for seed in task_plan.seeds:
            run_task(task, strategies, argparse.Namespace(**{**vars(args), "limit": task_plan.limit, "seed": seed}))
    return 0


def run_task(task, strategies, args):
    model = task.load_model()
    eval_set = task.eval_set(args.limit, args.seed)
    for problem in task.problems():
        print(f"skipped: {problem}", file=sys.stderr)
    print(f"{task.name}: {len(eval_set)} inputs, model {model.checkpoint_id}, seed {args.seed}", file=sys.stderr)
    results = [run_one(task, model, eval_set, strategy, spec, args.seed, args.limit, args.batch_size, args.out)
               for spec, strategy in strategies]
    print(f"\n{task.name} ({len(eval_set)} inputs, seed {args.seed}; 95% bootstrap CIs)")
    print(render_text(results))
    if task.floor() is not None:
        floor = ", ".join(f"{m['name']} {m['value']:.4f}" for m in task.floor())
        print(f"floor ({task.floor_label()}): {floor}")
    print(f"results in {args.out}/{task.name}/")
