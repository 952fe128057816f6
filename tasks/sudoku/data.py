"""Sudoku data files: reading and checking puzzle CSVs, the training and test sets.

Reading a file parses every row and checks it against the rules (malformed rows are reported by
line). Counting a puzzle's solutions by search (``check_solutions``) goes only as far as the
puzzles a run uses (``--limit``), as does the difficulty rating (tasks/sudoku/task.py).
"""
import csv
import dataclasses
import hashlib
import io
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.checkpoints import cache_dir
from bench.errors import BenchError
from bench.files import MiB, checked_path, read_text, size_text
from bench.results import write_text_atomic
from tasks.sudoku.generate import generate, grid_string
from tasks.sudoku.solver import breaks_rules, solutions_up_to

PACKAGE_DIR = Path(__file__).parent
TEST_SET = PACKAGE_DIR / "data" / "test_hard.csv"
VALIDATION_SET = PACKAGE_DIR / "data" / "validation_hard.csv"
# generator streams of the training, test and validation sets
TRAIN_SEED, TEST_SEED, VALIDATION_SEED = 0, 1, 2
TRAIN_SIZE, TEST_SIZE = 100_000, 1_000
# A loaded puzzle's solutions are counted by backtracking; the hardest test puzzle needs 19,577
# nodes, while a nearly blank grid with a hidden clash can need exponentially many: past this
# budget the puzzle is reported and skipped instead of hanging the run.
SEARCH_BUDGET = 1_000_000
# A puzzle CSV holds 164 bytes a row (puzzle and solution): 256 MiB is 1.6 million puzzles. A
# 200 MB file took 41 s and 1.1 GB of memory to read on a busy 2-core VM; the shipped test set is
# 165 KB, the training set 16 MB.
PUZZLE_FILE_LIMIT = 256 * MiB
# Work that takes more than a few seconds is said in one line on stderr first: reading a file
# over NOTE_BYTES (25-40 us a row), searching more than NOTE_ROWS puzzles (about 0.25 ms each).
NOTE_BYTES, NOTE_ROWS = 8 * MiB, 10_000
GRID_CHARACTERS = frozenset(".0123456789")
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")   # a line and its ending: \n, \r\n or \r
CELL_VALUES = bytes.maketrans(b".0123456789", bytes([0, *range(10)]))   # "." and "0" are blanks


@dataclass
class PuzzleSet:
    """Puzzles [n, 81] (0 = blank), solutions [n, 81] or None, and rows that were skipped.

    ``unique`` (bool [n]) is set by ``check_solutions``: whether a puzzle has exactly one solution.
    """
    puzzles: np.ndarray
    solutions: np.ndarray | None
    source: str
    line_numbers: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    unique: np.ndarray | None = None


def parse_grid(text):
    """81 characters, '.' or '0' for a blank, digits 1-9 -> int8[81]; raises ValueError."""
    text = text.strip()
    if len(text) != 81:
        raise ValueError(f"has {len(text)} characters, expected 81")
    bad = sorted(set(text) - GRID_CHARACTERS)
    if bad:
        raise ValueError(f"has characters {''.join(bad)!r}; allowed are 1-9 and '.' or '0' for a blank")
    # bytes.translate: 1 us a grid, where 81 int() calls took 15 (a 200 MB file has 2.4 million grids)
    return np.frombuffer(bytearray(text.encode("ascii").translate(CELL_VALUES)), np.int8)


def _check_row(row):
    """Parse one CSV row into (puzzle, solution or None); raises ValueError."""
    puzzle = parse_grid(row[0])
    if not (puzzle == 0).any():
        raise ValueError("has no blanks: nothing to decode")
    if breaks_rules(puzzle):
        raise ValueError("givens already break a Sudoku rule")
    if len(row) < 2 or not row[1].strip():
        return puzzle, None
    solution = parse_grid(row[1])
    if (solution == 0).any() or breaks_rules(solution):
        raise ValueError("solution is not a complete valid grid")
    if ((puzzle > 0) & (puzzle != solution)).any():
        raise ValueError("solution disagrees with the puzzle's givens")
    return puzzle, solution


def note(text):
    """One line on stderr before work that takes a while (see NOTE_BYTES, NOTE_ROWS)."""
    print(text, file=sys.stderr, flush=True)


def lines_of(text):
    """The lines of ``text`` with their endings, one at a time: what io.StringIO(text, newline="")
    gives the csv module, without its copy of the text at 4 bytes a character (600 MB for a
    200 MB file)."""
    return (match.group() for match in LINE.finditer(text))


