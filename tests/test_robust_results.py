"""Issue 18, result files: records checked against their summary (count, checksum), unreadable
summaries named by `bench report`, atomic writes and run cells safe under concurrency, and runs
found complete decoded again in part (--verify) to check they still reproduce."""
import json
import shutil
import subprocess
import sys
import threading

import pytest

from bench.errors import BenchError
from bench.registry import parse_strategy
from bench.results import Store, check_records, read_records, records_file_text, write_text_atomic
from bench.run.cell import Run, cell_lock, decode_run
from bench.run.local import run_one
from bench.run.verify import draws_randomly, verify_rows
from conftest import ROOT, run_cli
from tasks.protein.task import ProteinTask
from tasks.sudoku.task import SudokuTask

LIMIT, BATCH = 6, 3


@pytest.fixture(scope="module")
def sudoku():
    task = SudokuTask()
    return task, task.load_model(), task.eval_set(LIMIT, 0)


def run(sudoku, out, spec="topk:k=5", verify=0):
    task, model, eval_set = sudoku
    return run_one(Run(task, model, eval_set, parse_strategy(spec), spec, 0, LIMIT, batch_size=BATCH, out=out,
                       verify=verify))


def paths_of(sudoku, out, spec="topk:k=5"):
    task, model, eval_set = sudoku
    strategy = parse_strategy(spec)
    strategy.bind(task, model)
    return Run(task, model, eval_set, strategy, spec, 0, LIMIT, batch_size=BATCH, out=out).paths


def test_the_summary_records_the_count_and_checksum_of_its_records(sudoku, tmp_path):
    summary = run(sudoku, tmp_path)
    summary_path, records_path, _ = paths_of(sudoku, tmp_path)
    stored = json.loads(summary_path.read_text())
    assert stored == summary and stored["n_samples"] == LIMIT
    assert check_records(stored, records_path)[1] is None
    assert len(check_records(stored, records_path)[0]) == LIMIT


@pytest.mark.parametrize("damage,reason", [
    (lambda text: "".join(text.splitlines(keepends=True)[:3]) + text[:20],  # 3 records and a cut line
     "does not match the checksum"),
    (lambda text: text.replace('"passes": ', '"passes": 1', 1), "does not match the checksum"),
    (lambda text: "", "does not match the checksum"),
])
def test_damaged_records_make_the_run_incomplete_and_redone(sudoku, tmp_path, capsys, damage, reason):
    run(sudoku, tmp_path)
    summary_path, records_path, _ = paths_of(sudoku, tmp_path)
    intact = records_path.read_text()
    records_path.write_text(damage(intact))
    capsys.readouterr()
    run(sudoku, tmp_path)
    err = capsys.readouterr().err
    assert f"{summary_path} is incomplete (its records file {reason}" in err and "running it again" in err
    assert check_records(json.loads(summary_path.read_text()), records_path)[1] is None


def test_a_summary_without_the_checksum_is_not_complete(sudoku, tmp_path, capsys):
    """Issue 27: a summary without records_sha256 leaves its records unprotected (a 1-byte edit
    would pass), so it is not complete: the run is named and redone, and gets its checksum."""
    run(sudoku, tmp_path)
    summary_path, records_path, _ = paths_of(sudoku, tmp_path)
    old = json.loads(summary_path.read_text())
    del old["records_sha256"]
    summary_path.write_text(json.dumps(old))
    capsys.readouterr()
    run(sudoku, tmp_path)
    assert "no records_sha256" in capsys.readouterr().err
    assert "records_sha256" in json.loads(summary_path.read_text())


