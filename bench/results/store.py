"""The one scanner of result folders: ``Store(root)``.

Every reader of result files (run and its verification, plan, report, compare, rescore,
calibrate, the task ladders and report sections) finds runs here, under one rule for what a
summary is and one validity check:

- a JSON object holding any of ``RUN_KEYS`` is a run summary, complete or not; other tools' JSON
  files in a results folder (an estimator's evaluation) hold none and are neither runs nor problems;
- a summary is valid when ``summary_problem`` (bench.results.files) finds nothing and the records
  file it names is there; a reader with a stricter rule (`bench compare`) passes its own.

``runs()`` keeps one run per identity (bench.results.identity): two files of one run (a run made
again under another name, a copy) keep the newer and name the other. ``locate`` finds the files
of a run by its identity, whatever they are called: runs made before the identity lost its batch
size keep the names they were committed under.
"""
import os
import sys
from pathlib import Path

from bench.results.files import SUMMARY_KEYS, load_json, records_path, run_records, summary_problem
from bench.results.identity import result_paths, run_id

# Any of these makes a JSON object a run summary (complete or not).
RUN_KEYS = tuple(k for k in SUMMARY_KEYS if k != "task") + ("records_file",)


def finished_at(summary):
    """When a run finished (its provenance's ISO time; '' when it does not say): the newer wins."""
    provenance = summary.get("provenance")
    return str(provenance.get("finished_at", "")) if isinstance(provenance, dict) else ""


def is_summary(data):
    """Whether a JSON value read from a results folder is meant as a run summary."""
    return not isinstance(data, dict) or any(k in data for k in RUN_KEYS)


def default_problem(path, data):
    """Why ``data`` read from ``path`` is not a complete run summary this code reads, or None."""
    return summary_problem(data) or records_problem(path, data)


def records_problem(path, data):
    """Why the records file a summary at ``path`` names is not there (a phrase), or None."""
    name = data.get("records_file")
    if name is not None and not (isinstance(name, str) and name and (Path(path).parent / name).is_file()):
        return f"names records file {name!r}, which is missing"
    return None


class Store:
    """The result files under ``root`` (a folder, or one summary .json); ``related``: the Stores a
    report reads beside it (bench.report.build.plugin_sections)."""

    def __init__(self, root, related=()):
        self.root = Path(root)
        self.related = tuple(related)   # Stores of the same report (its retrained runs), for sections that read them
        self._records = None   # {records file name: path}, listed once (``records_file_of``)
        self._scanned = None   # the default scan, made once: a Store reads a folder as it was

    def files(self):
        """Every .json under root (root itself when it is a file), in a stable order."""
        if self.root.is_file():
            return [self.root]
        return sorted(self.root.rglob("*.json")) if self.root.is_dir() else []

    def scan(self, problem=default_problem):
        """((path, summary) of every run summary under root, one line per summary there that
        cannot be used: its path and ``problem(path, data)``)."""
        found, problems = [], []
        for path in self.files():
            data, why = load_json(path)
            if why is None and not is_summary(data):
                continue
            why = why or problem(path, data)
            if why:
                problems.append(f"{path} {why}")
            else:
                found.append((path, data))
        return found, problems

    def runs(self, skipped=None, with_paths=False, quiet=False):
        """Every usable run under root, one per identity: of two files of one run the one that
        finished later is kept and the other named on stderr. Unusable summaries are named on
        stderr (unless ``quiet``) and added to the list ``skipped`` when given."""
        if self._scanned is None:
            self._scanned = self.scan()
        found, problems = self._scanned[0], list(self._scanned[1])
        kept = newest_per_run(found, problems)
        if skipped is not None:
            skipped.extend(problems)
        for problem in ([] if quiet else problems):
            print(f"skipped result file: {problem}", file=sys.stderr)
        return kept if with_paths else [summary for _, summary in kept]

    def other_files(self, pattern):
        """Files under root matching ``pattern`` that other tools keep beside the runs (a strategy
        family's evaluation files), in a stable order."""
        return sorted(self.root.glob(pattern)) if self.root.is_dir() else []

    def records(self, path, summary):
        """The checked records of the run whose summary is at ``path`` (``run_records``)."""
        return run_records(summary, records_path(path, summary))

    def records_file_of(self, summary):
        """The records file of a run found under root (records file names carry the run's hash),
        or None where it is not there."""
        if self._records is None:
            files = self.root.rglob("*.jsonl") if self.root.is_dir() else []
            self._records = {p.name: p for p in files if not p.name.endswith(".partial.jsonl")}
        return self._records.get(summary.get("records_file", ""))

    def locate(self, config):
        """The summary path of the run ``config`` under root (its task's folder): the name a new
        run gets when that file exists, else an older file holding the same identity, else None."""
        new_name = result_paths(self.root, config)[0]
        if new_name.is_file():
            return new_name
        return identity_index(self.root / config["task"]).get(run_id(config))


def newest_per_run(found, problems):
    """(path, summary) pairs, one per run identity, in path order: the one that finished last.
    Each file left out is added to the list ``problems`` with the file kept."""
    newest = {}
    for path, summary in found:
        key = (summary["task"], run_id(summary["config"]))
        if key not in newest:
            newest[key] = (path, summary)
            continue
        if finished_at(summary) >= finished_at(newest[key][1]):
            newest[key], path = (path, summary), newest[key][0]
        problems.append(f"{path} is another file of the run in {newest[key][0]}; the newer is used")
    return sorted(newest.values(), key=lambda pair: str(pair[0]))


# folder -> {file name: (mtime_ns, size, run id or None)}: the identities of the summaries in a
# task's folder, read again only for files that changed since (a `bench run` looks up each of
# its runs; a folder holds hundreds).
_INDEXES = {}


def identity_index(folder):
    """{run id: summary path} of the summaries directly in ``folder`` (the newest file per id)."""
    folder = Path(folder)
    if not folder.is_dir():
        return {}
    known = _INDEXES.setdefault(str(folder.resolve()), {})
    entries = {e.name: e for e in os.scandir(folder) if e.name.endswith(".json") and e.is_file()}
    for name in set(known) - set(entries):
        del known[name]
    for name, entry in entries.items():
        stamp = (entry.stat().st_mtime_ns, entry.stat().st_size)
        if known.get(name, (None,))[:2] != stamp:
            known[name] = (*stamp, summary_run_id(folder / name))
    index = {}
    for name in sorted(known, key=lambda n: known[n][0]):   # the newest file of an id wins
        if known[name][2] is not None:
            index[known[name][2]] = folder / name
    return index


def summary_run_id(path):
    """The run id of the summary at ``path``, or None when it is not a readable summary."""
    data, why = load_json(path)
    if why or not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        return None
    try:
        return run_id(data["config"])
    except (TypeError, ValueError):   # a config JSON cannot hash (it always can; an edit may not)
        return None


def load(path="results"):
    """All runs under ``path`` (a folder or one summary .json) as a pandas DataFrame, one row per
    (run, metric)."""
    import pandas as pd
    rows = []
    for result in Store(path).runs():
        for m in result["metrics"]:
            rows.append({"task": result["task"], "strategy": result["strategy"],
                         "spec": result["config"]["strategy_spec"], "model": result["model"]["id"],
                         "seed": result["config"]["seed"], "metric": m["name"], "value": m["value"],
                         "ci_low": m["ci_low"], "ci_high": m["ci_high"],
                         "higher_is_better": m["higher_is_better"], "n": m["n"]})
    return pd.DataFrame(rows)
