"""`bench report` writes only where it should: beside the results it reads unless --out says
otherwise, never into the committed reports/ from other results, and an --out it cannot write
(a file, a path under a file, a place even root cannot write) is a one-line error (exit 2)
before any work, leaving no file behind.

Runs as root here: permission bits do not stop root, so unwritable places are a path under a file
and /proc (which refuses new entries to everyone); a chmod-ed folder is tried only as a user."""
import contextlib
import io
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bench.report.build
from bench.cli import main
from bench.errors import BenchError
from conftest import ROOT
from test_report import RUNS

FAST = settings(max_examples=30, deadline=None, database=None)  # no example database in the checkout


def results_in(folder):
    folder.mkdir(parents=True, exist_ok=True)
    for i, r in enumerate(RUNS):
        (folder / f"run{i}.json").write_text(json.dumps(r))
    return folder


def every_file(root):
    return sorted(p for p in root.rglob("*"))


def one_line_error(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2, captured
    assert captured.err.startswith("error: ") and len(captured.err.strip().splitlines()) == 1, captured.err
    return captured.err.strip()


def test_out_onto_a_file_is_one_line_and_the_file_is_untouched(tmp_path, capsys):
    results = results_in(tmp_path / "results")
    target = tmp_path / "figures.png"
    target.write_bytes(b"not a folder")
    before = every_file(tmp_path)
    err = one_line_error(capsys, ["report", "--results", str(results), "--out", str(target)])
    assert "is a file, not a folder" in err, err
    assert every_file(tmp_path) == before and target.read_bytes() == b"not a folder"


@FAST
@given(depth=st.integers(1, 4), name=st.text("abcxyz_-.0123", min_size=1, max_size=8).filter(lambda s: s.strip(".")))
def test_out_anywhere_under_a_file_is_one_line_and_makes_nothing(tmp_path_factory, depth, name):
    root = tmp_path_factory.mktemp("under")
    results = results_in(root / "results")
    (root / "plain").write_text("x")
    before = every_file(root)
    out = root.joinpath("plain", *[name] * depth)
    with contextlib.redirect_stderr(io.StringIO()) as err:   # capsys is per test, not per example
        code = main(["report", "--results", str(results), "--out", str(out)])
    assert code == 2 and every_file(root) == before
    assert err.getvalue() == f"error: --out {out} lies under {root / 'plain'}, which is not a folder; give a folder\n"


@pytest.mark.parametrize("out", ["/proc/unmask-bench-report/reports", "/proc/self/unmask-bench-report"])
def test_out_where_no_one_can_write_is_one_line_before_any_work(tmp_path, capsys, out):
    results = results_in(tmp_path / "results")
    before = every_file(tmp_path)
    err = one_line_error(capsys, ["report", "--results", str(results), "--out", out])
    assert f"--out {out}: cannot write in /proc" in err, err
    assert every_file(tmp_path) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only-by-mode folder")
def test_out_in_a_read_only_folder_is_one_line(tmp_path, capsys):
    results = results_in(tmp_path / "results")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        err = one_line_error(capsys, ["report", "--results", str(results), "--out", str(locked / "reports")])
        assert "cannot write in" in err and not list(locked.iterdir())
    finally:
        locked.chmod(0o755)


def test_results_without_out_write_beside_them_and_leave_reports_alone(tmp_path, monkeypatch, capsys):
    """Run where a reports/ folder sits (as in the checkout): other results never write into it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "pareto_sudoku.png").write_bytes(b"the shipped figure")
    results = results_in(tmp_path / "run20")
    assert main(["report", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert every_file(tmp_path / "reports") == [tmp_path / "reports" / "pareto_sudoku.png"]
    assert (tmp_path / "reports" / "pareto_sudoku.png").read_bytes() == b"the shipped figure"
    assert (results / "reports" / "pareto_sudoku.png").is_file() and (results / "reports" / "table_sudoku.md").is_file()
    assert out.splitlines()[-1] == f"report written to {results / 'reports'}", out   # it says where


def test_the_committed_results_pair_with_the_committed_reports(monkeypatch):
    from bench.report.build import report_folder
    monkeypatch.chdir(ROOT)
    assert report_folder("results") == report_folder(ROOT / "results") == ROOT / "reports"   # `bench report`
    assert report_folder("results", "/tmp/r") == Path("/tmp/r")
    assert report_folder("/tmp/m/results") == Path("/tmp/m/results/reports")
    for inside in ("results/sudoku", "baselines/ci"):   # its reports/ would join committed files
        with pytest.raises(BenchError, match=f"--results {inside} lies in a committed folder; give --out"):
            report_folder(inside)


def test_the_committed_reports_are_written_from_the_committed_results_only(tmp_path, monkeypatch, capsys):
    shipped_results, shipped_reports = tmp_path / "results", tmp_path / "reports"   # a stand-in checkout
    monkeypatch.setattr(bench.report.build, "SHIPPED_RESULTS", shipped_results)
    monkeypatch.setattr(bench.report.build, "SHIPPED_REPORTS", shipped_reports)
    results_in(shipped_results)
    shipped_reports.mkdir()
    other = results_in(tmp_path / "other")
    err = one_line_error(capsys, ["report", "--results", str(other), "--out", str(shipped_reports), "--docs", ""])
    assert "the committed reports/" in err and not list(shipped_reports.iterdir())
    assert main(["report", "--results", str(shipped_results), "--docs", ""]) == 0   # the default pair
    assert (shipped_reports / "pareto_sudoku.png").is_file()


# --- summaries that cannot be shown are skipped, one line each, and counted (issue 52) ----------

def drop(key):
    return lambda summary, folder: summary.pop(key)


def delete_records(summary, folder):
    summary["records_file"] = "deleted.jsonl"   # named, but not there


def nan_value(summary, folder):
    summary["metrics"][0]["value"] = float("nan")


@pytest.mark.parametrize("damage,why", [(drop("provenance"), "has no provenance"), (drop("model"), "has no model"),
                                        (delete_records, "'deleted.jsonl', which is missing"),
                                        (nan_value, "with value nan, not a finite number")])
def test_an_incomplete_summary_is_skipped_in_one_line_and_counted(tmp_path, capsys, damage, why, no_figures):
    results = results_in(tmp_path / "results")
    summary = json.loads(json.dumps(RUNS[1]))
    summary["label"] = summary["config"]["strategy_spec"] = "eb:gamma=0.5,order=entropy"
    damage(summary, results)
    (results / "damaged.json").write_text(json.dumps(summary))
    assert main(["report", "--results", str(results), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    named = [line for line in err if "damaged.json" in line]
    assert len(named) == 1 and why in named[0], err
    assert err[-1].startswith("skipped 1 result file(s)"), err
    table = (tmp_path / "out" / "table_sudoku.md").read_text()
    assert "gamma=0.5" not in table and "nan" not in table.lower()


def test_a_nan_metric_is_refused_at_write_time_naming_it(tmp_path, monkeypatch):
    """A task whose summary holds a NaN: one line naming the metric, no summary or records written."""
    from bench.registry import parse_strategy
    from bench.run.cell import Run
    from bench.run.local import run_one
    from tasks.sudoku.task import SudokuTask
    task = SudokuTask()
    summarize = task.summarize
    monkeypatch.setattr(task, "summarize", lambda records: [{**m, "ci_low": float("nan")} for m in summarize(records)])
    run = Run(task, task.load_model(), task.eval_set(2, 0), parse_strategy("topk:k=9"), "topk:k=9", 0, 2, out=tmp_path)
    with pytest.raises(BenchError, match=r"sudoku topk:k=9: its summary has metric '\w+' with ci_low nan"):
        run_one(run)
    assert not [p for p in tmp_path.rglob("*") if p.suffix in (".json", ".jsonl") and "partial" not in p.name]
