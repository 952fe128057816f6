import json
import shutil
import signal
import subprocess
import sys
import time

import pytest

from bench.results import load, read_records
from conftest import ROOT, run_cli
from tasks.sudoku.checkpoint import DEFAULT_WEIGHTS
from tasks.sudoku.data import TEST_SET, read_puzzles


@pytest.fixture(scope="module")
def model_copy(tmp_path_factory):
    """A private copy of the shipped weights, so tests never race a retraining."""
    path = tmp_path_factory.mktemp("model") / "sudoku.pt"
    shutil.copy(DEFAULT_WEIGHTS, path)
    return path


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory, model_copy):
    out = tmp_path_factory.mktemp("results")
    proc = run_cli("run", "--tasks", "sudoku", "--strategies", "sequential,topk:k=5", "--limit", 6,
                   "--batch-size", 4, "--out", out, "--model", model_copy)
    assert proc.returncode == 0, proc.stderr
    return out, proc


def records_of(folder, prefix):
    path = next((folder / "sudoku").glob(f"{prefix}*.jsonl"))
    return read_records(path)


def test_run_writes_summaries_with_provenance_and_records(quick_run):
    out, proc = quick_run
    summaries = sorted((out / "sudoku").glob("*[0-9a-f].json"))
    assert len(summaries) == 2
    summary = json.loads(summaries[0].read_text())
    assert summary["config"]["seed"] == 0 and summary["config"]["limit"] == 6
    assert {"commit", "dirty", "versions", "machine"} <= set(summary["provenance"])
    assert summary["provenance"]["versions"]["torch"].startswith("2.13.0")
    names = {m["name"] for m in summary["metrics"]}
    base = {"exact_accuracy", "cell_accuracy", "passes"}
    assert names >= base and names - base <= {"exact_accuracy_easy", "exact_accuracy_medium", "exact_accuracy_hard",
                                              "arness"}   # the reveal order's ARness (bench.arness), new runs only
    assert len(names - base) >= 1
    for m in summary["metrics"]:
        assert m["ci_low"] <= m["value"] <= m["ci_high"]
    assert "mean passes" in proc.stdout and "topk:k=5" in proc.stdout


