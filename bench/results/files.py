"""The format of one run's result files: a JSON summary and a JSONL of per-sample records,
written atomically, and the ``.partial.jsonl`` of a run in progress. ``bench.results.store``
finds them; this module reads, writes and checks one run's files.

A summary records how many records its JSONL holds (``n_samples``) and the JSONL's SHA-256
(``records_sha256``), so a truncated or altered records file is found: ``bench run`` redoes the
run, every other reader refuses it in one line. A summary without the checksum is not complete.

A records file opens with a header line naming its run (``{"run": run_id of its config, "task",
"strategy_spec", "seed"}``; it has no ``index``, so it is not a record), and every reader checks
it against the summary's config (``check_records``): records copied under another run's summary,
their checksum updated to match, are refused, and so is a records file without the header
(`bench migrate` gives one to files made before it).

A run in progress appends each finished batch as one line of its ``.partial.jsonl``: the run's
identity (``run_id`` of its config), the batch's first input, the SHA-256 of the batch's records
and the records. A batch of another run, an edited one or one cut by a kill is discarded on
reading, said in one line, and decoded again; batches are keyed by their first input, so a run
resumed at another batch size keeps its finished batches.
"""
import hashlib
import json
import math
import os
import uuid
from pathlib import Path

from bench.errors import BenchError
from bench.files import MiB, read_bytes
from bench.results.identity import run_id

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


def batch_line(config_id, records):
    """One partial-file line: a finished batch (keyed by its first input) with its run's identity
    and its own checksum."""
    text = records_text(records)
    return to_json({"run": config_id, "first": records[0]["index"], "sha256": text_digest(text),
                    "records": records}) + "\n"


def append_batch(path, config_id, records):
    """Append a finished batch to a run's partial file (one line; a line cut by a kill is
    discarded on reading)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        handle.write(batch_line(config_id, records))
        handle.flush()
        os.fsync(handle.fileno())


def parse_batch(line, config_id, n_rows):
    """(the batch line as JSON, None) when a partial-file line is a finished batch of this run
    (consecutive inputs from its ``first``, each record naming that batch), else (None, why not)."""
    try:
        entry = json.loads(line)
    except json.JSONDecodeError:
        return None, "is cut short or not JSON"
    if not isinstance(entry, dict) or not isinstance(entry.get("records"), list) or not entry["records"]:
        return None, "is not a batch line"
    if entry.get("run") != config_id:
        return None, "belongs to another run"
    first, records = entry.get("first"), entry["records"]
    if not isinstance(first, int) or isinstance(first, bool) or not 0 <= first < n_rows:
        return None, f"names first input {first!r}, not one of this run's {n_rows}"
    if not all(isinstance(r, dict) for r in records) or text_digest(records_text(records)) != entry.get("sha256"):
        return None, "does not match its checksum"
    rows = list(range(first, min(first + len(records), n_rows)))
    if [r.get("index") for r in records] != rows or any(r.get("batch") != first for r in records):
        return None, f"does not hold consecutive inputs from {first}"
    return entry, None


def read_batches(path, config_id, n_rows):
    """({first input: records} of the finished batches of run ``config_id`` (of ``n_rows``
    inputs) in its partial file, one line per discarded line: why). Batches are keyed by their
    first input, so a run resumed at another batch size keeps them; a batch overlapping one read
    before it is discarded."""
    try:
        text = read_bytes(path, "partial results file", RECORDS_LIMIT).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return {}, []
    batches, done, discarded = {}, set(), []
    for number, line in enumerate(text.splitlines(), 1):
        entry, problem = parse_batch(line, config_id, n_rows)
        rows = {r["index"] for r in entry["records"]} if problem is None else set()
        if problem is None and rows & done:
            problem = "repeats inputs of an earlier batch"
        if problem is None:
            batches[entry["first"]] = entry["records"]
            done |= rows
        else:
            discarded.append(f"{path} line {number} {problem}; discarded, its inputs are decoded again")
    return batches, discarded


def write_batches(path, config_id, batches):
    """Rewrite a partial file to hold just ``batches`` ({first: records}), so appends start clean."""
    write_text_atomic(path, "".join(batch_line(config_id, batches[b]) for b in sorted(batches)))


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
    if header is None:
        return ("its records file has no header naming its run (a file made before 2026-12-06: "
                "`python -m bench migrate FOLDER` gives it one)")
    if header.get("run") == run_id(config):
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
    if records_path is None:
        return None, "its summary names no records file"
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
    """Where a run's records lie: beside its summary, under the name the summary gives; None when
    it gives none."""
    name = summary.get("records_file")
    return Path(summary_path).parent / name if isinstance(name, str) and name else None


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
