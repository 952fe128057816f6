"""Issue 27, reproduction that means what it says, and one results store: a run found complete
is decoded again in part and must give its discrete fields exactly and its floats within the
stated tolerance (another CPU's BLAS sums float32 in another order); partial batches carry their
run's identity and checksum, so a foreign or edited batch is discarded and redone; a summary
without its records' checksum is not complete; readers other than `bench run` refuse altered
records in one line."""
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import bench.run.cell as run_module
from bench.errors import BenchError
from bench.provenance import numerics, provenance
from bench.registry import parse_strategy
from bench.results import (
    batch_line,
    read_batches,
    read_records,
    records_file_text,
    run_id,
    run_records,
    write_text_atomic,
)
from bench.results.identity import result_paths
from bench.run.cell import Run
from bench.run.local import run_one
from bench.run.verify import FLOAT_ATOL, FLOAT_RTOL, record_difference
from conftest import run_cli
from tasks.hmm.task import HMMTask
from tasks.sudoku.task import SudokuTask

LIMIT, BATCH = 4, 2


# --- the record comparison ------------------------------------------------------------------------

def differs(stored, new):
    worst = [0.0, None]
    return record_difference(stored, new, worst), worst


@given(st.floats(-1e4, 1e4, allow_nan=False), st.floats(-0.9, 0.9))
def test_a_float_within_the_tolerance_reproduces(value, share):
    moved = value + share * (FLOAT_ATOL + FLOAT_RTOL * abs(value))
    difference, worst = differs({"index": 0, "log_q": value}, {"index": 0, "log_q": moved})
    assert difference == ""
    assert worst[0] == pytest.approx(abs(moved - value))


@given(st.floats(-1e4, 1e4, allow_nan=False), st.floats(1.5, 1e3))
def test_a_float_beyond_the_tolerance_does_not(value, times):
    moved = value + times * (FLOAT_ATOL + FLOAT_RTOL * abs(value))
    difference, _ = differs({"index": 0, "log_q": value}, {"index": 0, "log_q": moved})
    assert "beyond the float tolerance" in difference and "log_q" in difference


@pytest.mark.parametrize("stored,new", [
    ({"passes": 12}, {"passes": 13}),                      # a count
    ({"exact": True}, {"exact": False}),                   # a verdict
    ({"exact": True}, {"exact": 1}),                       # a bool is not a number here
    ({"output": "1234"}, {"output": "1243"}),              # a decoded output
    ({"picks": [1, 2, 3]}, {"picks": [1, 2, 4]}),          # a list of picks
    ({"picks": [1, 2, 3]}, {"picks": [1, 2]}),
    ({"passes": 12}, {"passes": 12, "extra": 1}),          # a field that appears
    ({"passes": 12, "extra": 1}, {"passes": 12}),          # or goes
])
def test_discrete_fields_must_be_equal(stored, new):
    assert differs({"index": 0, **stored}, {"index": 0, **new})[0]


def test_volatile_fields_are_ignored():
    assert differs({"index": 0, "batch": 0, "batch_seconds": 1.0},
                   {"index": 0, "batch": 3, "batch_seconds": 9.0})[0] == ""


def test_results_record_the_numerics_they_were_made_with():
    facts = provenance()["numerics"]
    assert facts == numerics()
    assert {"cpu", "cpu_flags", "kernels", "blas", "torch_threads"} <= set(facts)


# --- verification of complete runs ----------------------------------------------------------------

@pytest.fixture(scope="module")
def hmm():
    task = HMMTask()
    return task, task.load_model(), task.eval_set(LIMIT, 0)


def hmm_run(hmm, out, spec="topk:k=8", verify=0):
    task, model, eval_set = hmm
    return run_one(Run(task, model, eval_set, parse_strategy(spec), spec, 0, LIMIT, batch_size=BATCH, out=out,
                       verify=verify))


def hmm_paths(hmm, out, spec="topk:k=8"):
    task, model, eval_set = hmm
    strategy = parse_strategy(spec)
    strategy.bind(task, model)
    return Run(task, model, eval_set, strategy, spec, 0, LIMIT, batch_size=BATCH, out=out).paths


