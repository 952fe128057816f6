"""Result files: one JSON summary + one JSONL of per-sample records per run, written atomically.

A summary records how many records its JSONL holds (``n_samples``) and the JSONL's SHA-256
(``records_sha256``), so a truncated or altered records file is found and its run redone.
Summaries written before the checksum existed are checked by their record count alone.
"""
import hashlib
import json
import os
import sys
import uuid
from pathlib import Path

from bench.errors import BenchError

SCHEMA_VERSION = 1
SUMMARY_KEYS = ("task", "label", "config", "metrics")  # what makes a JSON object a run summary


def write_atomic(path, write):
    """Call ``write(handle)`` on a new binary file beside ``path``, then rename it over ``path``:
    readers see the old or the new file, never half of one. The temporary name is unique to this
    process and call, so concurrent writers of one path never write into each other's file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "xb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # only left when the write failed


def write_text_atomic(path, text):
    """``text`` (UTF-8) written to ``path`` atomically (``write_atomic``)."""
    write_atomic(path, lambda handle: handle.write(text.encode("utf-8")))


def cached_json(path, make, valid):
    """The JSON value kept at ``path`` when ``valid(value)`` holds, else ``make()`` (a JSON-ready
    value) written there and returned as a later read would give it. A cache that cannot be
    written costs the time only."""
    stored, problem = load_json(path) if Path(path).is_file() else (None, "absent")
    if problem is None and valid(stored):
        return stored
    text = to_json(make())
    try:
        write_text_atomic(path, text)
    except OSError:
        pass
    return json.loads(text)


def to_json(data, **options):
    """JSON text of ``data``; NaN or infinity (not JSON) is a one-line error, never written."""
    try:
        return json.dumps(data, allow_nan=False, **options)
    except ValueError:
        raise BenchError("a result holds a non-finite number (NaN or infinity); nothing was written") from None


def records_text(records):
    """The JSONL text of ``records``: one JSON object per line."""
    return "".join(to_json(r) + "\n" for r in records)


def text_digest(text):
    return hashlib.sha256(text.encode()).hexdigest()


def append_records(path, records):
    """Append records to a partial JSONL; a line cut by a kill is dropped on reading."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        handle.write(records_text(records))
        handle.flush()
        os.fsync(handle.fileno())


def parse_records(text):
    """Records of JSONL ``text`` up to the first line that is not a record (the tail of a killed
    write, or damage)."""
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            break
        if not isinstance(record, dict) or "index" not in record:
            break
        records.append(record)
    return records


def read_records(path):
    """Complete records of a (possibly partial or damaged) JSONL file; [] when it is absent."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    return parse_records(data.decode("utf-8", errors="replace"))


def check_records(summary, records_path):
    """(records, None) when the records file matches its summary, else (None, why not: a phrase).

    The checksum is compared where the summary has one; the record count always."""
    try:
        data = Path(records_path).read_bytes()
    except FileNotFoundError:
        return None, "its records file is missing"
    except OSError as err:
        return None, f"its records file cannot be read ({err.strerror})"
    records = parse_records(data.decode("utf-8", errors="replace"))
    if len(records) != summary.get("n_samples") or len(data.splitlines()) != len(records):
        return None, (f"its records file holds {len(records)} complete records, "
                      f"the summary counts {summary.get('n_samples')}")
    expected = summary.get("records_sha256")
    if expected is not None and hashlib.sha256(data).hexdigest() != expected:
        return None, "its records file does not match the checksum in the summary"
    return records, None


def load_json(path):
    """(data, None) or (None, why the file cannot be read: a phrase)."""
    try:
        return json.loads(Path(path).read_bytes().decode("utf-8")), None
    except OSError as err:
        return None, f"cannot be read ({err.strerror})"
    except UnicodeDecodeError:
        return None, "is not UTF-8 text"
    except json.JSONDecodeError as err:
        return None, f"is not JSON ({err.msg} at line {err.lineno})"
    except RecursionError:
        return None, "is JSON nested too deeply"


def summary_problem(data, any_schema=False):
    """Why a JSON value is not a run summary this code reads (a phrase), or None when it is one;
    ``any_schema``: a summary of another schema version is not a problem (compare marks it)."""
    if not isinstance(data, dict):
        return f"holds a JSON {type(data).__name__}, not a result summary"
    if data.get("schema_version") != SCHEMA_VERSION and not any_schema:
        return f"has schema version {data.get('schema_version')!r}; this code reads {SCHEMA_VERSION}"
    if not isinstance(data.get("config"), dict) or not isinstance(data.get("metrics"), list):
        return "has no config or metrics"
    return None


def read_result(path):
    """A result summary, or None when missing or unreadable (then the run is redone)."""
    data, _ = load_json(path)
    return None if data is None or summary_problem(data) else data


def scan_results(root, with_paths=False, any_schema=False):
    """(every run summary under ``root`` (``with_paths``: (path, summary) pairs), one line per
    .json file there that cannot be read as one).

    JSON objects that are not shaped like run summaries (other tools' files, such as MI results)
    are neither results nor problems."""
    found, problems = [], []
    for path in sorted(Path(root).rglob("*.json")):
        data, why = load_json(path)
        if why is None and isinstance(data, dict) and not all(k in data for k in SUMMARY_KEYS):
            continue
        why = why or summary_problem(data, any_schema)
        if why:
            problems.append(f"{path} {why}")
        else:
            found.append((path, data) if with_paths else data)
    return found, problems


def find_results(root):
    """Every readable result summary under ``root``; each unreadable one is named on stderr."""
    found, problems = scan_results(root)
    for problem in problems:
        print(f"skipped result file: {problem}", file=sys.stderr)
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
