"""A nearly blank puzzle with a hidden clash is reported, not searched forever."""
import time

from tasks.sudoku.data import SEARCH_BUDGET, TEST_SET, check_solutions, read_puzzles
from tasks.sudoku.solver import solutions_up_to

# Found by random search: 20 givens, no rule broken, no solution the backtracking search can
# refute within the budget (unbounded, it ran for minutes in a fuzz test).
HIDDEN_CLASH = "5..86....................8....2.......3.....54.2........64........6......4...95.."


def test_the_search_gives_up_at_its_budget():
    start = time.perf_counter()
    count, solution = solutions_up_to([0 if c == "." else int(c) for c in HIDDEN_CLASH], 2, SEARCH_BUDGET)
    assert count == -1 and solution is None and time.perf_counter() - start < 30


def test_a_puzzle_past_the_budget_is_skipped_with_its_line(tmp_path):
    good = TEST_SET.read_text().splitlines()[1].split(",")[0]
    path = tmp_path / "puzzles.csv"
    path.write_text(f"puzzle\n{good}\n{HIDDEN_CLASH}\n")
    loaded = check_solutions(read_puzzles(path))
    assert len(loaded.puzzles) == 1 and loaded.unique.tolist() == [True]
    assert loaded.problems == [f"puzzles.csv:3: could not be checked within {SEARCH_BUDGET:,} search nodes"]
