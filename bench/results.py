"""Result files: one JSON summary + one JSONL of per-sample records per run, written atomically."""
import json
import os
from pathlib import Path

SCHEMA_VERSION = 1


def write_text_atomic(path, text):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def append_records(path, records):
    """Append records to a partial JSONL; a line cut by a kill is dropped on reading."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in records))
        handle.flush()
        os.fsync(handle.fileno())


def read_records(path):
    """Complete JSON lines of a (possibly partial) JSONL file."""
    records = []
    if Path(path).exists():
        for line in Path(path).read_text().splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                break  # the tail of a killed write
    return records


def read_result(path):
    """A result summary, or None when missing or unreadable (then the run is redone)."""
    try:
        result = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return result if result.get("schema_version") == SCHEMA_VERSION else None


def find_results(root):
    """Every readable result summary under ``root``."""
    found = []
    for path in sorted(Path(root).rglob("*.json")):
        result = read_result(path)
        if result is not None and "metrics" in result:
            found.append(result)
    return found


def load(path="results"):
    """All results under ``path`` (a folder or one JSON file) as a pandas DataFrame,
    one row per (run, metric)."""
    import pandas as pd
    path = Path(path)
    results = [read_result(path)] if path.is_file() else find_results(path)
    rows = []
    for result in filter(None, results):
        for m in result["metrics"]:
            rows.append({"task": result["task"], "strategy": result["strategy"],
                         "spec": result["config"]["strategy_spec"], "model": result["model"]["id"],
                         "seed": result["config"]["seed"], "metric": m["name"], "value": m["value"],
                         "ci_low": m["ci_low"], "ci_high": m["ci_high"],
                         "higher_is_better": m["higher_is_better"], "n": m["n"]})
    return pd.DataFrame(rows)
