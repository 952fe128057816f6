import numpy as np
import pytest

from tasks.sudoku.data import TEST_SET, read_puzzles
from tasks.sudoku.generate import dig_puzzle, is_hard, make_pair
from tasks.sudoku.solver import breaks_rules, count_solutions, singles_left, solve


@pytest.fixture(scope="module")
def pair():
    return make_pair(seed=7, index=3)


def test_generated_puzzle_is_minimal_with_one_solution(pair):
    puzzle, solution = pair
    assert count_solutions(puzzle) == 1
    assert (solve(puzzle) == solution).all()
    given = np.flatnonzero(puzzle)
    for cell in given[:10]:  # dropping any given of a minimal puzzle admits a second solution
        weaker = puzzle.copy()
        weaker[cell] = 0
        assert count_solutions(weaker) == 2


def test_generation_is_reproducible_from_seed():
    a, b, c = make_pair(1, 5), make_pair(1, 5), make_pair(1, 6)
    assert (a[0] == b[0]).all() and (a[1] == b[1]).all()
    assert not (a[1] == c[1]).all()


def test_count_solutions_caps_at_limit_and_detects_clashes():
    assert count_solutions(np.zeros(81, np.int8), limit=5) == 5
    clash = np.zeros(81, np.int8)
    clash[0] = clash[1] = 4  # same digit twice in row 1
    assert breaks_rules(clash) and count_solutions(clash) == 0 and solve(clash) is None


def test_singles_rating_separates_easy_from_hard(pair):
    puzzle, solution = pair
    easy = solution.copy()
    easy[[0, 10, 20, 30]] = 0  # four blanks: each is a naked single
    assert singles_left(easy) == 0 and not is_hard(easy)
    hard = read_puzzles(TEST_SET).puzzles[0]
    assert singles_left(hard) > 0


def test_dig_keeps_solution_consistent():
    rng = np.random.default_rng(0)
    _, solution = make_pair(2, 0)
    puzzle = dig_puzzle(solution, rng)
    assert ((puzzle == 0) | (puzzle == solution)).all()
