"""Result files: one JSON summary + one JSONL of per-sample records per run, written atomically.

This module is the results store: it finds, loads, saves and checks result files, partials
included, and every reader (run, executor, report, compare, rescore, verdicts) goes through it.

A summary records how many records its JSONL holds (``n_samples``) and the JSONL's SHA-256
(``records_sha256``), so a truncated or altered records file is found: ``bench run`` redoes the
run, every other reader refuses it in one line. A summary without the checksum is not complete.

A records file opens with a header line naming its run (``{"run": run_id of its config, "task",
"strategy_spec", "seed"}``; it has no ``index``, so it is not a record), and every reader checks
it against the summary's config (``check_records``): records copied under another run's summary,
their checksum updated to match, are refused. Records files written before the header (the
committed results of 2026-12-04 and before) have none and are checked by count and checksum only.

A run in progress appends each finished batch as one line of its ``.partial.jsonl``: the run's
identity (``run_id`` of its config), the batch number, the SHA-256 of the batch's records and
the records. A batch of another run, an edited one or one cut by a kill is discarded on reading,
said in one line, and decoded again.
"""
import hashlib
import json
import math
import os
import sys
import uuid
from pathlib import Path

from bench.errors import BenchError
from bench.files import MiB, read_bytes

SCHEMA_VERSION = 1
SUMMARY_KEYS = ("task", "label", "config", "metrics")  # what makes a JSON object a run summary
RECORDS_LIMIT = 1024 * MiB   # a records or partial file: 1,000,000 inputs of 1 KB each
SUMMARY_LIMIT = 64 * MiB     # a summary (the committed ones are 2-40 KB) or another JSON file of results


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


def records_header(config):
    """The first line of a run's records file: the run's identity, and what a person reads it as."""
    return {"run": run_id(config), "task": config.get("task"), "strategy_spec": config.get("strategy_spec"),
            "seed": config.get("seed")}


def records_file_text(config, records):
    """The text of the records file of the run ``config``: its header line, then its records."""
    return to_json(records_header(config)) + "\n" + records_text(records)


def text_digest(text):
    return hashlib.sha256(text.encode()).hexdigest()


def run_id(config):
    """The identity of a run: the SHA-256 of its config (the result files' names hold its head)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


def batch_line(config_id, batch, records):
    """One partial-file line: a finished batch with its run's identity and its own checksum."""
    text = records_text(records)
    return to_json({"run": config_id, "batch": batch, "sha256": text_digest(text), "records": records}) + "\n"


def append_batch(path, config_id, batch, records):
    """Append a finished batch to a run's partial file (one line; a line cut by a kill is
    discarded on reading)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        handle.write(batch_line(config_id, batch, records))
        handle.flush()
        os.fsync(handle.fileno())


def parse_batch(line, config_id, batch_rows):
    """(the batch line as JSON, None) when a partial-file line is a finished batch of this run,
    else (None, why not: a phrase)."""
    try:
        entry = json.loads(line)
    except json.JSONDecodeError:
        return None, "is cut short or not JSON"
    if not isinstance(entry, dict) or not isinstance(entry.get("records"), list):
        return None, "is not a batch line"
    if entry.get("run") != config_id:
        return None, "belongs to another run"
    batch = entry.get("batch")
    if not isinstance(batch, int) or isinstance(batch, bool) or not 0 <= batch < len(batch_rows):
        return None, f"names batch {batch!r}, not one of this run's {len(batch_rows)}"
    records = entry["records"]
    if not all(isinstance(r, dict) for r in records) or text_digest(records_text(records)) != entry.get("sha256"):
        return None, "does not match its checksum"
    if [r.get("index") for r in records] != list(batch_rows[batch]) or any(r.get("batch") != batch for r in records):
        return None, f"does not hold the inputs of batch {batch}"
    return entry, None


def read_batches(path, config_id, batch_rows):
    """({batch number: records} of the finished batches of run ``config_id`` in its partial file,
    one line per discarded line: why). ``batch_rows[b]`` are the eval-set indices of batch b."""
    try:
        text = read_bytes(path, "partial results file", RECORDS_LIMIT).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return {}, []
    batches, discarded = {}, []
    for number, line in enumerate(text.splitlines(), 1):
        entry, problem = parse_batch(line, config_id, batch_rows)
        if problem is None:
            batches.setdefault(entry["batch"], entry["records"])
        else:
            discarded.append(f"{path} line {number} {problem}; discarded, its batch is decoded again")
    return batches, discarded


def write_batches(path, config_id, batches):
    """Rewrite a partial file to hold just ``batches`` ({number: records}), so appends start clean."""
    write_text_atomic(path, "".join(batch_line(config_id, b, batches[b]) for b in sorted(batches)))


def records_header_of(line):
    """The header of a records file whose first line is ``line``, or None (a file of before the
    header, or damage)."""
    try:
        header = json.loads(line)
    except json.JSONDecodeError:
        return None
    return header if isinstance(header, dict) and "run" in header and "index" not in header else None


def split_records(text):
    """(header or None, records) of a records file's text (``parse_records``)."""
    lines = text.splitlines()
    header = records_header_of(lines[0]) if lines else None
    return header, parse_records("\n".join(lines[1:]) if header is not None else text)


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
    """Complete records of a (possibly damaged) JSONL file; [] when it is absent. For a run's
    records use ``run_records``, which checks them against their summary."""
    try:
        data = read_bytes(path, "records file", RECORDS_LIMIT)
    except FileNotFoundError:
        return []
    return split_records(data.decode("utf-8", errors="replace"))[1]


