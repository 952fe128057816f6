"""Issue 18, input errors: every bad input to `bench run` is one line on stderr and exit status 2,
found before anything is decoded (so the output folder holds no result), and specs that used to
be accepted silently (empty, repeated, non-finite) are refused."""
import json
import os

import pytest

from bench.cli import main
from bench.errors import BenchError
from bench.registry import parse_strategy
from bench.results import to_json
from conftest import run_fresh_cli
from tasks.protein.fasta import read_fasta
from tasks.protein.split import REFERENCE_A
from tasks.sudoku.data import TEST_SET, read_puzzles


def one_line_error(capsys, argv, out):
    """Run `bench ARGV --out OUT` in this process; assert exit 2, one stderr line and no result
    written; return that line."""
    status = main([*argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    written = [p for p in out.rglob("*") if p.suffix in (".json", ".jsonl")] if out.is_dir() else []
    assert not written, written
    return err.strip()


@pytest.fixture
def files(tmp_path):
    """Bad input files: binary, not UTF-8, a CSV field over 128 KB, a text file as a model."""
    made = {"binary": tmp_path / "binary.dat", "latin1": tmp_path / "latin1.txt",
            "big_field": tmp_path / "big.csv", "text_model": tmp_path / "model.pt"}
    made["binary"].write_bytes(bytes(range(256)) * 8)
    made["latin1"].write_bytes(">seq1\nMKV\xe4\n".encode("latin-1"))
    made["big_field"].write_text("puzzle\n" + "1" * 140_000 + "\n")
    made["text_model"].write_text("these are not weights\n")
    return made


@pytest.mark.parametrize("argv,message", [
    (["run", "--data", "{binary}"], "is binary"),
    (["run", "--data", "{latin1}"], "is not UTF-8 text"),
    (["run", "--tasks", "protein", "--data", "{binary}"], "is binary"),
    (["run", "--tasks", "protein", "--data", "{latin1}"], "is not UTF-8 text (byte 0xe4"),
    (["run", "--data", "{big_field}"], "big.csv:2: not a puzzle CSV (field larger than field limit"),
    (["run", "--model", "{text_model}"], "is corrupt or unreadable"),
    (["run", "--tasks", "protein", "--seed", "-1"], "--seed must be between 0 and 4294967295"),
    (["run", "--seed", str(2 ** 64)], "--seed must be between 0 and 4294967295"),
    (["run", "--batch-size", "0"], "--batch-size must be at least 1"),
    (["run", "--batch-size", "-1"], "--batch-size must be at least 1"),
    (["run", "--strategies", ""], "--strategies is empty"),
    (["run", "--strategies", " , "], "--strategies is empty"),
    (["run", "--tasks", ""], "--tasks is empty"),
    (["run", "--tasks", "sudoku,sudoku"], "task sudoku is named twice"),
    (["run", "--strategies", "topk:k=3,k=4"], "topk: parameter k is given twice"),
    (["run", "--strategies", "topk:k=3,topk:k=3,order=confidence"], "are the same run"),
    (["run", "--strategies", "eb:gamma=inf"], "not a finite float"),
    (["run", "--strategies", "topk:k=99999999999999999999"], "out of range"),
    (["run", "--verify", "-1"], "--verify must be 0"),
])
def test_bad_run_input_is_one_line_before_decoding(capsys, tmp_path, files, argv, message):
    argv = [arg.format(**files) for arg in argv]
    assert message in one_line_error(capsys, ["run", "--limit", "2", *argv[1:]], tmp_path / "out")


def test_out_that_is_a_file_or_under_a_file_is_one_line(capsys, tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert "is a file, not a folder" in one_line_error(capsys, ["run", "--limit", "2"], a_file)
    assert "Not a directory" in one_line_error(capsys, ["run", "--limit", "2"], a_file / "below")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_out_is_one_line(capsys, tmp_path):
    out = tmp_path / "ro"
    (out / "sudoku").mkdir(parents=True)
    (out / "sudoku").chmod(0o555)
    try:
        assert "cannot write results into" in one_line_error(capsys, ["run", "--limit", "2"], out)
    finally:
        (out / "sudoku").chmod(0o755)


def test_unwritable_out_is_found_before_any_decoding(capsys, tmp_path, monkeypatch):
    """The check probes the folder with a real file; where that fails (read-only, full, no
    permission) the run stops before decoding. Simulated for root, who may write anywhere."""
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    monkeypatch.setattr("bench.run.cell.decode", lambda *a, **k: pytest.fail("decoded before the --out check"))
    line = one_line_error(capsys, ["run", "--limit", "2"], tmp_path / "out")
    assert "cannot write results into" in line and "Permission denied" in line


def test_a_text_file_as_model_is_one_line_in_a_fresh_process(tmp_path, files):
    proc = run_fresh_cli("run", "--limit", 2, "--out", tmp_path, "--model", files["text_model"])
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "corrupt or unreadable" in proc.stderr and "Traceback" not in proc.stderr


def test_readers_refuse_binary_and_non_utf8_files(files):
    for reader in (read_puzzles, read_fasta):
        for name in ("binary", "latin1"):
            with pytest.raises(BenchError, match="binary|not UTF-8"):
                reader(files[name])


def test_utf8_with_a_byte_order_mark_still_reads(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + TEST_SET.read_bytes())
    assert len(read_puzzles(path).puzzles) == 1000
    fasta = tmp_path / "bom.fasta"
    fasta.write_bytes(b"\xef\xbb\xbf" + REFERENCE_A.read_bytes())
    assert len(read_fasta(fasta).sequences) == len(read_fasta(REFERENCE_A).sequences)


def test_a_repeated_key_is_refused_and_one_key_is_kept():
    with pytest.raises(BenchError, match="given twice"):
        parse_strategy("topk:k=3,k=4")
    assert parse_strategy("topk:k=4").k == 4


def test_non_finite_numbers_are_never_written_as_json():
    with pytest.raises(BenchError, match="non-finite"):
        to_json({"value": float("nan")})
    with pytest.raises(BenchError, match="non-finite"):
        to_json({"value": float("inf")})
    assert json.loads(to_json({"value": 1.5})) == {"value": 1.5}