def test_pass_counts_are_exact(quick_run):
    out, _ = quick_run
    puzzles = read_puzzles(TEST_SET).puzzles
    for record in records_of(out, "sequential"):
        assert record["passes"] == record["blanks"] == (puzzles[record["index"]] == 0).sum()
    for record in records_of(out, "topk"):
        assert record["passes"] == -(-record["blanks"] // 5)


def test_rerun_skips_finished_runs(quick_run, model_copy):
    out, _ = quick_run
    before = {p: p.stat().st_mtime_ns for p in (out / "sudoku").iterdir()}
    proc = run_cli("run", "--strategies", "sequential,topk:k=5", "--limit", 6, "--batch-size", 4,
                   "--out", out, "--model", model_copy)
    assert proc.returncode == 0 and proc.stderr.count("complete already") == 2
    assert before == {p: p.stat().st_mtime_ns for p in (out / "sudoku").iterdir()}


def test_killed_run_resumes_to_the_same_records(tmp_path, quick_run, model_copy):
    out, _ = quick_run
    args = [sys.executable, "-m", "bench", "run", "--strategies", "sequential", "--limit", 6,
            "--batch-size", 1, "--out", tmp_path, "--model", model_copy]
    proc = subprocess.Popen(list(map(str, args)), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        partial = list(tmp_path.glob("sudoku/*.partial.jsonl"))
        if partial and len(partial[0].read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not list(tmp_path.glob("sudoku/*[0-9a-f].json")), "no summary may exist for an unfinished run"
    done_before = len(list(tmp_path.glob("sudoku/*.partial.jsonl"))[0].read_text().splitlines())
    assert done_before >= 2
    rerun = run_cli(*args[3:])
    assert rerun.returncode == 0, rerun.stderr
    def without_batch_fields(records):
        return [{k: v for k, v in r.items() if k not in ("batch", "batch_seconds")} for r in records]

    assert (without_batch_fields(records_of(tmp_path, "sequential"))
            == without_batch_fields(records_of(out, "sequential")))
    assert not list(tmp_path.glob("sudoku/*.partial.jsonl"))


def test_results_load_into_a_dataframe(quick_run):
    out, _ = quick_run
    frame = load(out)
    assert set(frame["spec"]) == {"sequential:order=confidence", "topk:k=5,order=confidence"}
    assert len(frame) == 2 * frame["metric"].nunique() == 14   # 3 metrics + 3 difficulty thirds + ARness, per run
    assert frame.query("metric == 'passes'")["value"].min() > 0


def test_report_draws_png_pdf_and_table(quick_run, tmp_path):
    out, _ = quick_run
    proc = run_cli("report", "--results", out, "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name in ("pareto_sudoku.png", "pareto_sudoku.pdf", "table_sudoku.md"):
        assert (tmp_path / name).stat().st_size > 200
    assert (tmp_path / "pareto_sudoku.png").read_bytes()[:4] == b"\x89PNG"
    assert "topk:k=5" in (tmp_path / "table_sudoku.md").read_text()


@pytest.mark.parametrize("content,message", [(None, "not found"), (b"garbage", "corrupt")])
def test_missing_or_corrupt_checkpoint_is_one_line(tmp_path, content, message):
    path = tmp_path / "model.pt"
    if content is not None:
        path.write_bytes(content)
    proc = run_cli("run", "--limit", 2, "--out", tmp_path, "--model", path)
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_malformed_puzzle_rows_are_reported_and_the_rest_runs(tmp_path, model_copy):
    good = TEST_SET.read_text().splitlines()[1].split(",")[0]
    data = tmp_path / "mine.csv"
    data.write_text(f"{good}\n{good[:-1]}\n{good.replace('0', '.')}\n")
    proc = run_cli("run", "--strategies", "topk:k=9", "--data", data, "--out", tmp_path, "--model", model_copy)
    assert proc.returncode == 0, proc.stderr
    assert "mine.csv:2: has 80 characters" in proc.stderr
    assert len(records_of(tmp_path, "topk")) == 2


@pytest.mark.parametrize("args,message", [
    (["run", "--tasks", "sudok"], "did you mean 'sudoku'"),
    (["run", "--strategies", "topk:q=1"], "unknown parameter 'q'"),
    (["train", "sudoku", "stepz=3"], "unknown setting 'stepz' for sudoku training"),
])
def test_cli_errors_are_one_line(args, message):
    proc = run_cli(*args)
    assert proc.returncode == 2 and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_list_shows_tasks_strategies_and_defaults():
    proc = run_cli("list")
    assert proc.returncode == 0
    assert "sudoku" in proc.stdout and "topk" in proc.stdout and "k: int = 2" in proc.stdout


def test_later_seeds_run_only_what_draws_random_numbers(tmp_path, model_copy):
    proc = run_cli("run", "--preset", "paper", "--tasks", "sudoku", "--strategies", "sequential,learned:T=5",
                   "--limit", 2, "--out", tmp_path, "--model", model_copy)
    assert proc.returncode == 0, proc.stderr
    made = sorted(json.loads(p.read_text())["label"] + f" {json.loads(p.read_text())['config']['seed']}"
                  for p in (tmp_path / "sudoku").glob("*.json"))
    assert made == ["learned:T=5 0", "learned:T=5 1", "learned:T=5 2", "sequential 0"]


def test_parameters_that_differ_by_a_decimal_get_their_own_files(tmp_path, model_copy):
    proc = run_cli("run", "--strategies", "eb:gamma=0.1,eb:gamma=0.3,threshold:tau=0.9,threshold:tau=0.95",
                   "--limit", 2, "--out", tmp_path, "--model", model_copy)
    assert proc.returncode == 0, proc.stderr
    summaries = sorted((tmp_path / "sudoku").glob("*.json"))
    assert len(summaries) == 4
    assert sorted(json.loads(p.read_text())["label"] for p in summaries) == [
        "eb:gamma=0.1", "eb:gamma=0.3", "threshold:tau=0.9", "threshold:tau=0.95"]


def test_rescore_recomputes_metrics_from_records_and_keeps_identity(quick_run, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(quick_run[0], copy)
    path = sorted((copy / "sudoku").glob("sequential*[0-9a-f].json"))[0]
    original = json.loads(path.read_text())
    tampered = dict(original, metrics=[dict(m, value=-1.0) for m in original["metrics"]])
    path.write_text(json.dumps(tampered))
    proc = run_cli("rescore", "--results", copy, "--task", "sudoku")
    assert proc.returncode == 0, proc.stderr
    rescored = json.loads(path.read_text())
    assert rescored["metrics"] == original["metrics"] and rescored["config"] == original["config"]
    assert rescored["rescored"]["commit"] and rescored["wall_seconds"] == original["wall_seconds"]
    assert "unknown task" in run_cli("rescore", "--results", copy, "--task", "chess").stderr


def test_rescore_headline_only_points_at_the_tasks_headline_and_recomputes_nothing(quick_run, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(quick_run[0], copy)
    first, second = sorted((copy / "sudoku").glob("*[0-9a-f].json"))[:2]
    stale = dict(json.loads(first.read_text()), headline="cell_accuracy")
    stale["metrics"][0] = dict(stale["metrics"][0], value=-1.0)          # would be undone by a full rescore
    first.write_text(json.dumps(stale))
    lacking = json.loads(second.read_text())
    lacking = dict(lacking, headline="cell_accuracy", metrics=[m for m in lacking["metrics"]
                                                              if m["name"] != "exact_accuracy"])
    second.write_text(json.dumps(lacking))
    proc = run_cli("rescore", "--results", copy, "--task", "sudoku", "--headline-only")
    assert proc.returncode == 0, proc.stderr
    pointed = json.loads(first.read_text())
    assert pointed["headline"] == "exact_accuracy" and pointed["metrics"][0]["value"] == -1.0
    assert json.loads(second.read_text())["headline"] == "cell_accuracy"
    assert "has no exact_accuracy metric; rescore it in full" in proc.stderr
