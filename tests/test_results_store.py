"""bench.results (issue 49): one scanner of result folders, a run's identity without how it was
executed, and the migration of files made before that split."""
import json
import shutil
from pathlib import Path

from bench.results import Store, read_records, run_id
from bench.results.identity import result_paths, what_of
from bench.results.migrate import legacy_run_id
from conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent


def run_sudoku(out, *extra):
    proc = run_cli("run", "--tasks", "sudoku", "--strategies", "sequential", "--limit", 4, "--out", out, *extra)
    assert proc.returncode == 0, proc.stderr
    return proc


def summary_files(folder):
    return sorted(p.name for p in Path(folder).rglob("*.json"))


def as_legacy(summary_path, batch_size):
    """Rewrite a run's files as `bench run` wrote them before 2026-12-06: batch size in the config
    (and in the name's hash), records without a header. Returns the new summary path."""
    summary = json.loads(summary_path.read_text())
    config = {**summary["config"], "batch_size": batch_size}
    records_path = summary_path.with_suffix(".jsonl")
    text = "".join(json.dumps(r) + "\n" for r in read_records(records_path))
    stem = summary_path.name.rsplit("-", 1)[0] + f"-{legacy_run_id(config)[:10]}"
    new_summary, new_records = summary_path.with_name(stem + ".json"), summary_path.with_name(stem + ".jsonl")
    summary.pop("execution", None)
    summary.update(config=config, records_file=new_records.name,
                   records_sha256=__import__("hashlib").sha256(text.encode()).hexdigest())
    summary_path.unlink()
    records_path.unlink()
    new_records.write_text(text)
    new_summary.write_text(json.dumps(summary, indent=1))
    return new_summary


def test_the_identity_leaves_out_how_a_run_was_executed(tmp_path):
    run_sudoku(tmp_path / "a", "--batch-size", 2)
    run_sudoku(tmp_path / "b", "--batch-size", 3)
    (a,), (b,) = (Store(tmp_path / x).runs() for x in "ab")
    assert a["config"] == b["config"] and "batch_size" not in a["config"]
    assert (a["execution"]["batch_size"], b["execution"]["batch_size"]) == (2, 3)
    assert summary_files(tmp_path / "a") == summary_files(tmp_path / "b")


def test_a_run_made_again_at_another_batch_size_is_verified_not_decoded(tmp_path):
    run_sudoku(tmp_path, "--batch-size", 4)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    proc = run_sudoku(tmp_path, "--batch-size", 3)
    assert "complete already" in proc.stderr and "decoded again reproduce it" in proc.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_a_run_of_before_the_split_is_found_by_its_identity_and_migrated(tmp_path):
    run_sudoku(tmp_path / "run", "--batch-size", 4)
    (path, summary), = Store(tmp_path / "run").runs(with_paths=True)
    legacy = as_legacy(path, 250)
    assert Store(tmp_path / "run").locate(what_of(summary["config"])) == legacy
    proc = run_sudoku(tmp_path / "run")   # headerless records: not complete, decoded again in place
    assert "has no header naming its run" in proc.stderr
    legacy = as_legacy(legacy, 250)
    proc = run_cli("migrate", tmp_path / "run")
    assert proc.returncode == 0 and "1 of 1 runs migrated" in proc.stdout, proc.stderr
    migrated = json.loads(legacy.read_text())
    assert migrated["execution"] == {"batch_size": 250} and "batch_size" not in migrated["config"]
    header = json.loads(legacy.with_suffix(".jsonl").read_text().splitlines()[0])
    assert header["run"] == run_id(migrated["config"])
    assert "0 of 1 runs migrated, 1 current" in run_cli("migrate", tmp_path / "run").stdout
    proc = run_sudoku(tmp_path / "run", "--batch-size", 7)
    assert "complete already" in proc.stderr and summary_files(tmp_path / "run") == [legacy.name]


def test_migrate_leaves_a_damaged_run_as_it_is(tmp_path):
    run_sudoku(tmp_path, "--batch-size", 4)
    (path, _), = Store(tmp_path).runs(with_paths=True)
    legacy = as_legacy(path, 4)
    records = legacy.with_suffix(".jsonl")
    records.write_text(records.read_text()[:-20])
    before = {p: p.read_bytes() for p in tmp_path.rglob("*.json*")}
    proc = run_cli("migrate", tmp_path)
    assert proc.returncode == 2 and "does not match the checksum" in proc.stderr and "1 not migrated" in proc.stdout
    assert {p: p.read_bytes() for p in tmp_path.rglob("*.json*")} == before


def test_a_report_lists_a_run_held_in_two_files_once(tmp_path, no_figures):
    """One run in two files (made at two batch sizes, the older named with its batch size): the
    report keeps the newer, names the other, and its claims pool no seeds that are not there."""
    run_sudoku(tmp_path / "results", "--batch-size", 4)
    (path, _), = Store(tmp_path / "results").runs(with_paths=True)
    twin = tmp_path / "twin"
    run_sudoku(twin, "--batch-size", 2)
    (twin_path, _), = Store(twin).runs(with_paths=True)
    for file in (twin_path, twin_path.with_suffix(".jsonl")):
        shutil.copy(file, path.parent / file.name.replace(".json", "-again.json"))
    again = path.parent / twin_path.name.replace(".json", "-again.json")
    summary = json.loads(again.read_text())
    summary["records_file"] = again.with_suffix(".jsonl").name
    again.write_text(json.dumps(summary))
    assert len(Store(tmp_path / "results").scan()[0]) == 2
    proc = run_cli("report", "--results", tmp_path / "results", "--out", tmp_path / "reports")
    assert proc.returncode == 0, proc.stderr
    assert "is another file of the run in" in proc.stderr
    table = (tmp_path / "reports" / "table_sudoku.md").read_text()
    assert table.count("| sequential |") == 1
    claims = tmp_path / "reports" / "claims_sudoku.md"
    assert not claims.exists() or "pool 2 seeds" not in claims.read_text()


def test_the_committed_runs_keep_their_names_and_are_found_by_identity():
    """The committed folders were migrated in place (their names hash the batch size they were
    made at): each run is found by the identity its summary holds."""
    store = Store(ROOT / "results")
    runs = Store(ROOT / "results" / "sudoku").runs(with_paths=True, quiet=True)
    assert runs and all(store.locate(summary["config"]) == path for path, summary in runs)
    assert all("batch_size" not in summary["config"] for _, summary in runs)


def test_new_files_are_named_by_the_identity(tmp_path):
    run_sudoku(tmp_path)
    (path, summary), = Store(tmp_path).runs(with_paths=True)
    assert path == result_paths(tmp_path, summary["config"])[0]


def test_report_refuses_a_named_folder_that_is_not_there(tmp_path):
    proc = run_cli("report", "--results", ROOT / "results", "--out", tmp_path, "--validation", tmp_path / "nope")
    assert proc.returncode == 2 and "--validation" in proc.stderr and "no such folder" in proc.stderr
    assert not any(tmp_path.iterdir())