def restamp(summary_path, records_path, edit, platform=None):
    """Edit a complete run's records (``edit`` of each record) and re-stamp its checksum, as a run
    made on another machine would look; ``platform`` replaces the numerics it records."""
    records = [edit(r) for r in read_records(records_path)]
    text = records_file_text(json.loads(summary_path.read_text())["config"], records)
    write_text_atomic(records_path, text)
    summary = json.loads(summary_path.read_text())
    summary["records_sha256"] = __import__("hashlib").sha256(text.encode()).hexdigest()
    if platform is not None:
        summary["provenance"]["numerics"] = platform
    write_text_atomic(summary_path, json.dumps(summary, indent=1))


def shifted(field, by):
    def edit(record):
        record[field] = record[field] + by
        return record
    return edit


def test_floats_off_in_their_last_digits_verify_and_say_where_they_were_made(hmm, tmp_path, capsys):
    hmm_run(hmm, tmp_path)
    summary_path, records_path, _ = hmm_paths(hmm, tmp_path)
    elsewhere = {**numerics(), "cpu": "Another CPU", "kernels": "DEFAULT"}
    restamp(summary_path, records_path, shifted("log_q", 9e-6), platform=elsewhere)
    capsys.readouterr()
    hmm_run(hmm, tmp_path, verify=LIMIT)
    line = capsys.readouterr().err
    assert "reproduce it" in line and "largest float deviation 9e-06 (log_q)" in line
    assert "made on Another CPU" in line and "checked on" in line


def test_floats_off_beyond_the_tolerance_do_not_verify(hmm, tmp_path):
    hmm_run(hmm, tmp_path)
    summary_path, records_path, _ = hmm_paths(hmm, tmp_path)
    restamp(summary_path, records_path, shifted("log_q", 0.5))
    with pytest.raises(BenchError, match=r"does not reproduce .*log_q .*beyond the float tolerance"):
        hmm_run(hmm, tmp_path, verify=LIMIT)


def test_a_changed_pass_count_does_not_verify(hmm, tmp_path):
    hmm_run(hmm, tmp_path)
    summary_path, records_path, _ = hmm_paths(hmm, tmp_path)
    restamp(summary_path, records_path, shifted("passes", 1))
    with pytest.raises(BenchError, match=r"does not reproduce \(input 0: passes"):
        hmm_run(hmm, tmp_path, verify=LIMIT)


# --- partial batches --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sudoku():
    task = SudokuTask()
    return task, task.load_model(), task.eval_set(LIMIT, 0)


def sudoku_config(sudoku, spec):
    task, model, eval_set = sudoku
    strategy = parse_strategy(spec)
    strategy.bind(task, model)
    return Run(task, model, eval_set, strategy, spec, 0, LIMIT, batch_size=BATCH).config


def sudoku_run(sudoku, out, spec):
    task, model, eval_set = sudoku
    return run_one(Run(task, model, eval_set, parse_strategy(spec), spec, 0, LIMIT, batch_size=BATCH, out=out))


def records_of(path):
    return [{k: v for k, v in record.items() if k != "batch_seconds"} for record in read_records(path)]


@pytest.mark.parametrize("kind", ["foreign", "edited", "cut"])
def test_a_partial_batch_that_is_not_this_runs_is_discarded_and_redone(sudoku, tmp_path, capsys, kind):
    truth = sudoku_run(sudoku, tmp_path / "truth", "topk:k=3")
    donor = sudoku_run(sudoku, tmp_path / "donor", "sequential")
    donor_records = records_of(result_paths(tmp_path / "donor", sudoku_config(sudoku, "sequential"))[1])
    config = sudoku_config(sudoku, "topk:k=3")
    partial = result_paths(tmp_path / "run", config)[2]
    partial.parent.mkdir(parents=True)
    first = [r for r in donor_records if r["batch"] == 0]
    line = {"foreign": batch_line(run_id(sudoku_config(sudoku, "sequential")), first),
            "edited": batch_line(run_id(config), first).replace('"passes": ', '"passes": 1'),
            "cut": batch_line(run_id(config), first)[:50]}[kind]
    partial.write_text(line)
    capsys.readouterr()
    summary = sudoku_run(sudoku, tmp_path / "run", "topk:k=3")
    assert "discarded, its inputs are decoded again" in capsys.readouterr().err
    assert summary["metrics"] == truth["metrics"] != donor["metrics"]
    assert records_of(result_paths(tmp_path / "run", config)[1]) == \
        records_of(result_paths(tmp_path / "truth", config)[1])


