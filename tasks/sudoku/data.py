"""Sudoku data files: reading and checking puzzle CSVs, the training and test sets."""
import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.checkpoints import cache_dir, read_text_file
from bench.errors import BenchError
from bench.results import write_text_atomic
from tasks.sudoku.generate import generate, grid_string
from tasks.sudoku.solver import breaks_rules, solutions_up_to

PACKAGE_DIR = Path(__file__).parent
TEST_SET = PACKAGE_DIR / "data" / "test_hard.csv"
TRAIN_SEED, TEST_SEED = 0, 1  # generator streams of the training and test sets
TRAIN_SIZE, TEST_SIZE = 100_000, 1_000
# A loaded puzzle's solutions are counted by backtracking; the hardest test puzzle needs 19,577
# nodes, while a nearly blank grid with a hidden clash can need exponentially many: past this
# budget the puzzle is reported and skipped instead of hanging the run.
SEARCH_BUDGET = 1_000_000


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
    bad = sorted(set(text) - set(".0123456789"))
    if bad:
        raise ValueError(f"has characters {''.join(bad)!r}; allowed are 1-9 and '.' or '0' for a blank")
    return np.array([0 if ch == "." else int(ch) for ch in text], np.int8)


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


def read_puzzles(path):
    """Read a puzzle CSV (header optional); malformed rows are reported and skipped. A file that is
    not UTF-8 text, or not CSV (e.g. a field over the csv module's 128 KB limit), is one error."""
    path = Path(path)
    rows = csv.reader(io.StringIO(read_text_file(path, "puzzle file"), newline=""))
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


def check_solutions(puzzle_set):
    """Count each puzzle's solutions (up to 2) and solve those without a stored solution; a puzzle
    with no solution at all is reported by line and dropped. Sets ``unique``; returns the set."""
    name = Path(puzzle_set.source).name
    keep, solutions, unique = [], [], []
    for i, puzzle in enumerate(puzzle_set.puzzles):
        count, first = solutions_up_to(puzzle, 2, SEARCH_BUDGET)
        if count <= 0:
            why = "has no solution" if count == 0 else f"could not be checked within {SEARCH_BUDGET:,} search nodes"
            puzzle_set.problems.append(f"{name}:{puzzle_set.line_numbers[i]}: {why}")
            continue
        keep.append(i)
        solutions.append(first if puzzle_set.solutions is None else puzzle_set.solutions[i])
        unique.append(count == 1)
    if not keep:
        raise BenchError(f"no solvable puzzles in {puzzle_set.source} ({len(puzzle_set.problems)} rows skipped)")
    puzzle_set.puzzles, puzzle_set.solutions = puzzle_set.puzzles[keep], np.stack(solutions)
    puzzle_set.line_numbers = [puzzle_set.line_numbers[i] for i in keep]
    puzzle_set.unique = np.array(unique)
    return puzzle_set


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


def make_test_set(path=TEST_SET, size=TEST_SIZE):
    """Generate the hard test set, excluding every grid of the training set."""
    train = training_set()
    seen = {grid_string(g) for g in train.puzzles} | {grid_string(g) for g in train.solutions}
    puzzles, solutions = generate(TEST_SEED, size, hard_only=True, exclude=frozenset(seen),
                                  desc="hard test puzzles")
    write_puzzles(path, puzzles, solutions)
    return path
