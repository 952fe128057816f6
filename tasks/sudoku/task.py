"""The Sudoku task: fill the blanks of hard puzzles; exact-board accuracy is the headline."""
import hashlib
from pathlib import Path

import numpy as np
import torch

from bench.core import EvalSet, Task
from bench.provenance import portable_path
from bench.registry import register_task
from bench.stats import mean_metric, ratio_metric
from tasks.sudoku import hooks
from tasks.sudoku.checkpoint import DEFAULT_WEIGHTS, load_sudoku_model
from tasks.sudoku.data import TEST_SET, check_solutions, read_puzzles
from tasks.sudoku.generate import grid_string
from tasks.sudoku.solver import breaks_rules, search_nodes, solution_near


DIFFICULTY = ("easy", "medium", "hard")   # thirds of the data file by backtracking search nodes


@register_task
class SudokuTask(Task):
    """Sudoku: 1,000 hard puzzles (unique solution, <= 28 givens, beyond singles)."""
    name = "sudoku"
    headline = "exact_accuracy"
    weights_dir = Path(__file__).parent / "weights"  # the model's trained helpers (MI estimator, ...)
    temperature = 0.0  # digits are filled by argmax
    mi_label_sizes = {"train": 8000, "heldout": 500, "ood": 500}
    # order policies: trained on the solved-board reward (objective reward), 16 puzzles per step,
    # steps = 2700 / T, 256 held out; eb:gamma=1, 0.3, 0.1 take 5.7, 9.6, 13.9 passes on 200 hard
    # training puzzles
    order_training = {"objective": "reward", "batch": 16, "step_units": 2700, "n_eval": 256,
                      "init_gamma": {5: 1.0, 10: 0.3, 15: 0.1}}
    options = {"data": "puzzle CSV (default: the shipped hard test set)",
               "model": "checkpoint path (default: the shipped model)"}

    def __init__(self, data=None, model=None):
        self.data_path = Path(data) if data else TEST_SET
        self.model_path = Path(model) if model else DEFAULT_WEIGHTS
        self.puzzle_set = None
        self.thirds = None

    def config(self):
        return {"data": portable_path(self.data_path), "model": portable_path(self.model_path)}

    def load_model(self):
        return load_sudoku_model(self.model_path)

    def load_puzzles(self):
        """Read and check the puzzle file once: solve puzzles that come without solutions, drop
        those without any, and note which have several."""
        if self.puzzle_set is None:
            self.puzzle_set = check_solutions(read_puzzles(self.data_path))
        return self.puzzle_set

    def data_summary(self):
        """What the run line says about the data besides its size: puzzles with several solutions."""
        several = int((~self.load_puzzles().unique).sum())
        return (f"{several} with several solutions: solved means any valid completion; cell accuracy "
                f"compares with the solution nearest the decoded grid") if several else ""

    def eval_set(self, limit=None, seed=0):
        puzzles = self.load_puzzles()
        grids = torch.as_tensor(puzzles.puzzles[:limit], dtype=torch.long)
        digest = hashlib.sha256(puzzles.puzzles.tobytes() + puzzles.solutions.tobytes()).hexdigest()[:12]
        return EvalSet(tokens=grids, masked=grids == 0, data_id=digest,
                       extras={"solutions": puzzles.solutions[:limit], "lines": puzzles.line_numbers[:limit],
                               "unique": puzzles.unique[:limit]})

    def records(self, tokens, passes, rows, eval_set):
        extras = eval_set.extras
        out = []
        for grid, n_passes, row in zip(tokens.numpy(), passes.tolist(), rows.tolist()):
            puzzle = eval_set.tokens[row].numpy()
            solved, right = grade(puzzle, grid, extras["solutions"][row], bool(extras["unique"][row]))
            out.append({"index": row, "line": extras["lines"][row], "passes": n_passes,
                        "exact": solved, "blanks": int((puzzle == 0).sum()), "blanks_right": right,
                        "breaks_rules": bool(breaks_rules(grid)), "output": grid_string(grid)})
        return out

    def summarize(self, records):
        column = lambda key: np.array([r[key] for r in records], dtype=float)  # noqa: E731
        return [
            mean_metric("exact_accuracy", column("exact"), True, "exact-board accuracy", field="exact"),
            ratio_metric("cell_accuracy", column("blanks_right"), column("blanks"), True,
                         "cell accuracy on blanks", fields=("blanks_right", "blanks")),
            *self.accuracy_by_difficulty(records),
            mean_metric("passes", column("passes"), False, "forward passes per board", field="passes"),
        ]

    def difficulty_thirds(self):
        """[n] 0, 1, 2: the tercile of each puzzle's backtracking search nodes in the whole data
        file (easiest third first); ties go to the lower third."""
        if self.thirds is None:
            nodes = np.array([search_nodes(p) for p in self.load_puzzles().puzzles])
            cuts = np.quantile(nodes, [1 / 3, 2 / 3])
            self.thirds = (nodes > cuts[0]).astype(int) + (nodes > cuts[1]).astype(int)
        return self.thirds

    def accuracy_by_difficulty(self, records):
        """Exact-board accuracy within each third of the data by search nodes (what replaced
        rule_break_share, which equals 1 - exact accuracy on unique puzzles)."""
        thirds = self.difficulty_thirds()[[r["index"] for r in records]]
        exact = np.array([r["exact"] for r in records], dtype=float)
        return [mean_metric(f"exact_accuracy_{name}", exact[thirds == t], True,
                            f"exact-board accuracy, {name} third by search nodes")
                for t, name in enumerate(DIFFICULTY) if (thirds == t).any()]

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

    def order_reward(self, x0, tokens, log_q):
        return hooks.solved_boards(tokens)


def grade(puzzle, grid, solution, unique):
    """(solved, blanks right) of a decoded ``grid``. Solved: complete, no rule broken and every
    given kept, so any valid completion counts. Cell accuracy counts blanks holding the solution's
    digit; where the puzzle has several solutions the stored one is just one of them, so the grid
    is compared with the solution nearest it instead (the solver trying the grid's digits first)."""
    blanks = puzzle == 0
    solved = bool((grid > 0).all() and (grid[~blanks] == puzzle[~blanks]).all() and not breaks_rules(grid))
    if solved:
        return True, int(blanks.sum())
    reference = solution if unique else solution_near(puzzle, grid)
    return False, int((blanks & (grid == reference)).sum())
