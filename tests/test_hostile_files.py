"""Hostile files and options: every file the suite reads (each task's data, models, helpers) goes
through bench.files, which refuses a FIFO, /dev/zero, a directory or a file over its kind's size
limit before reading a byte, in one line. Empty paths and options that could only fail after
decoding (--temperature 0 on hmm) are refused before anything loads. Every case: `error: ...`,
exit 2, no traceback, nothing left under --out (no results, partials, locks or folders)."""
import io
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.cli import main
from bench.errors import BenchError
from bench.files import CHECKPOINT_LIMIT, HELPER_LIMIT, MissingFile, checked_path, read_bytes, read_text, sha256_of
from conftest import ROOT, deadline
from tasks.hmm.chain import HMM_FILE_LIMIT
from tasks.hmm.task import N_SEQUENCES, HMMTask
from tasks.protein.task import REFERENCE_LIMIT
from tasks.sudoku import data as sudoku_data
from tasks.sudoku import task as sudoku_task
from tasks.sudoku.data import PUZZLE_FILE_LIMIT, TEST_SET, check_solutions, parse_grid, read_puzzles
from tasks.sudoku.solver import breaks_rules
from tasks.sudoku.task import SudokuTask

# what each kind of hostile file is called in the error
SAYS = {"fifo": "is a named pipe (FIFO), not a regular file", "dev_zero": "is a character device, not a regular file",
        "directory": "is a directory, not a regular file", "oversize": "; the limit is "}
DATA_LIMITS = {"sudoku": PUZZLE_FILE_LIMIT, "protein": REFERENCE_LIMIT, "hmm": HMM_FILE_LIMIT,
               "hmm_mdm": HMM_FILE_LIMIT}
MODEL_TASKS = ("sudoku", "protein", "hmm_mdm")
HELPERS = {"mi:estimator={}": HELPER_LIMIT, "learned:policy={}": HELPER_LIMIT}
DEADLINE = 120   # seconds: a FIFO opened for reading waits for a writer forever; fail instead


def hostile_file(folder, kind, limit):
    """A path of ``kind``: a FIFO, /dev/zero, a directory, or a sparse file one byte over ``limit``
    (no disk used: truncate makes a hole)."""
    path = Path(folder) / f"hostile-{kind}"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "oversize":
        path.touch()
        os.truncate(path, limit + 1)
    else:
        return Path("/dev/zero")
    return path


def left_behind(out):
    """Everything under ``out`` (and ``out`` itself, when it was made)."""
    return [out, *out.rglob("*")] if out.exists() else []


