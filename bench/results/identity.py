"""A run's identity: *what* was run names its files and decides what compares with what; *how*
it was executed is recorded beside it, never hashed.

What: the task and its options, the strategy spec (its parameters resolved) and the ids of the
helper files it reads, the model, the data, the input limit, the seed, the temperature, and the
device kind and dtype (``bench.device``: absent for cpu/float32). These are a summary's
``config``. How: batch size, executor, shards, threads: a summary's ``execution``. Every input
draws from its own random stream (bench.streams), so how a run was executed changes no record.

Summaries written before this split (up to 2026-12-05) hold ``batch_size`` in their config and
were named by a hash that included it; ``what_of`` drops it, so such a run is the same run at any
batch size, and ``bench.results.store`` finds it by its identity, whatever its file is called.
"""
import hashlib
import json
import re
from pathlib import Path

HOW_KEYS = ("batch_size",)   # in the configs of runs made before the split: how, not what
# What must match, besides the task and the strategy spec, for two runs to be compared. A
# config without device or dtype ran on the default (bench.device).
SETTINGS = ("model_id", "data_id", "limit", "seed", "temperature", "device", "dtype")
DEFAULTS = {"device": "cpu", "dtype": "float32"}


def what_of(config):
    """The part of a run's config that is its identity (the config less ``HOW_KEYS``)."""
    return {k: v for k, v in config.items() if k not in HOW_KEYS}


def run_id(config):
    """The identity of a run: the SHA-256 of what it ran (new result files' names hold its head)."""
    return hashlib.sha256(json.dumps(what_of(config), sort_keys=True).encode()).hexdigest()


def setting(config, key):
    """One of the ``SETTINGS`` of a config (its default where a config of before it lacks it)."""
    return config.get(key, DEFAULTS.get(key))


def comparison_key(summary, drop=()):
    """What two runs must share to be compared: the task and every one of ``SETTINGS`` except
    those in ``drop`` (``("seed",)``: the runs of one group under every seed; ``("model_id",)``:
    another model's runs on the same inputs)."""
    config = summary["config"]
    return (summary["task"],) + tuple(setting(config, k) for k in SETTINGS if k not in drop)


def strategy_key(summary):
    """What pairs two runs within comparable groups: the task and the fully resolved strategy spec.
    Parameters left empty are dropped (results before schema 1 wrote 'name:gamma=0.3,estimator=')."""
    name, _, params = summary["config"]["strategy_spec"].partition(":")
    kept = [pair for pair in params.split(",") if pair and not pair.endswith("=")]
    return summary["task"], f"{name}:{','.join(kept)}" if kept else name


def result_paths(out_dir, config):
    """(summary .json, records .jsonl, in-progress .partial.jsonl) a new run of ``config`` is
    written to: named by its strategy, seed and identity."""
    slug = re.sub(r"[^A-Za-z0-9.]+", "_", config["strategy_spec"]).strip("_")
    stem = str(Path(out_dir) / config["task"] / f"{slug}-seed{config['seed']}-{run_id(config)[:10]}")
    return Path(stem + ".json"), Path(stem + ".jsonl"), Path(stem + ".partial.jsonl")  # slugs may hold dots
