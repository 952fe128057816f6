import pytest

from bench.errors import BenchError
from tasks.sudoku.data import TEST_SET, read_puzzles, training_set
from tasks.sudoku.generate import grid_string
from tasks.sudoku.solver import count_solutions, singles_left


@pytest.fixture(scope="module")
def test_set():
    return read_puzzles(TEST_SET)


def test_committed_test_set_is_1000_hard_unique_puzzles(test_set):
    assert len(test_set.puzzles) == 1000 and not test_set.problems
    assert ((test_set.puzzles > 0).sum(1) <= 28).all()
    assert all(count_solutions(p) == 1 for p in test_set.puzzles)
    assert all(singles_left(p) > 0 for p in test_set.puzzles)
    assert len({grid_string(p) for p in test_set.puzzles}) == 1000
    agree = (test_set.puzzles == 0) | (test_set.puzzles == test_set.solutions)
    assert agree.all()


@pytest.mark.slow
def test_test_set_shares_no_grid_with_training(test_set):
    train = training_set()
    assert len(train.puzzles) >= 100_000
    seen = {grid_string(g) for g in train.puzzles} | {grid_string(g) for g in train.solutions}
    assert not seen & ({grid_string(g) for g in test_set.puzzles} | {grid_string(g) for g in test_set.solutions})


def test_malformed_rows_are_reported_by_line_and_the_rest_loads(tmp_path, test_set):
    good = grid_string(test_set.puzzles[0])
    clash = "55" + "0" * 79
    lines = ["puzzle,solution", good.replace("0", "."), "123", "x" * 81, clash, good]
    path = tmp_path / "p.csv"
    path.write_text("\n".join(lines) + "\n")
    loaded = read_puzzles(path)
    assert len(loaded.puzzles) == 2 and loaded.solutions is None
    assert loaded.line_numbers == [2, 6]
    assert [p.split(":")[1] for p in loaded.problems] == ["3", "4", "5"]
    assert "81" in loaded.problems[0] and "allowed" in loaded.problems[1] and "rule" in loaded.problems[2]
    assert (loaded.puzzles[0] == test_set.puzzles[0]).all()


def test_wrong_solution_is_reported(tmp_path, test_set):
    wrong = test_set.solutions[0].copy()
    wrong[[0, 1]] = wrong[[1, 0]]
    path = tmp_path / "p.csv"
    path.write_text(f"{grid_string(test_set.puzzles[0])},{grid_string(wrong)}\n"
                    f"{grid_string(test_set.puzzles[1])},{grid_string(test_set.solutions[1])}\n")
    loaded = read_puzzles(path)
    assert len(loaded.puzzles) == 1 and "p.csv:1:" in loaded.problems[0]


def test_missing_or_empty_file_is_one_error(tmp_path):
    with pytest.raises(BenchError, match="not found"):
        read_puzzles(tmp_path / "absent.csv")
    (tmp_path / "bad.csv").write_text("abc\n")
    with pytest.raises(BenchError, match="no valid puzzles"):
        read_puzzles(tmp_path / "bad.csv")
