"""The Sudoku task's commands: training its model, building its data, order-training examples."""
import torch

from bench.training import train_and_log


def train_model(settings, out):
    """`bench train sudoku KEY=VALUE...`: settings go to the model or the training config by name."""
    from tasks.sudoku.checkpoint import DEFAULT_WEIGHTS
    from tasks.sudoku.model import SudokuModelConfig
    from tasks.sudoku.train import TrainConfig, train
    train_and_log("sudoku", (SudokuModelConfig, TrainConfig), train, settings, out, default_weights=DEFAULT_WEIGHTS)


def build_data(args):
    """`bench data sudoku [--test-set] [--validation-set]`: the cached training set, and the
    committed test and validation CSVs."""
    from tasks.sudoku.data import make_test_set, make_validation_set, training_set
    train = training_set()
    print(f"training set: {len(train.puzzles)} pairs ({train.source})")
    if args.test_set:
        print(f"test set: {make_test_set()}")
    if args.validation_set:
        print(f"validation set: {make_validation_set()}")


def order_examples():
    """(x0, start tokens, start masked) of the training puzzles rated hard like the test set."""
    from tasks.sudoku.data import training_set
    from tasks.sudoku.generate import is_hard
    pairs = training_set()
    keep = [i for i, p in enumerate(pairs.puzzles) if is_hard(p)]
    puzzles = torch.as_tensor(pairs.puzzles[keep], dtype=torch.long)
    return torch.as_tensor(pairs.solutions[keep], dtype=torch.long), puzzles, puzzles == 0


def unit_index():
    """[27, 9] the cell indices of every row, column and box."""
    cells = torch.arange(81).view(9, 9)
    boxes = cells.view(3, 3, 3, 3).permute(0, 2, 1, 3).reshape(9, 9)
    return torch.cat([cells, cells.T, boxes])


def solved_boards(grids):
    """[B] float: 1 where a decoded grid [B, 81] (digits 1-9) has every digit once in each row,
    column and box (the task's `exact`, as the decode loop never changes a given)."""
    digits = grids[:, unit_index()]                                       # [B, 27, 9]
    counts = torch.nn.functional.one_hot(digits.clamp(0, 9), 10)[..., 1:].sum(2)   # [B, 27, 9]
    return (counts == 1).all(2).all(1).float()
