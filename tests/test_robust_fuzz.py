"""Issue 18, property-based fuzzing: random bytes, CSV rows and FASTA into the data loaders and
random strings into the spec parser. The only outcomes allowed are a valid input or the project's
one-line error (BenchError); any other exception fails the test."""
import csv
import io
import tempfile
from dataclasses import fields
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bench.core import Strategy
from bench.errors import BenchError
from bench.registry import STRATEGIES, load_plugins, parse_strategy, split_specs
from tasks.protein.fasta import AMINO_ACIDS, read_fasta
from tasks.sudoku.data import TEST_SET, check_solutions, read_puzzles
from tasks.sudoku.generate import grid_string
from tasks.sudoku.solver import breaks_rules

FUZZ = settings(max_examples=150, deadline=None, database=None,  # no example database written into the checkout
                suppress_health_check=[HealthCheck.too_slow])
load_plugins()


def one_line(text):
    return len(str(text).splitlines()) == 1


def load(loader, data):
    """``loader`` on a file holding ``data`` (bytes): its result, or the BenchError it raised."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input"
        path.write_bytes(data)
        try:
            return loader(path)
        except BenchError as err:
            assert one_line(err), repr(str(err))
            return err


def load_puzzles(path):
    return check_solutions(read_puzzles(path))


def assert_valid_puzzles(loaded):
    """A loaded puzzle set holds only puzzles the task can decode and score."""
    event(type(loaded).__name__)  # --hypothesis-show-statistics: how often each outcome came up
    if isinstance(loaded, BenchError):
        return
    assert loaded.puzzles.shape[1] == 81 and len(loaded.puzzles) == len(loaded.line_numbers) > 0
    assert ((loaded.puzzles >= 0) & (loaded.puzzles <= 9)).all() and (loaded.puzzles == 0).any(1).all()
    assert not any(breaks_rules(p) for p in loaded.puzzles)
    assert (loaded.solutions > 0).all() and not any(breaks_rules(s) for s in loaded.solutions)
    givens = loaded.puzzles > 0
    assert (loaded.solutions[givens] == loaded.puzzles[givens]).all()
    assert loaded.unique.dtype == bool and all(one_line(p) for p in loaded.problems)


def assert_valid_fasta(loaded):
    event(type(loaded).__name__)
    if isinstance(loaded, BenchError):
        return
    assert loaded.sequences and all(set(s) <= set(AMINO_ACIDS) and 50 <= len(s) <= 100 for s in loaded.sequences)
    assert all(one_line(p) for p in loaded.problems)


TEST_PUZZLES = read_puzzles(TEST_SET).puzzles


def blanked(index, cells):
    """Test puzzle ``index`` with ``cells`` blanked: loads, often with several solutions."""
    puzzle = TEST_PUZZLES[index].copy()
    puzzle[cells] = 0
    return grid_string(puzzle)


# A grid: a test puzzle with cells blanked, mostly blanks with a few digits (both load and are
# solved, unless the digits clash or close every solution), or any 75-85 characters.
test_grid = st.builds(blanked, st.integers(0, len(TEST_PUZZLES) - 1), st.lists(st.integers(0, 80), max_size=30))
sparse_grid = st.lists(st.sampled_from("." * 60 + "0" * 10 + "123456789"), min_size=81, max_size=81).map("".join)
any_grid = st.text(alphabet=st.characters(), min_size=75, max_size=85)
field = st.one_of(test_grid, sparse_grid, any_grid, st.text(max_size=20), st.just("puzzle"))
csv_rows = st.lists(st.lists(field, min_size=0, max_size=3), max_size=8)


def csv_bytes(rows):
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue().encode("utf-8", errors="surrogatepass")


@FUZZ
@given(st.binary(max_size=2000))
def test_random_bytes_into_the_puzzle_loader(data):
    assert_valid_puzzles(load(load_puzzles, data))


@FUZZ
@given(csv_rows)
def test_random_csv_rows_into_the_puzzle_loader(rows):
    try:
        data = csv_bytes(rows)
    except UnicodeEncodeError:  # lone surrogates cannot be written as UTF-8 by any editor either
        return
    assert_valid_puzzles(load(load_puzzles, data))


residues = st.one_of(st.text(alphabet=AMINO_ACIDS, min_size=25, max_size=50),  # two lines make a good record
                     st.text(alphabet=AMINO_ACIDS + "acdxBZ*- 0\t", max_size=130))
record = st.tuples(st.text(max_size=12), st.lists(residues, max_size=3))
fasta_text = st.lists(record, max_size=6).map(
    lambda records: "".join(f">{name}\n" + "".join(line + "\n" for line in lines) for name, lines in records))


@FUZZ
@given(st.binary(max_size=2000))
def test_random_bytes_into_the_fasta_loader(data):
    assert_valid_fasta(load(read_fasta, data))


@FUZZ
@given(fasta_text, st.text(max_size=30))
def test_random_fasta_into_the_fasta_loader(text, prefix):
    data = (prefix + text).encode("utf-8", errors="replace")
    assert_valid_fasta(load(read_fasta, data))


# Specs: random text, and pieces of real ones (names, keys, values) joined at random.
names = st.sampled_from(sorted(STRATEGIES) + ["", "top", "TopK"])
keys = st.sampled_from(sorted({f.name for cls in STRATEGIES.values() for f in fields(cls)}) + ["", "q"])
values = st.one_of(st.sampled_from(["1", "0", "-1", "3", "0.5", "inf", "nan", "1e400", "true", "sample", "",
                                    "threshold", "confidence", str(2 ** 70)]), st.text(max_size=6))
pairs = st.lists(st.tuples(keys, st.sampled_from(["=", "==", ""]), values).map("".join), max_size=4)
structured = st.tuples(names, st.sampled_from([":", "", "::"]), pairs).map(lambda t: t[0] + t[1] + ",".join(t[2]))
spec_text = st.one_of(st.text(max_size=40), structured)


@FUZZ
@given(spec_text)
def test_random_strings_into_the_spec_parser(text):
    for spec in split_specs(text) or [text]:
        try:
            strategy = parse_strategy(spec)
        except BenchError as err:
            assert one_line(err), repr(str(err))
            event("BenchError")
            continue
        event("Strategy")
        assert isinstance(strategy, Strategy)
        for f in fields(strategy):  # every value has its declared type and, for numbers, is finite
            value = getattr(strategy, f.name)
            assert type(value).__name__ == getattr(f.type, "__name__", f.type)
            assert not isinstance(value, float) or np.isfinite(value)
