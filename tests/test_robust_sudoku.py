"""Issue 18, Sudoku scores: solved means a valid completion that keeps the givens (so puzzles with
several solutions are not scored against one of them), puzzles without blanks are refused by
line, and the run line counts the puzzles that are not unique."""

import numpy as np
import pytest

from bench.registry import parse_strategy
from bench.results import read_records
from bench.run.cell import Run, inputs_line
from bench.run.local import run_one
from tasks.sudoku.data import TEST_SET, check_solutions, read_puzzles
from tasks.sudoku.generate import grid_string
from tasks.sudoku.solver import breaks_rules, count_solutions
from tasks.sudoku.task import SudokuTask, grade


@pytest.fixture(scope="module")
def test_set():
    return read_puzzles(TEST_SET)


def blank_givens(puzzle, n=8):
    """The puzzle with its first ``n`` givens blanked (the issue's repro: several solutions)."""
    out = puzzle.copy()
    out[np.flatnonzero(out)[:n]] = 0
    return out


def other_solution(puzzle, avoid):
    """A solution of ``puzzle`` that differs from ``avoid``: fix a blank to another digit and solve."""
    from tasks.sudoku.solver import solve
    for cell in np.flatnonzero(puzzle == 0):
        for digit in range(1, 10):
            if digit != avoid[cell]:
                trial = puzzle.copy()
                trial[cell] = digit
                found = solve(trial)
                if found is not None:
                    return found
    raise AssertionError("the puzzle has one solution")


def write_csv(path, grids):
    path.write_text("".join(grid_string(g) + "\n" for g in grids))
    return path


def test_a_valid_completion_of_a_puzzle_with_several_solutions_is_solved(test_set):
    puzzle = blank_givens(test_set.puzzles[0])
    stored = test_set.solutions[0]
    alternative = other_solution(puzzle, stored)
    assert count_solutions(puzzle) == 2 and (alternative != stored).any()
    assert grade(puzzle, alternative, stored, unique=False) == (True, int((puzzle == 0).sum()))
    broken = alternative.copy()
    cell = np.flatnonzero(puzzle == 0)[0]
    broken[cell] = broken[cell] % 9 + 1  # a digit its row already has
    solved, right = grade(puzzle, broken, stored, unique=False)
    assert not solved and right < (puzzle == 0).sum()


def test_a_board_that_changes_a_given_or_breaks_a_rule_is_not_solved(test_set):
    puzzle, solution = test_set.puzzles[1], test_set.solutions[1]
    assert grade(puzzle, solution, solution, unique=True) == (True, int((puzzle == 0).sum()))
    changed = solution.copy()
    given = np.flatnonzero(puzzle)[0]
    changed[given] = solution[given] % 9 + 1
    assert not grade(puzzle, changed, solution, unique=True)[0]


def test_cell_accuracy_of_a_unique_puzzle_counts_the_solution_digits(test_set):
    puzzle, solution = test_set.puzzles[2], test_set.solutions[2]
    board = solution.copy()
    wrong = np.flatnonzero(puzzle == 0)[:3]
    board[wrong] = board[wrong] % 9 + 1
    assert grade(puzzle, board, solution, unique=True) == (False, int((puzzle == 0).sum()) - 3)


def test_puzzles_without_blanks_are_refused_with_their_line(tmp_path, test_set):
    path = write_csv(tmp_path / "p.csv", [test_set.puzzles[0], test_set.solutions[0]])
    loaded = read_puzzles(path)
    assert len(loaded.puzzles) == 1 and loaded.problems == ["p.csv:2: has no blanks: nothing to decode"]


def test_puzzles_without_a_solution_are_refused_with_their_line(tmp_path, test_set):
    dead_end = test_set.puzzles[0].copy()  # a digit no solution has there: consistent givens, no solution
    cell = np.flatnonzero(dead_end == 0)[0]
    dead_end[cell] = next(d for d in range(1, 10) if d != test_set.solutions[0][cell]
                          and not breaks_rules(np.where(np.arange(81) == cell, d, dead_end)))
    loaded = check_solutions(read_puzzles(write_csv(tmp_path / "p.csv", [dead_end, test_set.puzzles[1]])))
    assert len(loaded.puzzles) == 1 and loaded.problems == ["p.csv:1: has no solution"]


@pytest.fixture(scope="module")
def blanked_run(tmp_path_factory, test_set):
    """The issue's repro, small: 4 test puzzles with 8 givens blanked and one all-blank puzzle,
    puzzle column only, decoded by sequential."""
    folder = tmp_path_factory.mktemp("blanked")
    grids = [blank_givens(p) for p in test_set.puzzles[:4]] + [np.zeros(81, np.int8)]
    task = SudokuTask(data=write_csv(folder / "blanked.csv", grids))
    model, eval_set = task.load_model(), task.eval_set(None, 0)
    summary = run_one(Run(task, model, eval_set, parse_strategy("sequential"), "sequential", 0, None, out=folder))
    (records_path,) = (folder / "sudoku").glob("*.jsonl")
    records = read_records(records_path)
    return task, eval_set, summary, records, grids


def test_the_repro_scores_every_valid_board_as_solved(blanked_run):
    task, eval_set, summary, records, grids = blanked_run
    for record, puzzle in zip(records, grids):
        board = np.array([int(c) for c in record["output"]], np.int8)
        valid = not breaks_rules(board) and ((puzzle == 0) | (board == puzzle)).all()
        assert record["exact"] == valid
    exact = next(m for m in summary["metrics"] if m["name"] == "exact_accuracy")["value"]
    assert exact == np.mean([r["exact"] for r in records]) > 0
    solutions = eval_set.extras["solutions"]
    assert any(r["exact"] and r["output"] != grid_string(solutions[r["index"]]) for r in records), \
        "some solved board differs from the stored solution: those are the cases scored 0 before"


def test_the_run_line_counts_puzzles_with_several_solutions(blanked_run, test_set):
    task, eval_set, _, _, _ = blanked_run
    assert inputs_line(task, eval_set).startswith("5 inputs (5 with several solutions")
    shipped = SudokuTask()
    assert inputs_line(shipped, shipped.eval_set(10, 0)) == "10 inputs"