def test_a_partial_batch_of_this_run_is_kept(sudoku, tmp_path):
    sudoku_run(sudoku, tmp_path / "truth", "topk:k=3")
    config = sudoku_config(sudoku, "topk:k=3")
    truth = records_of(result_paths(tmp_path / "truth", config)[1])
    partial = result_paths(tmp_path / "run", config)[2]
    partial.parent.mkdir(parents=True)
    partial.write_text(batch_line(run_id(config), [r for r in truth if r["batch"] == BATCH]))
    assert list(read_batches(partial, run_id(config), LIMIT)[0]) == [BATCH]


def test_a_run_resumed_at_another_batch_size_keeps_its_finished_batches(sudoku, tmp_path, capsys):
    """Batches are keyed by their first input (issue 49): a run cut short at one batch size and
    resumed at another keeps what it finished, decodes only the rest, and gives the same records."""
    task, model, eval_set = sudoku
    sudoku_run(sudoku, tmp_path / "truth", "topk:k=3")
    config = sudoku_config(sudoku, "topk:k=3")
    truth = records_of(result_paths(tmp_path / "truth", config)[1])
    partial = result_paths(tmp_path / "run", config)[2]
    partial.parent.mkdir(parents=True)
    stored = read_records(result_paths(tmp_path / "truth", config)[1])
    partial.write_text(batch_line(run_id(config), [r for r in stored if r["batch"] == 0]))   # one batch of BATCH
    decoded = []
    run = Run(task, model, eval_set, parse_strategy("topk:k=3"), "topk:k=3", 0, LIMIT, batch_size=BATCH + 1,
              out=tmp_path / "run")
    original = run_module.decode_rows
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run_module, "decode_rows", lambda r, rows: decoded.append(rows.tolist()) or original(r, rows))
        run_one(run)
    assert decoded and decoded[0][0] == BATCH and all(i >= BATCH for rows in decoded for i in rows)
    resumed = records_of(result_paths(tmp_path / "run", config)[1])
    assert [{k: v for k, v in r.items() if k != "batch"} for r in resumed] == \
        [{k: v for k, v in r.items() if k != "batch"} for r in truth]


# --- checksums everywhere ----------------------------------------------------------------------------

def test_a_summary_without_its_checksum_is_redone(sudoku, tmp_path, capsys):
    sudoku_run(sudoku, tmp_path, "topk:k=3")
    summary_path = result_paths(tmp_path, sudoku_config(sudoku, "topk:k=3"))[0]
    summary = json.loads(summary_path.read_text())
    del summary["records_sha256"]
    summary_path.write_text(json.dumps(summary))
    capsys.readouterr()
    sudoku_run(sudoku, tmp_path, "topk:k=3")
    assert "no records_sha256" in capsys.readouterr().err
    assert "records_sha256" in json.loads(summary_path.read_text())


def test_readers_refuse_altered_records_in_one_line(sudoku, tmp_path):
    summary = sudoku_run(sudoku, tmp_path, "topk:k=3")
    records_path = result_paths(tmp_path, sudoku_config(sudoku, "topk:k=3"))[1]
    records_path.write_text(records_path.read_text().replace('"passes": ', '"passes": 1', 1))
    with pytest.raises(BenchError, match="does not match the checksum"):
        run_records(summary, records_path)


def test_every_committed_summary_carries_its_records_checksum():
    from conftest import ROOT
    unprotected = []
    for path in (ROOT / "results").rglob("*.json"):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "records_file" in data and "records_sha256" not in data:
            unprotected.append(path.name)
    assert unprotected == []


def test_report_refuses_an_altered_committed_style_record(sudoku, tmp_path):
    sudoku_run(sudoku, tmp_path / "results", "topk:k=3")
    sudoku_run(sudoku, tmp_path / "results", "sequential")
    records_path = result_paths(tmp_path / "results", sudoku_config(sudoku, "topk:k=3"))[1]
    records_path.write_text(records_path.read_text().replace('"passes": ', '"passes": 1', 1))
    done = run_cli("report", "--results", tmp_path / "results", "--out", tmp_path / "reports")
    assert done.returncode == 2, done.stderr
    assert "does not match the checksum" in done.stderr and "Traceback" not in done.stderr
