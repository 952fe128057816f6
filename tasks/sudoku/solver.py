"""Sudoku solving, solution counting and rating, compiled with numba.

Grids are flat ``int8`` arrays of 81 cells, row-major, 0 for a blank and 1..9 for a digit.
"""
import numpy as np
from numba import njit

ALL_DIGITS = 0x1FF


def _unit_tables():
    """Row, column and box index of each cell, and the 20 peers of each cell."""
    cells = np.arange(81)
    rows, cols = cells // 9, cells % 9
    boxes = (rows // 3) * 3 + cols // 3
    same = (rows[:, None] == rows) | (cols[:, None] == cols) | (boxes[:, None] == boxes)
    np.fill_diagonal(same, False)
    peers = np.stack([np.flatnonzero(row) for row in same]).astype(np.int64)  # [81, 20]
    return rows.astype(np.int64), cols.astype(np.int64), boxes.astype(np.int64), peers


ROW_OF, COL_OF, BOX_OF, PEERS = _unit_tables()


@njit(cache=True)
def _popcount(mask):
    count = 0
    while mask:
        mask &= mask - 1
        count += 1
    return count


@njit(cache=True)
def _used_masks(grid, row_of, col_of, box_of):
    """Digit masks used per row, column and box; ok is False if the givens clash."""
    used = np.zeros((3, 9), np.int64)
    for cell in range(81):
        if grid[cell]:
            bit = 1 << (grid[cell] - 1)
            r, c, b = row_of[cell], col_of[cell], box_of[cell]
            if (used[0, r] | used[1, c] | used[2, b]) & bit:
                return used, False
            used[0, r] |= bit
            used[1, c] |= bit
            used[2, b] |= bit
    return used, True


@njit(cache=True)
def _search(grid, limit, digit_order, row_of, col_of, box_of, out, max_nodes=0):
    """Depth-first search with the fewest-candidates rule.

    Counts solutions up to ``limit`` and copies the first one into ``out``.
    ``digit_order[cell]`` lists the digits 1..9 in the order they are tried.
    Returns (solutions found, search nodes visited); found is -1 when ``max_nodes`` (> 0) search
    nodes were visited without an answer (a nearly blank grid with a hidden clash can take
    exponential time to refute).
    """
    g = grid.copy()
    used, ok = _used_masks(g, row_of, col_of, box_of)
    if not ok:
        return 0, 0
    stack_cell = np.empty(81, np.int64)
    stack_left = np.empty(81, np.int64)  # candidate masks still to try
    depth, found, nodes = 0, 0, 0
    while True:
        best, best_count, best_mask = -1, 10, 0
        for cell in range(81):
            if g[cell] == 0:
                mask = ALL_DIGITS & ~(used[0, row_of[cell]] | used[1, col_of[cell]] | used[2, box_of[cell]])
                count = _popcount(mask)
                if count < best_count:
                    best, best_count, best_mask = cell, count, mask
                    if count <= 1:
                        break
        if best == -1:
            if found == 0:
                out[:] = g
            found += 1
            if found >= limit:
                return found, nodes
        elif best_count > 0:
            stack_cell[depth] = best
            stack_left[depth] = best_mask
            depth += 1
            nodes += 1
            if max_nodes > 0 and nodes > max_nodes:
                return -1, nodes
        while True:  # advance the deepest choice to its next candidate
            if depth == 0:
                return found, nodes
            cell = stack_cell[depth - 1]
            r, c, b = row_of[cell], col_of[cell], box_of[cell]
            if g[cell]:
                bit = 1 << (g[cell] - 1)
                used[0, r] ^= bit
                used[1, c] ^= bit
                used[2, b] ^= bit
                g[cell] = 0
            left = stack_left[depth - 1]
            if left == 0:
                depth -= 1
                continue
            for digit in digit_order[cell]:
                bit = 1 << (digit - 1)
                if left & bit:
                    break
            stack_left[depth - 1] = left ^ bit
            g[cell] = digit
            used[0, r] |= bit
            used[1, c] |= bit
            used[2, b] |= bit
            break


@njit(cache=True)
def _singles_fill(grid, row_of, col_of, box_of, peers):
    """Fill what naked and hidden singles alone determine; return the cells left blank."""
    g = grid.copy()
    progress = True
    while progress:
        progress = False
        used, ok = _used_masks(g, row_of, col_of, box_of)
        if not ok:
            return -1
        cand = np.zeros(81, np.int64)
        for cell in range(81):
            if g[cell] == 0:
                cand[cell] = ALL_DIGITS & ~(used[0, row_of[cell]] | used[1, col_of[cell]] | used[2, box_of[cell]])
        for cell in range(81):
            if g[cell] == 0:
                mask = cand[cell]
                if _popcount(mask) != 1:  # hidden single: a digit no peer in one unit can take
                    for unit in range(3):
                        others = 0
                        for p in peers[cell]:
                            same = (unit == 0 and row_of[p] == row_of[cell]) or \
                                   (unit == 1 and col_of[p] == col_of[cell]) or \
                                   (unit == 2 and box_of[p] == box_of[cell])
                            if same and g[p] == 0:
                                others |= cand[p]
                        only = mask & ~others
                        if _popcount(only) == 1:
                            mask = only
                            break
                if _popcount(mask) == 1:
                    digit = 1
                    while not (mask >> (digit - 1)) & 1:
                        digit += 1
                    g[cell] = digit
                    progress = True
                    break
    left = 0
    for cell in range(81):
        if g[cell] == 0:
            left += 1
    return left


_NATURAL_ORDER = np.tile(np.arange(1, 10, dtype=np.int64), (81, 1))


def count_solutions(grid, limit=2):
    """Number of solutions of ``grid``, counted up to ``limit``."""
    out = np.zeros(81, np.int8)
    found, _ = _search(np.asarray(grid, np.int8), limit, _NATURAL_ORDER, ROW_OF, COL_OF, BOX_OF, out)
    return int(found)


def solutions_up_to(grid, limit=2, max_nodes=0):
    """(number of solutions of ``grid`` counted up to ``limit``, the first one or None): one search.
    With ``max_nodes`` > 0 the count is -1 (and no solution) when the search gives up after that
    many nodes."""
    out = np.zeros(81, np.int8)
    found, _ = _search(np.asarray(grid, np.int8), limit, _NATURAL_ORDER, ROW_OF, COL_OF, BOX_OF, out, max_nodes)
    return int(found), (out if found > 0 else None)


def solution_near(grid, preferred):
    """A solution of ``grid`` found by trying each cell's digit in ``preferred`` first: close to
    ``preferred`` (``preferred`` itself when it is a solution); None when ``grid`` has none."""
    digit_order = np.tile(np.arange(1, 10, dtype=np.int64), (81, 1))
    for cell, digit in enumerate(np.asarray(preferred)):
        if 1 <= digit <= 9:
            digit_order[cell] = [digit] + [d for d in range(1, 10) if d != digit]
    out = np.zeros(81, np.int8)
    found, _ = _search(np.asarray(grid, np.int8), 1, digit_order, ROW_OF, COL_OF, BOX_OF, out)
    return out if found else None


def solve(grid):
    """The first solution of ``grid`` (int8[81]) or None when it has none."""
    out = np.zeros(81, np.int8)
    found, _ = _search(np.asarray(grid, np.int8), 1, _NATURAL_ORDER, ROW_OF, COL_OF, BOX_OF, out)
    return out if found else None


def search_nodes(grid):
    """Guessing nodes the solver visits to prove uniqueness: a backtracking rating."""
    out = np.zeros(81, np.int8)
    _, nodes = _search(np.asarray(grid, np.int8), 2, _NATURAL_ORDER, ROW_OF, COL_OF, BOX_OF, out)
    return int(nodes)


def singles_left(grid):
    """Cells that naked and hidden singles cannot fill (0: solvable by singles alone)."""
    return int(_singles_fill(np.asarray(grid, np.int8), ROW_OF, COL_OF, BOX_OF, PEERS))


def random_solution(rng):
    """A random complete grid drawn with ``rng`` (a numpy Generator)."""
    digit_order = np.argsort(rng.random((81, 9)), axis=1).astype(np.int64) + 1
    out = np.zeros(81, np.int8)
    _search(np.zeros(81, np.int8), 1, digit_order, ROW_OF, COL_OF, BOX_OF, out)
    return out


def breaks_rules(grid):
    """True when two equal digits share a row, column or box."""
    _, ok = _used_masks(np.asarray(grid, np.int8), ROW_OF, COL_OF, BOX_OF)
    return not ok
