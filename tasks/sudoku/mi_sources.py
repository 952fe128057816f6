"""Where Sudoku MI contexts come from.

- train: puzzles 0-19,999 of the model's training set;
- heldout: puzzles 90,000-99,999 of the same set (same distribution, never seen by the estimator);
- ood: the 200 hardest puzzles of the hard test set by backtracking search nodes (much harder
  than the training distribution, and never seen by model or estimator).
Half of each set are states visited by decoding runs from the puzzle, half are the solution
with a random mask (rate ~ U(0.05, 1)).
"""
import numpy as np
import torch

from strategies.mi.contexts import random_masks, visited_states
from tasks.sudoku.data import TEST_SET, read_puzzles, training_set
from tasks.sudoku.solver import search_nodes

SPLITS = {"train": (0, 20_000), "heldout": (90_000, 100_000), "ood": None}


def pool(split):
    """(puzzles, solutions) int arrays [P, 81] of a split."""
    if split == "ood":
        test = read_puzzles(TEST_SET)
        hardest = np.argsort([-search_nodes(p) for p in test.puzzles], kind="stable")[:200]
        return test.puzzles[hardest], test.solutions[hardest]
    start, stop = SPLITS[split]
    data = training_set()
    return data.puzzles[start:stop], data.solutions[start:stop]


def contexts(model, split, n, generator):
    """(tokens [n, 81], masked [n, 81]) for ``split``."""
    puzzles, solutions = pool(split)
    n_visited = n // 2
    rows = torch.randperm(len(puzzles), generator=generator)
    starts = torch.as_tensor(puzzles[rows[:max(8, n_visited // 8)]], dtype=torch.long)
    tokens_v, masked_v = visited_states(model, starts, starts == 0, n_visited, temperature=0.0, generator=generator)
    grids = torch.as_tensor(solutions[rows[torch.arange(n - n_visited) % len(rows)]], dtype=torch.long)
    masked_r = random_masks(torch.ones_like(grids, dtype=torch.bool), generator)
    return torch.cat([tokens_v, grids]), torch.cat([masked_v, masked_r])


def peer_matrix():
    """bool [81, 81]: same row, column or box (a cell is not its own peer)."""
    from tasks.sudoku.model import peer_mask
    return peer_mask() & ~torch.eye(81, dtype=torch.bool)