def read_puzzles(path):
    """Read a puzzle CSV (header optional) of at most PUZZLE_FILE_LIMIT bytes; malformed rows are
    reported and skipped. A file that is not UTF-8 text, or not CSV (e.g. a field over the csv
    module's 128 KB limit), is one error."""
    path = Path(path)
    size = checked_path(path, "puzzle file", PUZZLE_FILE_LIMIT).stat().st_size
    if size > NOTE_BYTES:
        note(f"reading puzzle file {path} ({size_text(size)}, about {size // 164:,} rows)")
    rows = csv.reader(lines_of(read_text(path, "puzzle file", PUZZLE_FILE_LIMIT)))
    good, lines, problems = [], [], []
    try:
        for row in rows:
            if not row or (rows.line_num == 1 and row[0].strip().lower() in ("puzzle", "quizzes")):
                continue
            try:
                good.append(_check_row(row))
                lines.append(rows.line_num)
            except ValueError as err:
                problems.append(f"{path.name}:{rows.line_num}: {err}")
    except csv.Error as err:
        raise BenchError(f"{path}:{rows.line_num}: not a puzzle CSV ({err})") from None
    if not good:
        raise BenchError(f"no valid puzzles in {path} ({len(problems)} malformed rows)")
    return _as_set(good, str(path), lines, problems)


def _as_set(rows, source, lines, problems):
    puzzles = np.stack([p for p, _ in rows])
    have_all = all(s is not None for _, s in rows)
    solutions = np.stack([s for _, s in rows]) if have_all else None
    return PuzzleSet(puzzles, solutions, source, lines, problems)


def data_id(puzzle_set):
    """12 hex digits naming the puzzles of a file as read (and its solutions, where every row has
    one): the ``data_id`` of runs on it. Known without searching any puzzle, so a run on the
    first rows of a large file costs no search of the others."""
    solutions = b"" if puzzle_set.solutions is None else puzzle_set.solutions.tobytes()
    return hashlib.sha256(puzzle_set.puzzles.tobytes() + solutions).hexdigest()[:12]


def check_solutions(puzzle_set, limit=None):
    """The first ``limit`` puzzles of ``puzzle_set`` (None: all) that have a solution, in file
    order: each puzzle's solutions are counted (up to 2) and those without a stored solution
    solved; a puzzle with no solution at all is reported by line and dropped. Rows past the
    ``limit``-th kept one are not searched. Returns a new set with ``unique`` set."""
    name = Path(puzzle_set.source).name
    wanted = len(puzzle_set.puzzles) if limit is None else min(limit, len(puzzle_set.puzzles))
    if wanted > NOTE_ROWS:
        note(f"checking {wanted:,} puzzles of {name}: counting each one's solutions by search")
    keep, solutions, unique, problems = [], [], [], list(puzzle_set.problems)
    for i, puzzle in enumerate(puzzle_set.puzzles):
        if len(keep) == wanted:
            break
        count, first = solutions_up_to(puzzle, 2, SEARCH_BUDGET)
        if count <= 0:
            why = "has no solution" if count == 0 else f"could not be checked within {SEARCH_BUDGET:,} search nodes"
            problems.append(f"{name}:{puzzle_set.line_numbers[i]}: {why}")
            continue
        keep.append(i)
        solutions.append(first if puzzle_set.solutions is None else puzzle_set.solutions[i])
        unique.append(count == 1)
    if not keep:
        raise BenchError(f"no solvable puzzles in {puzzle_set.source} ({len(problems)} rows skipped)")
    return dataclasses.replace(puzzle_set, puzzles=puzzle_set.puzzles[keep], solutions=np.stack(solutions),
                               line_numbers=[puzzle_set.line_numbers[i] for i in keep], problems=problems,
                               unique=np.array(unique))


def write_puzzles(path, puzzles, solutions):
    """Write a CSV ``puzzle,solution`` atomically."""
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(["puzzle", "solution"])
    for puzzle, solution in zip(puzzles, solutions):
        writer.writerow([grid_string(puzzle), grid_string(solution)])
    write_text_atomic(path, text.getvalue())


def training_set(size=TRAIN_SIZE, seed=TRAIN_SEED):
    """The training pairs, generated once from ``seed`` and cached as CSV."""
    path = cache_dir() / f"sudoku_train_seed{seed}_n{size}.csv"
    if not path.exists():
        puzzles, solutions = generate(seed, size, desc="training puzzles")
        write_puzzles(path, puzzles, solutions)
    return read_puzzles(path)


def grids_of(puzzle_set):
    """The 81-character strings of every puzzle and solution grid of ``puzzle_set``."""
    return {grid_string(g) for g in puzzle_set.puzzles} | {grid_string(g) for g in puzzle_set.solutions}


def make_test_set(path=TEST_SET, size=TEST_SIZE):
    """Generate the hard test set, excluding every grid of the training set."""
    puzzles, solutions = generate(TEST_SEED, size, hard_only=True, exclude=frozenset(grids_of(training_set())),
                                  desc="hard test puzzles")
    write_puzzles(path, puzzles, solutions)
    return path


def make_validation_set(path=VALIDATION_SET, size=TEST_SIZE):
    """Generate the hard validation set (same generator and rating as the test set, its own
    stream), excluding every grid of the training and the test set: choices are made on it."""
    seen = grids_of(training_set()) | grids_of(read_puzzles(TEST_SET))
    puzzles, solutions = generate(VALIDATION_SEED, size, hard_only=True, exclude=frozenset(seen),
                                  desc="hard validation puzzles")
    write_puzzles(path, puzzles, solutions)
    return path
