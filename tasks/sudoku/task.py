"""The Sudoku task: fill the blanks of hard puzzles; exact-board accuracy is the headline."""
import hashlib
from pathlib import Path

import numpy as np
import torch

from bench.core import EvalSet, Task
from bench.errors import BenchError
from bench.provenance import portable_path
from bench.registry import register_task
from bench.stats import mean_metric, ratio_metric
from tasks.sudoku import hooks
from tasks.sudoku.checkpoint import DEFAULT_WEIGHTS, load_sudoku_model
from tasks.sudoku.data import TEST_SET, read_puzzles
from tasks.sudoku.generate import grid_string
from tasks.sudoku.solver import breaks_rules, solve


@register_task
class SudokuTask(Task):
    """Sudoku: 1,000 hard puzzles (unique solution, <= 28 givens, beyond singles)."""
    name = "sudoku"
    headline = "exact_accuracy"
    weights_dir = Path(__file__).parent / "weights"  # the model's trained helpers (MI estimator, ...)
    temperature = 0.0  # digits are filled by argmax
    mi_label_sizes = {"train": 8000, "heldout": 500, "ood": 500}
    # order policies: 16 puzzles per step, steps = 2700 / T (about 8 minutes per budget on one CPU
    # thread), 128 held out; eb:gamma=1, 0.3, 0.1 take 5.7, 9.6, 13.9 passes on 200 hard training puzzles
    order_training = {"batch": 16, "step_units": 2700, "n_eval": 128, "init_gamma": {5: 1.0, 10: 0.3, 15: 0.1}}
    options = {"data": "puzzle CSV (default: the shipped hard test set)",
               "model": "checkpoint path (default: the shipped model)"}

    def __init__(self, data=None, model=None):
        self.data_path = Path(data) if data else TEST_SET
        self.model_path = Path(model) if model else DEFAULT_WEIGHTS
        self.puzzle_set = None

    def config(self):
        return {"data": portable_path(self.data_path), "model": portable_path(self.model_path)}

    def load_model(self):
        return load_sudoku_model(self.model_path)

    def load_puzzles(self):
        """Read and check the puzzle file once; solve puzzles that come without solutions."""
        if self.puzzle_set is None:
            self.puzzle_set = read_puzzles(self.data_path)
            if self.puzzle_set.solutions is None:
                self.puzzle_set.solutions = self._solve_all(self.puzzle_set.puzzles)
        return self.puzzle_set

    @staticmethod
    def _solve_all(puzzles):
        solutions = [solve(p) for p in puzzles]
        if any(s is None for s in solutions):
            raise BenchError("a puzzle without a given solution has no solution at all")
        return np.stack(solutions)

    def eval_set(self, limit=None, seed=0):
        puzzles = self.load_puzzles()
        grids = torch.as_tensor(puzzles.puzzles[:limit], dtype=torch.long)
        digest = hashlib.sha256(puzzles.puzzles.tobytes() + puzzles.solutions.tobytes()).hexdigest()[:12]
        return EvalSet(tokens=grids, masked=grids == 0, data_id=digest,
                       extras={"solutions": puzzles.solutions[:limit], "lines": puzzles.line_numbers[:limit]})

    def records(self, tokens, passes, rows, eval_set):
        solutions, lines = eval_set.extras["solutions"], eval_set.extras["lines"]
        starts = eval_set.tokens
        out = []
        for grid, n_passes, row in zip(tokens.numpy(), passes.tolist(), rows.tolist()):
            blanks = starts[row].numpy() == 0
            right = grid == solutions[row]
            out.append({"index": row, "line": lines[row], "passes": n_passes,
                        "exact": bool(right.all()), "blanks": int(blanks.sum()),
                        "blanks_right": int((right & blanks).sum()),
                        "breaks_rules": bool(breaks_rules(grid)), "output": grid_string(grid)})
        return out

    def summarize(self, records):
        column = lambda key: np.array([r[key] for r in records], dtype=float)  # noqa: E731
        return [
            mean_metric("exact_accuracy", column("exact"), True, "exact-board accuracy", field="exact"),
            ratio_metric("cell_accuracy", column("blanks_right"), column("blanks"), True,
                         "cell accuracy on blanks", fields=("blanks_right", "blanks")),
            mean_metric("rule_break_share", column("breaks_rules"), False, "boards breaking a rule"),
            mean_metric("passes", column("passes"), False, "forward passes per board", field="passes"),
        ]

    def problems(self):
        """Malformed rows of the data file (reported, skipped)."""
        return self.load_puzzles().problems

    def train_model(self, settings, out):
        hooks.train_model(settings, out)

    def data_builders(self):
        return {"sudoku": ("the cached training set; with --test-set also the committed test CSV", hooks.build_data)}

    def mi_contexts(self, model, split, n, generator):
        from tasks.sudoku.mi_sources import contexts
        return contexts(model, split, n, generator)

    def mi_peers(self):
        from tasks.sudoku.mi_sources import peer_matrix
        return peer_matrix()

    def mi_grid(self):
        return 9

    def order_examples(self):
        return hooks.order_examples()