def assert_one_line_error(capsys, argv, out, *says):
    """Run `bench run ARGV --out OUT` in this process: exit 2, one `error:` line on stderr that
    holds each of ``says``, nothing left under OUT."""
    with deadline(DEADLINE):
        status = main(["run", "--limit", "2", *argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert all(text in err for text in says), err
    assert not left_behind(out), left_behind(out)


HOSTILE_KINDS = sorted(SAYS)
DATA_CASES = [(task, kind) for task in DATA_LIMITS for kind in HOSTILE_KINDS]
MODEL_CASES = [(task, kind) for task in MODEL_TASKS for kind in HOSTILE_KINDS]
HELPER_CASES = [(spec, kind) for spec in HELPERS for kind in HOSTILE_KINDS]


@pytest.mark.parametrize("task,kind", DATA_CASES)
def test_hostile_data_file_is_one_line_before_reading(capsys, tmp_path, task, kind):
    path = hostile_file(tmp_path, kind, DATA_LIMITS[task])
    assert_one_line_error(capsys, ["--tasks", task, "--strategies", "sequential", "--data", str(path)],
                          tmp_path / "out", SAYS[kind], str(path))


@pytest.mark.parametrize("task,kind", MODEL_CASES)
def test_hostile_model_file_is_one_line_before_loading(capsys, tmp_path, task, kind):
    path = hostile_file(tmp_path, kind, CHECKPOINT_LIMIT)
    assert_one_line_error(capsys, ["--tasks", task, "--strategies", "sequential", "--model", str(path)],
                          tmp_path / "out", SAYS[kind], str(path))


@pytest.mark.parametrize("spec,kind", HELPER_CASES)
def test_hostile_helper_file_is_one_line_before_decoding(capsys, tmp_path, spec, kind):
    path = hostile_file(tmp_path, kind, HELPERS[spec])
    assert_one_line_error(capsys, ["--tasks", "sudoku", "--strategies", spec.format(path)], tmp_path / "out",
                          SAYS[kind], str(path))


@pytest.mark.parametrize("argv,message", [
    (["--out", ""], "--out is empty"),
    (["--out", "  "], "--out is empty"),
    (["--data", ""], "--data is empty"),
    (["--model", ""], "--model is empty"),
    (["--tasks", "hmm", "--temperature", "0"], "--temperature 0: task hmm scores sampled values"),
    (["--tasks", "hmm_mdm", "--temperature", "0"], "--temperature 0: task hmm_mdm scores sampled values"),
])
def test_options_that_failed_late_or_never_are_one_line_before_anything_loads(capsys, tmp_path, monkeypatch,
                                                                               argv, message):
    """--out '' wrote results into the current folder (and said 'results in /sudoku/'); --data ''
    and --model '' quietly ran the defaults; --temperature 0 on hmm failed after decoding, leaving
    its .partial and .lock files."""
    monkeypatch.chdir(tmp_path)   # where --out '' wrote its results
    monkeypatch.setattr("bench.run.cell.decode", lambda *a, **k: pytest.fail("decoded before the check"))
    out = [] if "--out" in argv else ["--out", str(tmp_path / "out")]
    with deadline(DEADLINE):
        status = main(["run", "--limit", "2", "--strategies", "sequential", *argv, *out])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert message in err and not list(tmp_path.rglob("*")), (err, list(tmp_path.rglob("*")))


def run_fresh(*args, memory=8 * 2 ** 30):
    """`python -m bench ARGS` in a new process with at most ``memory`` bytes of address space
    (reading /dev/zero without limit used to grow until the kernel killed it)."""
    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    return subprocess.run([sys.executable, "-m", "bench", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=DEADLINE, preexec_fn=limit_memory)


@pytest.mark.parametrize("kind", ["dev_zero", "fifo"])
def test_the_issue_repro_hmm_data_is_one_line_in_a_fresh_process(tmp_path, kind):
    """`--tasks hmm --data /dev/zero` read until killed at 23 GB; a FIFO hung forever."""
    path = hostile_file(tmp_path, kind, HMM_FILE_LIMIT)
    proc = run_fresh("run", "--tasks", "hmm", "--limit", 2, "--data", path, "--out", tmp_path / "out")
    assert proc.returncode == 2 and proc.stderr.startswith("error: HMM file") and SAYS[kind] in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not left_behind(tmp_path / "out")


# --- bench.files itself ----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", HOSTILE_KINDS)
def test_every_reader_refuses_a_hostile_file_without_reading_it(tmp_path, kind):
    path = hostile_file(tmp_path, kind, 100)
    for reader in (read_bytes, read_text, checked_path, sha256_of):
        with deadline(DEADLINE), pytest.raises(BenchError, match="limit is|not a regular file") as caught:
            reader(path, "test file", 100)
        assert SAYS[kind] in str(caught.value) and "\n" not in str(caught.value)


def test_a_missing_file_is_a_bench_error_and_a_file_not_found_error(tmp_path):
    """The result files' readers take absence as normal (FileNotFoundError); the CLI prints it."""
    for reader in (read_bytes, read_text, checked_path, sha256_of):
        with pytest.raises(MissingFile, match="test file not found: ") as caught:
            reader(tmp_path / "absent", "test file", 100)
        assert isinstance(caught.value, FileNotFoundError) and isinstance(caught.value, BenchError)
    with pytest.raises(MissingFile, match="a part of the path is a file"):
        read_bytes(Path(__file__) / "below", "test file", 100)


@settings(max_examples=60, deadline=None)
@given(content=st.binary(max_size=300), limit=st.integers(0, 300), sparse=st.integers(0, 2 ** 40))
def test_a_file_is_read_whole_within_its_limit_and_refused_past_it(content, limit, sparse):
    """Within the limit the bytes come back unchanged; past it (also a sparse file of any size,
    refused from its stat without reading) the error names the limit."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "file"
        path.write_bytes(content)
        if len(content) <= limit:
            assert read_bytes(path, "test file", limit) == content
        else:
            with pytest.raises(BenchError, match=f"is {len(content):,} bytes; the limit is"):
                read_bytes(path, "test file", limit)
        os.truncate(path, limit + 1 + sparse)
        with pytest.raises(BenchError, match=f"is {limit + 1 + sparse:,} bytes; the limit is"):
            read_bytes(path, "test file", limit)


def test_a_file_growing_past_its_limit_as_it_is_read_is_refused():
    """procfs files say size 0 and hold more: the read stops one byte past the limit."""
    with pytest.raises(BenchError, match="is more than 10 bytes; the limit is 10 bytes"):
        read_bytes("/proc/self/status", "test file", 10)
    assert b"Name:" in read_bytes("/proc/self/status", "test file", 2 ** 20)


# --- Sudoku: read every row, search only the rows a run uses ----------------------------------------

def old_parse_grid(text):
    """parse_grid before it used bytes.translate (its results must not change)."""
    text = text.strip()
    if len(text) != 81:
        raise ValueError(f"has {len(text)} characters, expected 81")
    bad = sorted(set(text) - set(".0123456789"))
    if bad:
        raise ValueError(f"has characters {''.join(bad)!r}; allowed are 1-9 and '.' or '0' for a blank")
    return np.array([0 if ch == "." else int(ch) for ch in text], np.int8)


def outcome(parse, text):
    try:
        return parse(text).tolist()
    except ValueError as err:
        return str(err)


GRID_TEXT = st.text(alphabet=st.sampled_from(list(".0123456789") + [" ", "\t", "x", "\u0663", "\u00e9"]),
                    min_size=78, max_size=84)


@settings(max_examples=300, deadline=None)
@given(text=GRID_TEXT | st.text(max_size=90))
def test_grids_parse_as_before(text):
    assert outcome(parse_grid, text) == outcome(old_parse_grid, text)


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(["\r", "\n", "\r\n", "a", ",", '"', "\x0c", "\u2028"]) | st.characters(),
                     max_size=30).map("".join))
def test_puzzle_lines_split_as_the_csv_module_was_given_them(text):
    """read_puzzles iterates the text's lines itself (io.StringIO's copy took 600 MB of a 200 MB
    file): the same lines, with the same endings."""
    assert list(sudoku_data.lines_of(text)) == list(io.StringIO(text, newline=""))


def write_rows(path, rows):
    path.write_text("puzzle,solution\n" + "".join(f"{p},{s}\n" for p, s in rows))
    return path


@pytest.fixture(scope="module")
def test_rows():
    return [line.split(",") for line in TEST_SET.read_text().splitlines()[1:31]]


class Counting:
    """A function wrapper that counts its calls."""

    def __init__(self, function):
        self.function, self.calls = function, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.function(*args, **kwargs)


def test_a_run_with_limit_searches_and_rates_only_its_puzzles_and_says_so(capsys, tmp_path, monkeypatch, test_rows):
    """A 200 MB CSV with --limit 3 searched and rated every row for 7 minutes before the first
    batch, without a word. Small here: 30 rows, with the thresholds of the notes lowered."""
    path = write_rows(tmp_path / "puzzles.csv", test_rows)
    searched = Counting(sudoku_data.solutions_up_to)
    rated = Counting(sudoku_task.search_nodes)
    monkeypatch.setattr("tasks.sudoku.data.solutions_up_to", searched)
    monkeypatch.setattr("tasks.sudoku.task.search_nodes", rated)
    monkeypatch.setattr("tasks.sudoku.data.NOTE_BYTES", 100)
    monkeypatch.setattr("tasks.sudoku.data.NOTE_ROWS", 2)
    monkeypatch.setattr("tasks.sudoku.task.NOTE_ROWS", 2)
    out = tmp_path / "out"
    assert main(["run", "--limit", "3", "--strategies", "sequential", "--data", str(path), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert searched.calls == 3 and rated.calls == 3, (searched.calls, rated.calls)
    assert f"reading puzzle file {path} (" in err and "checking 3 puzzles of puzzles.csv" in err
    assert "rating 3 puzzles of puzzles.csv by search nodes" in err


@settings(max_examples=25, deadline=None)
@given(limit=st.integers(1, 12), dead=st.sets(st.integers(0, 11), max_size=5))
def test_checking_the_first_puzzles_gives_the_first_of_all_checked(limit, dead):
    """check_solutions with a limit keeps what checking every row keeps, up to the limit, also
    when puzzles without a solution are dropped on the way."""
    rows = read_puzzles(TEST_SET)
    puzzles = rows.puzzles[:12].copy()
    for i in dead:   # a given no solution has there: consistent givens, no solution
        cell = int(np.flatnonzero(puzzles[i] == 0)[0])
        puzzles[i][cell] = next(d for d in range(1, 10) if d != rows.solutions[i][cell]
                                and not breaks_rules(np.where(np.arange(81) == cell, d, puzzles[i])))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.csv"
        path.write_text("".join("".join(map(str, p)) + "\n" for p in puzzles))
        parsed = read_puzzles(path)
    every, first = check_solutions(parsed), check_solutions(parsed, limit)   # 5 of 12 dead at most
    n = min(limit, len(every.puzzles))
    assert (first.puzzles == every.puzzles[:n]).all() and (first.solutions == every.solutions[:n]).all()
    assert first.line_numbers == every.line_numbers[:n] and (first.unique == every.unique[:n]).all()


def test_the_committed_test_set_keeps_its_data_id_at_any_limit():
    """The data_id of every committed Sudoku result (a16916a02b9c) must not change: runs found
    complete stay complete."""
    task = SudokuTask()
    assert {task.eval_set(limit).data_id for limit in (3, 20, None)} == {"a16916a02b9c"}


def test_a_limit_past_the_hmm_inputs_takes_them_all_not_a_traceback():
    """--limit 10**12 on hmm tried to allocate 512 TB (a RuntimeError traceback); like the other
    tasks it now takes at most the task's inputs."""
    assert len(HMMTask().eval_set(10 ** 12)) == N_SEQUENCES and len(HMMTask().eval_set(7)) == 7