def header_problem(header, summary):
    """Why a records file's header says its records are not the run ``summary`` describes, or None."""
    config = summary.get("config")
    if header is None or header.get("run") == run_id(config):
        return None
    return (f"its records file holds the records of another run ({header.get('task')} "
            f"{header.get('strategy_spec')} seed {header.get('seed')}, run {str(header.get('run'))[:10]}), "
            f"not of this summary's (run {run_id(config)[:10]})")


def check_records(summary, records_path):
    """(records, None) when the records file matches its summary (its header's run, record count
    and checksum), else (None, why not: a phrase)."""
    expected = summary.get("records_sha256")
    if expected is None:
        return None, "its summary has no records_sha256 to check its records against"
    try:
        data = read_bytes(records_path, "records file", RECORDS_LIMIT)
    except FileNotFoundError:
        return None, "its records file is missing"
    except BenchError as err:   # not a regular file, too large, unreadable
        return None, f"its records file cannot be used ({err})"
    if hashlib.sha256(data).hexdigest() != expected:
        return None, "its records file does not match the checksum in the summary"
    header, records = split_records(data.decode("utf-8", errors="replace"))
    problem = header_problem(header, summary)
    if problem:
        return None, problem
    if len(records) != summary.get("n_samples") or len(data.splitlines()) != len(records) + (header is not None):
        return None, (f"its records file holds {len(records)} complete records, "
                      f"the summary counts {summary.get('n_samples')}")
    return records, None


def records_path(summary_path, summary):
    """Where a run's records lie: beside its summary, under the name the summary gives."""
    return Path(summary_path).parent / str(summary.get("records_file", ""))


def run_records(summary, records_file):
    """The records of a complete run, sorted by input index, checked against its summary; a
    missing, short or altered records file is a one-line error naming it."""
    records, problem = check_records(summary, records_file)
    if problem:
        raise BenchError(f"{records_file}: {problem.removeprefix('its records file ')}; "
                         f"remake the run (bench run) or restore its files")
    return sorted(records, key=lambda r: r["index"])


def load_json(path):
    """(data, None) or (None, why the file cannot be read: a phrase)."""
    try:
        return json.loads(read_bytes(path, "result file", SUMMARY_LIMIT).decode("utf-8")), None
    except FileNotFoundError:
        return None, "cannot be read (No such file or directory)"
    except BenchError as err:   # not a regular file, too large, unreadable
        return None, f"cannot be read ({str(err).removeprefix(f'result file {path} ')})"
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
    for key in ("model", "provenance"):   # every report table and figure reads them
        if not isinstance(data.get(key), dict):
            return f"has no {key} (an incomplete or edited summary)"
    return next(filter(None, map(metric_value_problem, data["metrics"])), None)


def metric_value_problem(metric):
    """Why a summary's metric cannot be shown (a phrase naming it and its field), or None: a NaN
    or infinite value or CI bound (Python's json reads them; `bench run` never writes them)."""
    if not isinstance(metric, dict):
        return "has a metric that is not a JSON object"
    for field in ("value", "ci_low", "ci_high"):
        value = metric.get(field)
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value)):
            return f"has metric {metric.get('name')!r} with {field} {value!r}, not a finite number"
    return None


def records_problem(path, data):
    """Why the records file a summary at ``path`` names is not there (a phrase), or None."""
    name = data.get("records_file")
    if name is not None and not (isinstance(name, str) and name and (Path(path).parent / name).is_file()):
        return f"names records file {name!r}, which is missing"
    return None


def read_result(path):
    """A result summary, or None when missing or unreadable (then the run is redone)."""
    data, _ = load_json(path)
    return None if data is None or summary_problem(data) else data


def scan_results(root, with_paths=False, any_schema=False):
    """(every run summary under ``root`` (``with_paths``: (path, summary) pairs), one line per
    .json file there that cannot be read as one).

    JSON objects that are not shaped like run summaries (other tools' files, such as a helper's evaluation results)
    are neither results nor problems."""
    found, problems = [], []
    for path in sorted(Path(root).rglob("*.json")):
        data, why = load_json(path)
        if why is None and isinstance(data, dict) and not all(k in data for k in SUMMARY_KEYS):
            continue
        why = why or summary_problem(data, any_schema) or records_problem(path, data)
        if why:
            problems.append(f"{path} {why}")
        else:
            found.append((path, data) if with_paths else data)
    return found, problems


def find_results(root, skipped=None):
    """Every readable result summary under ``root``; each unreadable one is named on stderr (and
    added to the list ``skipped``, when given, so a command can count them at its end)."""
    found, problems = scan_results(root)
    if skipped is not None:
        skipped.extend(problems)
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
