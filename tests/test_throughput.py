"""`bench throughput`: a Markdown table of passes per second per task and batch size."""
from bench.cli import main


def test_throughput_prints_a_row_per_batch_size(capsys):
    assert main(["throughput", "--tasks", "sudoku", "--batches", "1,3", "--seconds", "0.01"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("device cpu, dtype float32") and lines[1] == "| task | batch | passes/s | ms per call |"
    rows = [line.split(" | ") for line in lines[3:]]
    assert [row[1] for row in rows] == ["1", "3"] and all(float(row[2].replace(",", "")) > 0 for row in rows)


def test_bad_batch_sizes_are_one_line(capsys):
    assert main(["throughput", "--tasks", "sudoku", "--batches", "1,x"]) == 2
    assert "--batches must be comma-separated whole numbers" in capsys.readouterr().err
