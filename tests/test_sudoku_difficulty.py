"""Sudoku accuracy by difficulty: thirds of the test set by backtracking search nodes."""
import numpy as np

from tasks.sudoku.solver import search_nodes
from tasks.sudoku.task import SudokuTask


def test_thirds_follow_search_nodes_and_accuracy_is_split_by_them():
    task = SudokuTask()
    thirds = task.difficulty_thirds()
    nodes = np.array([search_nodes(p) for p in task.load_puzzles().puzzles])
    assert sorted(np.bincount(thirds)) == [332, 333, 335]
    assert nodes[thirds == 0].max() <= nodes[thirds == 1].min() and nodes[thirds == 1].max() <= nodes[thirds == 2].min()
    records = [{"index": i, "exact": bool(thirds[i] == 0), "passes": 5, "blanks": 1, "blanks_right": 1}
               for i in range(len(thirds))]
    metrics = {m["name"]: m["value"] for m in task.summarize(records)}
    assert metrics["exact_accuracy_easy"] == 1.0 and metrics["exact_accuracy_medium"] == 0.0
    assert metrics["exact_accuracy_hard"] == 0.0 and "rule_break_share" not in metrics
    assert metrics["exact_accuracy"] == (thirds == 0).mean()