def test_report_names_every_file_it_cannot_read(sudoku, tmp_path, no_figures):
    results = tmp_path / "results"
    run(sudoku, results)
    bad = {"list.json": "[1, 2]", "cut.json": '{"schema_version": 1, "task": "su', "latin.json": b"\xe4",
           "old.json": json.dumps({"schema_version": 0, "task": "sudoku", "label": "x", "config": {}, "metrics": []})}
    for name, content in bad.items():
        (results / "sudoku" / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    (results / "mi.json").write_text('{"schema_version": "mi-1", "task": "sudoku", "maps": []}')  # not a summary
    found, problems = Store(results).scan()
    assert len(found) == 1 and sorted(p.split()[0].rsplit("/", 1)[1] for p in problems) == sorted(bad)
    proc = run_cli("report", "--results", results, "--out", tmp_path / "reports")
    assert proc.returncode == 0, proc.stderr
    named = [line for line in proc.stderr.splitlines() if line.startswith("skipped result file: ")]
    assert sorted(line.split()[3].rsplit("/", 1)[1] for line in named) == sorted(bad)
    assert "holds a JSON list" in proc.stderr and "schema version 0" in proc.stderr


def test_concurrent_atomic_writes_of_one_path_never_collide(tmp_path):
    """Before: every writer used PATH.tmp, so one writer's rename took another's file away."""
    path, errors = tmp_path / "summary.json", []

    def write(i):
        try:
            for j in range(40):
                write_text_atomic(path, json.dumps({"writer": i, "n": j}) * 200)
        except OSError as err:
            errors.append(err)
    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and json.loads(path.read_text()[: path.read_text().index("}") + 1])["n"] == 39
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_a_second_run_of_a_cell_waits_for_the_first_then_finds_it_complete(sudoku, tmp_path, capsys):
    task, model, eval_set = sudoku
    paths = paths_of(sudoku, tmp_path)
    strategy = parse_strategy("topk:k=5")
    strategy.bind(task, model)
    first_run = Run(task, model, eval_set, strategy, "first", 0, LIMIT, batch_size=BATCH, out=tmp_path)
    assert first_run.paths == paths
    second = {}
    with cell_lock(first_run):
        waiter = threading.Thread(target=lambda: second.update(summary=run(sudoku, tmp_path)))
        waiter.start()
        waiter.join(timeout=3)
        assert waiter.is_alive(), "the second run must wait while the first holds the cell"
        first = decode_run(first_run)
        made = paths[1].stat().st_mtime_ns
    waiter.join(timeout=120)
    err = capsys.readouterr().err
    assert "another process is running it; waiting" in err and "complete already" in err
    assert second["summary"] == first and paths[1].stat().st_mtime_ns == made
    assert not paths[0].with_suffix(".lock").exists()


def test_identical_runs_started_together_decode_each_cell_once(tmp_path):
    args = [sys.executable, "-m", "bench", "run", "--strategies", "sequential", "--limit", 8,
            "--batch-size", 2, "--out", tmp_path]
    procs = [subprocess.Popen(list(map(str, args)), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outputs = [proc.communicate(timeout=600) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], [err for _, err in outputs]
    assert sorted(err.count("complete already") for _, err in outputs) == [0, 1]
    assert sorted(p.suffix for p in (tmp_path / "sudoku").iterdir()) == [".json", ".jsonl"]


def test_verify_spreads_its_inputs_over_the_data():
    assert verify_rows(1000, 4) == [0, 333, 666, 999]
    assert verify_rows(3, 4) == [0, 1, 2] and verify_rows(5, 1) == [0]


def test_a_complete_run_is_decoded_again_and_must_reproduce(sudoku, tmp_path, capsys):
    run(sudoku, tmp_path)
    capsys.readouterr()
    run(sudoku, tmp_path, verify=4)
    assert "4 inputs decoded again reproduce it" in capsys.readouterr().err
    summary_path, records_path, _ = paths_of(sudoku, tmp_path)
    records = read_records(records_path)
    records[-1]["passes"] += 1  # as if the stored results came from other code or weights
    text = records_file_text(json.loads(summary_path.read_text())["config"], records)
    records_path.write_text(text)
    summary = json.loads(summary_path.read_text())
    summary["records_sha256"] = __import__("hashlib").sha256(text.encode()).hexdigest()
    summary_path.write_text(json.dumps(summary))
    with pytest.raises(BenchError) as caught:
        run(sudoku, tmp_path, verify=4)
    message = str(caught.value)
    assert message.startswith("topk:k=5: the stored result does not reproduce (input 5: passes")
    assert (f"remake it with: rm {summary_path} {records_path} && python -m bench run --tasks sudoku --seed 0 "
            f"--limit {LIMIT} --batch-size {BATCH} --out {tmp_path} --strategies topk:k=5,order=confidence") in message
    assert "\n" not in message
    run(sudoku, tmp_path, verify=0)
    assert "not verified (--verify 0)" in capsys.readouterr().err


def test_sampled_runs_are_verified_too(sudoku, tmp_path, capsys):
    """Every input draws from its own stream, so a sampling run's inputs decoded alone reproduce
    their records, and a changed draw is caught."""
    task = sudoku[0]
    assert draws_randomly(ProteinTask(), parse_strategy("topk:k=4"))
    assert draws_randomly(task, parse_strategy("learned:T=5,mode=sample"))
    assert not draws_randomly(task, parse_strategy("learned:T=5,mode=threshold"))
    assert not draws_randomly(task, parse_strategy("mi:gamma=0.3"))
    run(sudoku, tmp_path, "learned:T=5,mode=sample")
    capsys.readouterr()
    run(sudoku, tmp_path, "learned:T=5,mode=sample", verify=4)
    assert "4 inputs decoded again reproduce it (their random draws included)" in capsys.readouterr().err
    summary_path, records_path, _ = paths_of(sudoku, tmp_path, "learned:T=5,mode=sample")
    records = read_records(records_path)
    records[0]["passes"] += 1   # as if its draws had been different
    text = records_file_text(json.loads(summary_path.read_text())["config"], records)
    records_path.write_text(text)
    summary = json.loads(summary_path.read_text())
    summary["records_sha256"] = __import__("hashlib").sha256(text.encode()).hexdigest()
    summary_path.write_text(json.dumps(summary))
    with pytest.raises(BenchError, match="does not reproduce .input 0: passes"):
        run(sudoku, tmp_path, "learned:T=5,mode=sample", verify=4)


def test_the_main_command_verifies_committed_runs(tmp_path):
    """What `bench run --tasks sudoku,protein` does with the committed results, on one run: the
    committed files (copied, so nothing is written into results/) are decoded again in part."""
    task, strategy = SudokuTask(), parse_strategy("topk:k=5")
    model, eval_set = task.load_model(), task.eval_set(None, 0)
    config = Run(task, model, eval_set, strategy, "", 0, None, batch_size=250).config  # the default preset's run
    summary_path = Store(ROOT / "results").locate(config)
    committed = [summary_path, summary_path.with_suffix(".jsonl")]
    (tmp_path / "sudoku").mkdir()
    for path in committed:
        shutil.copy(path, tmp_path / "sudoku" / path.name)
    proc = run_cli("run", "--tasks", "sudoku", "--strategies", "topk:k=5", "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "complete already" in proc.stderr and "4 inputs decoded again reproduce it" in proc.stderr
    assert sorted(p.name for p in (tmp_path / "sudoku").iterdir()) == sorted(p.name for p in committed)
