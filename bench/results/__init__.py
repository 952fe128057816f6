"""The one owner of result files: what a run is (``identity``), the format of one run's files
(``files``), the scanner of result folders (``store``), summaries read and completed
(``summary``), and the commands that rewrite stored runs (``rescore``, ``migrate``).

Plugins import the names below from ``bench.results``; nothing outside this package lists a
result folder (tests/test_layout.py checks it).
"""
from bench.results.files import (  # noqa: F401  (the package's public names)
    RECORDS_LIMIT,
    SCHEMA_VERSION,
    SUMMARY_KEYS,
    append_batch,
    batch_line,
    cached_json,
    check_records,
    load_json,
    read_batches,
    read_records,
    records_file_text,
    records_path,
    records_text,
    run_records,
    split_records,
    text_digest,
    to_json,
    write_atomic,
    write_text_atomic,
)
from bench.results.identity import run_id  # noqa: F401
from bench.results.store import Store, load  # noqa: F401
