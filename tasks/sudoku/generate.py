"""Reproducible puzzle generation: random complete grid, then dig blanks while unique."""
import numpy as np
from tqdm import tqdm

from tasks.sudoku.solver import count_solutions, random_solution, search_nodes, singles_left


def dig_puzzle(solution, rng):
    """Blank cells of ``solution`` in random order, keeping each blank only if the
    puzzle still has exactly one solution. The result is a minimal puzzle."""
    puzzle = solution.copy()
    for cell in rng.permutation(81):
        digit = puzzle[cell]
        puzzle[cell] = 0
        if count_solutions(puzzle, 2) != 1:
            puzzle[cell] = digit
    return puzzle


def make_pair(seed, index):
    """The puzzle/solution pair number ``index`` of the stream ``seed``."""
    rng = np.random.default_rng([seed, index])
    solution = random_solution(rng)
    return dig_puzzle(solution, rng), solution


def is_hard(puzzle, max_givens=28):
    """Our rating of "hard": at most ``max_givens`` givens and not solvable by naked and
    hidden singles alone (it needs harder techniques or guessing)."""
    return int((puzzle > 0).sum()) <= max_givens and singles_left(puzzle) > 0


def generate(seed, count, hard_only=False, exclude=frozenset(), desc="puzzles"):
    """``count`` pairs from stream ``seed`` as [count, 81] int8 arrays (puzzles, solutions).

    ``exclude`` holds 81-character strings of grids that may not appear (puzzle or solution).
    """
    puzzles, solutions = [], []
    index = 0
    with tqdm(total=count, desc=desc, unit="puzzle") as bar:
        while len(puzzles) < count:
            puzzle, solution = make_pair(seed, index)
            index += 1
            if hard_only and not is_hard(puzzle):
                continue
            if grid_string(puzzle) in exclude or grid_string(solution) in exclude:
                continue
            puzzles.append(puzzle)
            solutions.append(solution)
            bar.update(1)
    return np.stack(puzzles), np.stack(solutions)


def grid_string(grid):
    """81-character string of a grid, '0' for blanks."""
    return "".join(map(str, grid.tolist()))


def rating(puzzle):
    """Rating fields recorded for a puzzle: givens, cells singles cannot fill, search nodes."""
    return {"givens": int((puzzle > 0).sum()), "singles_left": singles_left(puzzle),
            "search_nodes": search_nodes(puzzle)}
