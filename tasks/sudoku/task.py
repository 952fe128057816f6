"""The Sudoku task: fill the blanks of hard puzzles; exact-board accuracy is the headline."""
from pathlib import Path

import numpy as np
import torch

from bench.core import EvalSet, Task
from bench.provenance import portable_path
from bench.registry import register_task
from bench.stats import mean_metric, ratio_metric
from tasks.sudoku import hooks
from tasks.sudoku.checkpoint import DEFAULT_WEIGHTS, load_sudoku_model, save_checkpoint
from tasks.sudoku.data import NOTE_ROWS, TEST_SET, check_solutions, data_id, note, read_puzzles
from tasks.sudoku.generate import grid_string
from tasks.sudoku.solver import breaks_rules, search_nodes, solution_near

DIFFICULTY = ("easy", "medium", "hard")   # thirds of a run's puzzles by backtracking search nodes


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
        self.read_set = None      # every row of the data file, as read (read_puzzles)
        self.puzzle_set = None    # its first ``checked_for`` usable puzzles (None: all), checked
        self.checked_for = None
        self.nodes = {}           # search nodes of puzzles rated so far, by index

    def config(self):
        return {"data": portable_path(self.data_path), "model": portable_path(self.model_path)}

    def load_model(self):
        return load_sudoku_model(self.model_path)

    def read_puzzles(self):
        """Every row of the data file, parsed (read once)."""
        if self.read_set is None:
            self.read_set = read_puzzles(self.data_path)
        return self.read_set

    def load_puzzles(self, limit=None):
        """The first ``limit`` usable puzzles of the data file (None: all), checked: solutions
        counted and solved where none is stored, puzzles without any dropped. Rows past them
        are not searched; a later call for more checks again."""
        have = self.checked_for
        if self.puzzle_set is None or (have is not None and (limit is None or limit > have)):
            self.puzzle_set, self.checked_for = check_solutions(self.read_puzzles(), limit), limit
        return self.puzzle_set

    def data_summary(self):
        """What the run line says about the data besides its size: puzzles with several solutions
        (among those checked: the run's)."""
        several = int((~self.load_puzzles(self.checked_for).unique).sum())
        return (f"{several} with several solutions: solved means any valid completion; cell accuracy "
                f"compares with the solution nearest the decoded grid") if several else ""

    def eval_set(self, limit=None, seed=0):
        puzzles = self.load_puzzles(limit)
        grids = torch.as_tensor(puzzles.puzzles[:limit], dtype=torch.long)
        return EvalSet(tokens=grids, masked=grids == 0, data_id=data_id(self.read_puzzles()),
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
        def column(key):
            return np.array([r[key] for r in records], dtype=float)

        return [
            mean_metric("exact_accuracy", column("exact"), True, "exact-board accuracy", field="exact"),
            ratio_metric("cell_accuracy", column("blanks_right"), column("blanks"), True,
                         "cell accuracy on blanks", fields=("blanks_right", "blanks")),
            *self.accuracy_by_difficulty(records),
            mean_metric("passes", column("passes"), False, "forward passes per board", field="passes"),
        ]

    def difficulty_thirds(self, rows=None):
        """[len(rows)] 0, 1, 2: the tercile of each of puzzles ``rows``' backtracking search nodes
        among them (easiest third first; ties go to the lower third). ``rows``: eval-set indices,
        a run's (None: every puzzle of the file); only these puzzles are rated."""
        rows = list(range(len(self.load_puzzles().puzzles))) if rows is None else list(rows)
        nodes = np.array(self.nodes_of(rows))
        cuts = np.quantile(nodes, [1 / 3, 2 / 3])
        return (nodes > cuts[0]).astype(int) + (nodes > cuts[1]).astype(int)

    def nodes_of(self, rows):
        """Backtracking search nodes of puzzles ``rows`` (eval-set indices), each rated once per task."""
        new = sorted(set(rows) - set(self.nodes))
        if new:
            puzzles = self.load_puzzles(max(new) + 1).puzzles
            if len(new) > NOTE_ROWS:
                note(f"rating {len(new):,} puzzles of {self.data_path.name} by search nodes")
            self.nodes.update((row, search_nodes(puzzles[row])) for row in new)
        return [self.nodes[row] for row in rows]

    def accuracy_by_difficulty(self, records):
        """Exact-board accuracy within each third of the run's puzzles by search nodes (what
        replaced rule_break_share, which equals 1 - exact accuracy on unique puzzles)."""
        thirds = self.difficulty_thirds([r["index"] for r in records])
        exact = np.array([r["exact"] for r in records], dtype=float)
        return [mean_metric(f"exact_accuracy_{name}", exact[thirds == t], True,
                            f"exact-board accuracy, {name} third by search nodes")
                for t, name in enumerate(DIFFICULTY) if (thirds == t).any()]

    def problems(self):
        """Malformed rows of the data file and unsolvable ones among those checked (reported, skipped)."""
        return self.load_puzzles(self.checked_for).problems

    def train_model(self, settings, out):
        hooks.train_model(settings, out)

    def data_builders(self):
        return {"sudoku": ("the cached training set; with --test-set also the committed test CSV", hooks.build_data)}

    def value_frequencies(self):
        """[9] each digit's frequency in the training data (PC-Sampler's background,
        strategies/schedules): a solved board holds every digit 9 times, so 1/9 each."""
        return [1 / 9] * 9

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

    def save_denoiser(self, model, path, meta):
        """A fine-tuned model (the learned order's denoiser=joint) as ``--model PATH`` loads it."""
        save_checkpoint(path, model.network, meta)


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
