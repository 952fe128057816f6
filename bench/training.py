"""`bench train TASK`: train a task's model with a log file beside the weights."""
import logging
from dataclasses import fields
from pathlib import Path

from bench.errors import BenchError


def setup_log(log_path):
    """Log INFO lines to ``log_path`` (appending) and keep the console for the progress bar."""
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    root.addHandler(handler)


def override(config, pairs):
    """Apply KEY=VALUE strings to a dataclass config, typed by its fields."""
    types = {f.name: f.type for f in fields(config)}
    for pair in pairs:
        key, _, value = pair.partition("=")
        if key not in types:
            raise BenchError(f"unknown training setting {key!r}; allowed: {', '.join(types)}")
        cast = {"int": int, "float": float, "bool": lambda v: v.lower() in ("1", "true", "yes")}
        setattr(config, key, cast.get(getattr(types[key], "__name__", types[key]), str)(value))
    return config


def sudoku_parts():
    from tasks.sudoku.checkpoint import DEFAULT_WEIGHTS
    from tasks.sudoku.model import SudokuModelConfig
    from tasks.sudoku.train import TrainConfig, train
    return SudokuModelConfig, TrainConfig, train, DEFAULT_WEIGHTS


def protein_parts():
    from tasks.protein.model import DEFAULT_WEIGHTS
    from tasks.protein.train import ProteinModelConfig, ProteinTrainConfig, train
    return ProteinModelConfig, ProteinTrainConfig, train, DEFAULT_WEIGHTS


# target: () -> (model config class, training config class, train function, default weights path)
TRAINERS = {"sudoku": sudoku_parts, "protein": protein_parts}


def run_training(target, settings, out):
    """`bench train TARGET KEY=VALUE...`: settings go to the model or the training config by name."""
    if target not in TRAINERS:
        raise BenchError(f"nothing to train called {target!r}; choose from: {', '.join(TRAINERS)}")
    model_cls, train_cls, train, default_weights = TRAINERS[target]()
    model_keys = {f.name for f in fields(model_cls)}
    model_cfg = override(model_cls(), [s for s in settings if s.split("=")[0] in model_keys])
    train_cfg = override(train_cls(), [s for s in settings if s.split("=")[0] not in model_keys])
    out = Path(out or default_weights)
    setup_log(out.with_suffix(".log"))
    logging.getLogger(f"train.{target}").info("model %s train %s", model_cfg, train_cfg)
    train(model_cfg, train_cfg, out)
    print(f"saved {out} (log: {out.with_suffix('.log')})")


def build_unirep():
    """Fetch the protein judge's weights and print its check on natural sequences."""
    from tasks.protein.fasta import read_fasta
    from tasks.protein.judge import fetch_weights, natural_sequence_check
    from tasks.protein.split import REFERENCE_A
    print(f"UniRep judge weights: {fetch_weights()}")
    check = natural_sequence_check(read_fasta(REFERENCE_A).sequences)
    print("judge check on reference A: perplexity {natural:.2f} natural, {shuffled:.2f} shuffled, "
          "{composition_only:.2f} composition-only; natural beats shuffled for "
          "{natural_beats_shuffled:.0%} of sequences".format(**check))


def build_protein():
    """The cached Swiss-Prot windows (needs metastudent-data and mmseqs2)."""
    from tasks.protein.bigdata import build_full_set
    path, counts = build_full_set()
    print(f"protein training windows: {counts['windows']} from {counts['distinct']} distinct Swiss-Prot "
          f"sequences, {counts['dropped_relatives']} dropped as relatives of held-out sequences -> {path}")


def build_sudoku(test_set):
    """The cached Sudoku training set, and with --test-set the committed test CSV."""
    from tasks.sudoku.data import make_test_set, training_set
    train = training_set()
    print(f"training set: {len(train.puzzles)} pairs ({train.source})")
    if test_set:
        print(f"test set: {make_test_set()}")


def build_data(target, test_set):
    """`bench data sudoku|protein|unirep`."""
    builders = {"sudoku": lambda: build_sudoku(test_set), "protein": build_protein, "unirep": build_unirep}
    if target not in builders:
        raise BenchError(f"no data to build for {target!r}; choose from: {', '.join(builders)}")
    builders[target]()
