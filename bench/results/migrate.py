"""`bench migrate FOLDER...`: bring result files made before the run identity split (2026-12-06)
to today's format, in place, records unchanged.

For each run summary whose records file matches its checksum:
- its config loses ``batch_size`` (how the run was executed, not what it ran), which moves to a
  new ``execution`` entry beside the config (bench.results.identity);
- its records file gets the header line naming its run (bench.results.files), or has the header
  written before the split (which hashed the batch size) replaced by it, and the summary gets the
  new checksum.

Files keep their names: a run's identity no longer hashes its batch size, so new runs get new
names, while ``Store.locate`` finds an old run by the identity its summary holds. (Renaming the
committed runs would rewrite every records file in the history's diffs.) A summary whose records
do not match it is named and left as it is; nothing is written for it. Migrating twice changes
nothing the second time.
"""
import hashlib
import json
import sys

from tqdm import tqdm

from bench.errors import BenchError
from bench.files import read_bytes
from bench.results.files import (
    RECORDS_LIMIT,
    records_header,
    records_header_of,
    records_path,
    to_json,
    write_atomic,
    write_text_atomic,
)
from bench.results.identity import HOW_KEYS, run_id, what_of
from bench.results.store import Store


def migrated_summary(summary, records_sha256):
    """The summary with its config's how-keys moved into ``execution`` and the new checksum; the
    other keys keep their order (so the file's diff is those lines)."""
    how = {k: summary["config"][k] for k in HOW_KEYS if k in summary["config"]}
    out = {}
    for key, value in summary.items():
        out[key] = what_of(value) if key == "config" else value
        if key == "config" and (how or "execution" in summary):
            out["execution"] = {**how, **summary.get("execution", {})}
    out["records_sha256"] = records_sha256
    return out


def legacy_run_id(config):
    """The run id of a config as headers written before the split computed it (every key hashed)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


def migrate_run(path, summary):
    """Migrate one run in place: True when a file changed, False when it was current; BenchError
    (nothing written) when its records do not match its summary's checksum (with or without a
    header). A records file without a header gets one before its unchanged bytes."""
    records_file = records_path(path, summary)
    if records_file is None:
        raise BenchError(f"{path}: its summary names no records file; left as it is")
    data = read_bytes(records_file, "records file", RECORDS_LIMIT)
    if hashlib.sha256(data).hexdigest() != summary.get("records_sha256"):
        raise BenchError(f"{path}: its records file does not match the checksum in the summary; left as it is")
    config = what_of(summary["config"])
    head, _, body = data.partition(b"\n")
    header = records_header_of(head.decode("utf-8"))
    if header is not None and header.get("run") not in (run_id(config), legacy_run_id(summary["config"])):
        raise BenchError(f"{path}: its records file's header names another run; left as it is")
    if header is None or header["run"] != run_id(config):
        data = (to_json(records_header(config)) + "\n").encode() + (data if header is None else body)
    new = migrated_summary(summary, hashlib.sha256(data).hexdigest())
    if new == summary:
        return False
    if new["records_sha256"] != summary["records_sha256"]:
        write_atomic(records_file, lambda handle: handle.write(data))
    write_text_atomic(path, to_json(new, indent=1))
    return True


def migrate(folders):
    """Migrate every run under ``folders``; prints what changed and names what could not be;
    returns how many could not."""
    left = 0
    for folder in folders:
        found, problems = Store(folder).scan(problem=lambda path, data: None if isinstance(data, dict)
                                             and isinstance(data.get("config"), dict) else "is not a run summary")
        changed, failed = 0, []
        for path, summary in tqdm(found, desc=f"migrate {folder}", unit="run", leave=False):
            try:
                changed += migrate_run(path, summary)
            except BenchError as err:
                failed.append(str(err))
        for line in problems + failed:
            print(f"not migrated: {line}", file=sys.stderr)
        print(f"{folder}: {changed} of {len(found)} runs migrated, {len(found) - changed - len(failed)} current, "
              f"{len(failed) + len(problems)} not migrated")
        left += len(failed) + len(problems)
    return left
