"""Issue 52, item 8: the complete runs of a task are verified together, their few inputs each
decoded in shared forward calls (bench.decode.decode_shared), with the records each run's
decode alone gives; a run that does not reproduce is still named with its remake command; and
`bench plan` prices the verifications at the shape they run at."""
import json
from types import SimpleNamespace

import pytest
import torch

from bench.errors import BenchError
from bench.registry import parse_strategy
from bench.results import read_records, records_file_text, write_text_atomic
from bench.run.cell import Run, TaskRuns, complete_run, decode_rows
from bench.run.local import run_one, run_task
from bench.run.plan import plan_task
from bench.run.verify import SHARED_ROWS, decode_together, record_difference, verify_rows, verify_runs
from tasks.hmm.task import HMMTask
from tasks.sudoku.task import SudokuTask

LIMIT, BATCH, VERIFY = 6, 3, 3
# Sampled values (hmm), a strategy that draws its order (schedule, remdm), ones with memory
# (klass, remdm, dplm), re-masking ones (remdm, dplm) and plain argmax-order ones.
HMM_SPECS = ["topk:k=8", "schedule", "remdm:steps=8", "klass", "dplm:steps=8", "sequential"]
SUDOKU_SPECS = ["topk:k=3", "eb:gamma=0.3", "klass", "remdm:steps=16"]


@pytest.fixture(scope="module")
def hmm():
    task = HMMTask()
    return task, task.load_model(), task.eval_set(LIMIT, 0)


def bound_run(loaded, spec, out="unused", verify=VERIFY):
    task, model, eval_set = loaded
    strategy = parse_strategy(spec)
    strategy.bind(task, model)
    return Run(task, model, eval_set, strategy, spec, 0, LIMIT, batch_size=BATCH, out=str(out), verify=verify)


def assert_same_records(alone, together):
    assert [r["index"] for r in alone] == [r["index"] for r in together]
    for a, b in zip(alone, together):
        assert record_difference(a, b, [0.0, None]) == "", (a, b)


@pytest.mark.parametrize("task_class,specs", [(HMMTask, HMM_SPECS), (SudokuTask, SUDOKU_SPECS)])
def test_a_shared_decode_gives_each_run_the_records_of_its_decode_alone(task_class, specs):
    task = task_class()
    loaded = task, task.load_model(), task.eval_set(LIMIT, 0)
    runs = [bound_run(loaded, spec) for spec in specs]
    rows = [verify_rows(LIMIT, 2 + i % 3) for i in range(len(runs))]   # uneven row counts
    together = decode_together(list(zip(runs, rows)))
    for run, its_rows in zip(runs, rows):
        assert_same_records(decode_rows(run, torch.tensor(its_rows))[0], together[id(run)])


def make_complete(hmm, out, specs):
    """Complete runs of ``specs`` in ``out`` (decoded alone, as committed runs were)."""
    for spec in specs:
        run_one(bound_run(hmm, spec, out, verify=0))


def args_for(out):
    return SimpleNamespace(batch_size=BATCH, out=str(out), verify=VERIFY, data=None, model=None)


def task_runs_of(hmm, specs, out):
    """The TaskRuns `bench run` makes of ``specs``: their strategies bound (bench.run.checks.prepare)."""
    runs = [bound_run(hmm, spec) for spec in specs]
    return TaskRuns(*hmm[:3], [(run.label, run.strategy) for run in runs], 0, LIMIT, str(out))


def count_calls(monkeypatch, model):
    calls = []
    original = type(model).__call__

    def counted(self, tokens, masked):
        calls.append(len(tokens))
        return original(self, tokens, masked)
    monkeypatch.setattr(type(model), "__call__", counted)
    return calls


def verify_passes(out, specs):
    """The passes each run's verification inputs took, from its stored records."""
    rows = set(verify_rows(LIMIT, VERIFY))
    return [max(r["passes"] for r in read_records(path) if r["index"] in rows)
            for spec in specs for path in (out / "hmm").glob(f"{spec.partition(':')[0]}*.jsonl")]


def test_verifying_several_runs_makes_one_forward_call_a_pass(hmm, tmp_path, monkeypatch, capsys):
    """Separate verifications make one call per run per pass (less the shared first pass); shared,
    one call a pass covers every run still decoding."""
    specs = ["topk:k=8", "schedule", "remdm:steps=8", "klass"]
    make_complete(hmm, tmp_path, specs)
    calls = count_calls(monkeypatch, hmm[1])
    run_task(task_runs_of(hmm, specs, tmp_path), args_for(tmp_path))
    passes = verify_passes(tmp_path, specs)
    assert len(passes) == len(specs)
    assert len(calls) == max(passes) < sum(passes) - (len(specs) - 1)
    assert max(calls) == VERIFY * len(specs)
    err = capsys.readouterr().err
    assert all(f"  {spec}: complete already" in err and "reproduce it" in err for spec in specs)


def test_shared_calls_hold_at_most_the_row_limit(hmm, tmp_path, monkeypatch):
    specs = ["topk:k=8", "klass", "remdm:steps=8"]
    make_complete(hmm, tmp_path, specs)
    runs = [bound_run(hmm, spec, tmp_path) for spec in specs]
    calls = count_calls(monkeypatch, hmm[1])
    notes = list(verify_runs([(run, complete_run(run, say=False)) for run in runs], limit=2 * VERIFY))
    assert [run.label for run, _ in notes] == specs and all("reproduce it" in note for _, note in notes)
    assert max(calls) == 2 * VERIFY


def test_a_run_that_does_not_reproduce_is_named_with_its_remake_command(hmm, tmp_path, capsys):
    specs = ["topk:k=8", "klass", "remdm:steps=8"]
    make_complete(hmm, tmp_path, specs)
    summary_path, records_path, _ = bound_run(hmm, "klass", tmp_path).paths
    records = read_records(records_path)
    records[-1]["passes"] += 1   # the last input is one of those verified (first and last are)
    text = records_file_text(json.loads(summary_path.read_text())["config"], records)
    write_text_atomic(records_path, text)
    summary = json.loads(summary_path.read_text())
    summary["records_sha256"] = __import__("hashlib").sha256(text.encode()).hexdigest()
    write_text_atomic(summary_path, json.dumps(summary, indent=1))
    capsys.readouterr()
    with pytest.raises(BenchError, match=r"^klass: the stored result does not reproduce \(input 5: passes") as err:
        run_task(task_runs_of(hmm, specs, tmp_path), args_for(tmp_path))
    assert f"remake it with: rm {summary_path} {records_path} && " in str(err.value)
    assert "--strategies klass" in str(err.value)
    assert "  topk:k=8: complete already" in capsys.readouterr().err   # the run before it was checked


def test_the_plan_prices_verifications_at_the_shared_shape(hmm, tmp_path, monkeypatch):
    specs = ["topk:k=8", "klass", "sequential"]
    make_complete(hmm, tmp_path, specs)
    shapes = []

    def timed(model, eval_set, rows):
        shapes.append(rows)
        return 1e-3
    monkeypatch.setattr("bench.run.plan.forward_row_seconds", timed)
    estimates = plan_task(task_runs_of(hmm, specs + ["topk:k=4"], tmp_path), args_for(tmp_path))
    assert [e.label for e in estimates] == [f"{s} (verify)" for s in specs] + ["topk:k=4"]
    shared = min(VERIFY * len(specs), SHARED_ROWS)
    assert sorted(set(shapes)) == sorted({shared, BATCH})
    assert shared != VERIFY   # the shape of one verification alone, as the plan priced it before
