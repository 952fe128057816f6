"""`bench compare` against hostile or odd baselines: float noise from another machine, baselines
that cannot be compared (exit 2, the file named), footers that must agree with their rows, and
runs that differ only in how they were batched."""
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.cli import main
from bench.errors import BenchError
from bench.report.compare import DEFAULT_FAIL_ON, compare
from bench.results import records_file_text, records_text, split_records, text_digest
from bench.run.cell import Run
from bench.run.local import run_one
from strategies.eb import EBSampler
from tasks.hmm.task import HMMTask

BASELINE = Path(__file__).resolve().parent.parent / "baselines" / "ci"
MARKS = ("within noise", "not comparable", "better", "worse", "missing", "new")
ONCE = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# The runs the tests copy (the baseline holds every family of each task; comparing all of them in
# every fuzzed example would cost minutes): the lines the gate's cases name, as the old 4-run ci had.
SAMPLED = {"sequential", "topk:k=5", "topk:k=8", "eb:gamma=0.3", "eb:gamma=2", "eb:gamma=3", "threshold:tau=0.9",
           "threshold:tau=0.7", "mi_oracle:gamma=2"}


def copy_runs(folder, *tasks):
    """A copy of the CI baseline's SAMPLED runs of ``tasks`` (summaries and records) in ``folder``."""
    for task in tasks:
        (folder / task).mkdir(parents=True)
        for path in sorted((BASELINE / task).glob("*.json")):
            summary = json.loads(path.read_text())
            if summary["label"] in SAMPLED:
                shutil.copy(path, folder / task / path.name)
                shutil.copy(path.parent / summary["records_file"], folder / task / summary["records_file"])
    return folder


def summary_of(folder, task, label):
    """(path, summary) of the run labelled ``label`` in ``folder/task``."""
    for path in sorted((folder / task).glob("*.json")):
        data = json.loads(path.read_text())
        if data["label"] == label:
            return path, data
    raise LookupError(label)


def compared(base, new, fail_on="passes:+5%,headline:ci"):
    """(exit status, {(task, run, metric): mark}, footer) of comparing two folders in-process."""
    lines = []
    status = compare(base, new, fail_on, lines.append)
    rows = {}
    for line in lines[0].splitlines()[2:] if len(lines) > 1 else []:
        cells = [c.strip() for c in re.split(r"\s{2,}", line)]
        rows[tuple(cells[:3])] = next(m for m in MARKS if m in cells)
    return status, rows, lines[-1]


def rewrite_records(summary_path, summary, change):
    """Apply ``change`` to each record of a run and keep its summary's checksum consistent, as the
    runner writes it (bench.results.records_sha256): only the numbers differ, not the file's shape."""
    records_path = summary_path.parent / summary["records_file"]
    header, records = split_records(records_path.read_text())   # the header names the run: kept
    text = (json.dumps(header) + "\n" if header else "") + records_text([change(i, r) for i, r in enumerate(records)])
    records_path.write_text(text)
    summary["records_sha256"] = text_digest(text)
    summary_path.write_text(json.dumps(summary))


# --- float noise: another BLAS moves per-input log-probabilities by ~1e-7 -----------------------

NOISY_RUNS = [("hmm", "eb:gamma=2"), ("hmm", "topk:k=8"), ("hmm_mdm", "threshold:tau=0.7")]


@pytest.mark.parametrize("task,label", NOISY_RUNS)
@ONCE
@given(sign=st.sampled_from([-1.0, 1.0]), size=st.floats(5e-8, 1e-6), seed=st.integers(0, 2 ** 16))
def test_float_noise_of_one_sign_is_within_noise(tmp_path_factory, task, label, sign, size, seed):
    """Every input's log q moved the same way by up to ``size`` nats (the paired test alone calls
    that significant, p 0.0005) is float noise, whichever the sign: `within noise`, exit 0."""
    folder = tmp_path_factory.mktemp("noise")
    base, new = copy_runs(folder / "base", task), copy_runs(folder / "new", task)
    path, summary = summary_of(new, task, label)
    shift = sign * size * np.random.default_rng(seed).uniform(0.5, 1.0, summary["n_samples"])
    rewrite_records(path, summary, lambda i, r: {**r, "log_q": r["log_q"] + float(shift[i])})
    status, rows, footer = compared(base, new)
    assert rows[(task, label, "kl_nats")] == "within noise", footer
    assert status == 0 and set(rows.values()) == {"within noise"}


@pytest.mark.parametrize("shift,mark,status", [(1e-3, "worse", 1), (-1e-3, "better", 0)])
def test_a_kl_change_beyond_the_tolerance_is_still_found(tmp_path, shift, mark, status):
    """1e-3 nats on every sequence is no float noise (the tolerance here is 1.4e-4 nats)."""
    base, new = copy_runs(tmp_path / "base", "hmm"), copy_runs(tmp_path / "new", "hmm")
    path, summary = summary_of(new, "hmm", "eb:gamma=2")
    rewrite_records(path, summary, lambda i, r: {**r, "log_q": r["log_q"] + shift})
    got, rows, _ = compared(base, new)
    assert rows[("hmm", "eb:gamma=2", "kl_nats")] == mark and got == status


def test_the_ci_baseline_against_itself_is_within_noise_everywhere():
    status, rows, footer = compared(BASELINE, BASELINE)
    assert status == 0 and footer.startswith("ok: 130 runs compared, 0 regressions")
    assert set(rows.values()) == {"within noise"}


# --- baselines that cannot be compared: exit 2, the file named, one line ------------------------

def drop_metrics(summary):
    del summary["metrics"]


def flip_direction(summary):
    summary["metrics"][0]["higher_is_better"] = not summary["metrics"][0]["higher_is_better"]


def drop_ci_low(summary):
    del summary["metrics"][0]["ci_low"]


def text_value(summary):
    summary["metrics"][0]["value"] = str(summary["metrics"][0]["value"])


def bad_tolerance(summary):
    summary["metrics"][0]["tolerance"] = -1


@pytest.mark.parametrize("damage,why", [
    (lambda s: s.update(schema_version=99), "schema version 99"),
    (lambda s: s.update(schema_version="1"), "schema version '1'"),
    (lambda s: s.update(schema_version=True), "schema version True"),
    (drop_metrics, "metrics"),
    (flip_direction, "higher_is_better"),
    (drop_ci_low, "ci_low"),
    (text_value, "value"),
    (bad_tolerance, "tolerance"),
])
def test_a_baseline_run_that_cannot_be_compared_exits_2_naming_its_file(tmp_path, capsys, damage, why):
    base, new = copy_runs(tmp_path / "base", "sudoku", "hmm"), copy_runs(tmp_path / "new", "sudoku", "hmm")
    path, summary = summary_of(base, "sudoku", "topk:k=5")
    damage(summary)
    path.write_text(json.dumps(summary))
    status = main(["compare", str(base), str(new)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert path.name in err and why in err and "Traceback" not in err


def test_a_metric_whose_direction_changed_in_new_names_both_files(tmp_path, capsys):
    base, new = copy_runs(tmp_path / "base", "sudoku"), copy_runs(tmp_path / "new", "sudoku")
    path, summary = summary_of(new, "sudoku", "eb:gamma=0.3")
    flip_direction(summary)
    path.write_text(json.dumps(summary))
    assert main(["compare", str(base), str(new)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and path.name in err
    assert summary_of(base, "sudoku", "eb:gamma=0.3")[0].name in err


# What one damaged field may hold: any JSON value, NaN and infinities included (Python's json reads them).
JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2, 2 ** 40), st.floats(), st.text(max_size=8),
                        st.lists(st.integers(0, 3), max_size=3),
                        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def paths_in(value, prefix=()):
    """Every key path into a JSON value (dict keys, and the first 3 indices of each list: a
    reference's thousands of counts are alike)."""
    items = value.items() if isinstance(value, dict) else enumerate(value[:3]) if isinstance(value, list) else ()
    for key, inner in items:
        yield prefix + (key,)
        yield from paths_in(inner, prefix + (key,))


def damaged(summary, path, value):
    """A copy of ``summary`` with the item at ``path`` replaced by ``value`` (deleted when it is
    the DELETE marker)."""
    copy = json.loads(json.dumps(summary))
    holder = copy
    for key in path[:-1]:
        holder = holder[key]
    if value == "DELETE" and isinstance(holder, dict):
        del holder[path[-1]]
    else:
        holder[path[-1]] = value
    return copy


# One run per kind of per_input recipe: mean and ratio (sudoku), mean_difference (hmm), the
# reference-based distances (protein).
FUZZED = {key: summary_of(BASELINE, *key)[0] for key in
          [("sudoku", "topk:k=5"), ("hmm", "eb:gamma=2"), ("protein", "eb:gamma=3")]}
FIELD_PATHS = sorted(((key, path) for key, file in FUZZED.items() for path in paths_in(json.loads(file.read_text()))),
                     key=str)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(FIELD_PATHS), value=st.one_of(st.just("DELETE"), JSON_VALUES),
       side=st.sampled_from(["base", "new"]))
def test_any_damaged_field_is_a_verdict_or_a_one_line_error(tmp_path_factory, where, value, side):
    """Whatever one field of a summary holds, compare ends in an exit status or a BenchError
    (exit 2, one line): never another exception, which the command line shows as a traceback."""
    run, path = where
    folder = tmp_path_factory.mktemp("fuzz")
    for name in ("base", "new"):
        (folder / name).mkdir()
        shutil.copy(FUZZED[run], folder / name)
        shutil.copy(FUZZED[run].with_suffix(".jsonl"), folder / name)
    target = folder / side / FUZZED[run].name
    target.write_text(json.dumps(damaged(json.loads(target.read_text()), path, value)))
    try:
        assert compare(folder / "base", folder / "new", out=lambda text: None) in (0, 1, 3)
    except BenchError as err:
        assert "\n" not in str(err)


# --- the footer counts what the rows show ------------------------------------------------------

def counts(text):
    """{mark: count} of '3 within noise, 0 better, ...'."""
    return {mark: int(n) for n, mark in re.findall(rf"(\d+) ({'|'.join(MARKS)})", text)}


def footer_counts(footer):
    """({run mark: count}, {metric mark: count}) of the summary line."""
    runs, _, metrics = footer.partition("metrics:")
    return counts(runs), counts(metrics)


def test_the_footer_counts_match_the_rows(tmp_path):
    base, new = copy_runs(tmp_path / "base", "sudoku"), copy_runs(tmp_path / "new", "sudoku")
    path, summary = summary_of(new, "sudoku", "topk:k=5")
    summary["metrics"] = summary["metrics"][1:]                       # a metric missing
    path.write_text(json.dumps(summary))
    path, summary = summary_of(new, "sudoku", "eb:gamma=0.3")
    summary["metrics"].append({**summary["metrics"][0], "name": "exact_accuracy_copy"})   # a new metric
    path.write_text(json.dumps(summary))
    path, summary = summary_of(new, "sudoku", "threshold:tau=0.9")
    summary["config"]["seed"] = 1                                      # not comparable
    path.write_text(json.dumps(summary))
    summary_of(new, "sudoku", "sequential")[0].unlink()               # a run missing
    copy_runs(new, "hmm")                                              # runs new
    status, rows, footer = compared(base, new)
    runs, metrics = footer_counts(footer)
    whole_runs = [mark for key, mark in rows.items() if key[2] == "-"]
    per_metric = [mark for key, mark in rows.items() if key[2] != "-"]
    assert runs == {m: whole_runs.count(m) for m in ("missing", "new", "not comparable")}
    assert metrics == {m: per_metric.count(m) for m in ("within noise", "better", "worse", "missing", "new")}
    assert (runs["missing"], runs["new"], runs["not comparable"], metrics["missing"], metrics["new"]) == (1, 5, 1, 1, 1)
    assert footer.startswith("FAIL: 2 runs compared, 1 regressions") and status == 1   # the missing run


# --- what does not change records does not make runs incomparable -------------------------------

def test_runs_that_differ_only_in_batch_size_are_compared(tmp_path):
    """The exact task draws its values (temperature 1), and still batches of 5 and of 250 give the
    same records: the two runs are compared, and differ by exactly 0."""
    task = HMMTask()
    model, eval_set = task.load_model(), task.eval_set(12, 0)
    for folder, batch_size in (("small", 5), ("large", 250)):
        run_one(Run(task, model, eval_set, EBSampler(gamma=2.0), "eb:gamma=2", 0, 12, batch_size=batch_size,
                    out=tmp_path / folder))
    status, rows, footer = compared(tmp_path / "small", tmp_path / "large")
    assert status == 0 and footer.startswith("ok: 1 runs compared"), footer
    assert rows and set(rows.values()) == {"within noise"}


def test_shards_and_executor_in_a_config_do_not_matter(tmp_path):
    base, new = copy_runs(tmp_path / "base", "sudoku"), copy_runs(tmp_path / "new", "sudoku")
    for path in (new / "sudoku").glob("*.json"):
        summary = json.loads(path.read_text())
        summary["config"].update(batch_size=7, shards=4, executor="ray")
        records_path = path.parent / summary["records_file"]   # as such a run writes it: its header names it
        text = records_file_text(summary["config"], split_records(records_path.read_text())[1])
        records_path.write_text(text)
        path.write_text(json.dumps({**summary, "records_sha256": text_digest(text)}))
    status, rows, footer = compared(base, new)
    assert status == 0 and footer.startswith("ok: 4 runs compared") and set(rows.values()) == {"within noise"}


# --- the tolerance never hides one input's change out of 1,000 ----------------------------------

def count_run(folder, field, values, higher_is_better):
    """A hand-made run whose one metric is the mean of the per-input counts ``values``."""
    folder.mkdir(parents=True)
    records = [{"index": i, field: int(v)} for i, v in enumerate(values)]
    mean = float(np.mean(values))
    summary = {"schema_version": 1, "task": "sudoku", "label": "topk:k=5", "headline": field,
               "config": {"task": "sudoku", "strategy_spec": "topk:k=5,order=confidence", "seed": 0,
                          "limit": len(values), "data_id": "d", "model_id": "m", "temperature": 0.0},
               "metrics": [{"name": field, "label": field, "value": mean, "ci_low": mean - 1, "ci_high": mean + 1,
                            "higher_is_better": higher_is_better, "n": len(values),
                            "per_input": {"statistic": "mean", "fields": [field]}}],
               "n_samples": len(values), "records_file": "run.jsonl",
               "provenance": {"finished_at": "2026-01-01T00:00:00+00:00"}}
    text = records_file_text(summary["config"], records)
    summary["records_sha256"] = text_digest(text)
    (folder / "run.jsonl").write_text(text)
    (folder / "run.json").write_text(json.dumps(summary))
    return folder


@ONCE
@given(n=st.integers(100, 1000), top=st.integers(1, 999), seed=st.integers(0, 2 ** 16))
def test_one_more_pass_on_one_input_in_1000_breaks_a_zero_limit(tmp_path_factory, n, top, seed):
    passes = np.random.default_rng(seed).integers(0, top, n, endpoint=True)
    more = passes.copy()
    more[seed % n] += 1
    folder = tmp_path_factory.mktemp("passes")
    base, new = count_run(folder / "b", "passes", passes, False), count_run(folder / "n", "passes", more, False)
    assert compared(base, new, "passes:0")[0] == 1
    assert compared(base, base, "passes:0")[0] == 0


@ONCE
@given(n=st.integers(100, 1000), share=st.floats(0.01, 1.0), seed=st.integers(0, 2 ** 16))
def test_one_board_lost_in_1000_breaks_a_zero_limit(tmp_path_factory, n, share, seed):
    exact = (np.random.default_rng(seed).random(n) < share).astype(int)
    exact[seed % n] = 1
    lost = exact.copy()
    lost[seed % n] = 0
    folder = tmp_path_factory.mktemp("exact")
    base, new = count_run(folder / "b", "exact", exact, True), count_run(folder / "n", "exact", lost, True)
    assert compared(base, new, "exact:0")[0] == 1


@given(value=st.floats(-999, 999))
def test_the_default_tolerance_is_below_one_input_in_1000_of_a_count(value):
    """A mean over up to 1,000 inputs of integer counts (passes, 0/1 boards) below 1,000 moves by at
    least 1/1000 when one input changes: more than the default tolerance."""
    from bench.report.compare import practical_tolerance
    assert 1e-6 <= practical_tolerance({"value": value}) < 1e-3
    assert practical_tolerance({"value": value}, scale=200.0) == pytest.approx(max(2e-4, 1e-6 * abs(value)))


def test_a_declared_tolerance_wins():
    from bench.report.compare import practical_tolerance
    assert practical_tolerance({"value": 5.0, "tolerance": 0.25}) == 0.25
    assert practical_tolerance({"value": 5.0, "tolerance": 0}) == 0


# --- the gate never passes a run that dropped out, was swapped or cut short (issue 52) ----------

def one_line(capsys, argv):
    """(exit status, stderr) of a CLI call whose stderr must be at most one line, no traceback."""
    status = main(argv)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) <= 1 and "Traceback" not in err, err
    return status, err


def test_a_base_run_missing_from_new_fails_unless_allowed(tmp_path, capsys):
    base, new = copy_runs(tmp_path / "base", "sudoku", "hmm"), copy_runs(tmp_path / "new", "sudoku", "hmm")
    for label in ("eb:gamma=0.3", "topk:k=5"):
        path, summary = summary_of(new, "sudoku", label)
        (path.parent / summary["records_file"]).unlink()
        path.unlink()
    status, rows, footer = compared(base, new)
    assert status == 1 and footer.startswith("FAIL") and "2 missing" in footer
    argv = ["compare", str(base), str(new), "--allow-missing", "sudoku/eb:gamma=0.3"]
    assert one_line(capsys, argv)[0] == 1   # the other one is still missing
    assert one_line(capsys, argv + ["--allow-missing", "sudoku/topk:k=5"])[0] == 0
    status, err = one_line(capsys, argv + ["--allow-missing", "sudoku/topk:k=4"])
    assert status == 2 and "'sudoku/topk:k=4' names no run of BASE" in err


def with_headers(folder):
    """Rewrite every records file under ``folder`` as `bench run` writes one now: a header line
    naming its run, then its records (the summary's checksum updated; the baseline's files have
    one already, so this keeps the tests honest should it be remade from older files)."""
    for path in folder.rglob("*.json"):
        summary = json.loads(path.read_text())
        records_path = path.parent / summary["records_file"]
        text = records_file_text(summary["config"], split_records(records_path.read_text())[1])
        records_path.write_text(text)
        summary["records_sha256"] = text_digest(text)
        path.write_text(json.dumps(summary))
    return folder


@pytest.mark.parametrize("side", ["base", "new"])
def test_records_of_another_run_under_a_summary_are_refused(tmp_path, capsys, side):
    """Sequential's records copied under EB's summary, the checksum and count updated to match:
    the records' header names sequential's run, so the gate refuses the pair (exit 2, one line)."""
    folders = {name: with_headers(copy_runs(tmp_path / name, "hmm")) for name in ("base", "new")}
    assert compared(folders["base"], folders["new"])[0] == 0   # the headers alone change nothing
    path, summary = summary_of(folders[side], "hmm", "eb:gamma=2")
    other_path, other = summary_of(folders[side], "hmm", "sequential")
    text = (other_path.parent / other["records_file"]).read_text()
    (path.parent / summary["records_file"]).write_text(text)
    summary.update(records_sha256=text_digest(text), n_samples=other["n_samples"])
    path.write_text(json.dumps(summary))
    status, err = one_line(capsys, ["compare", str(folders["base"]), str(folders["new"])])
    assert status == 2 and path.name in err and "records of another run" in err and "sequential" in err


def test_records_of_another_run_are_refused_by_every_reader(tmp_path):
    """The check lives in bench.results.check_records, which every reader (run, report, rescore,
    compare, the Ray executor, the tasks' readers) goes through."""
    from bench.results import check_records
    folder = with_headers(copy_runs(tmp_path / "r", "hmm"))
    path, summary = summary_of(folder, "hmm", "eb:gamma=2")
    assert check_records(summary, path.parent / summary["records_file"])[1] is None
    summary["config"]["seed"] = 7
    assert "records of another run" in check_records(summary, path.parent / summary["records_file"])[1]


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.99])
def test_a_truncated_new_summary_exits_2_in_one_line(tmp_path, capsys, keep):
    base, new = copy_runs(tmp_path / "base", "sudoku"), copy_runs(tmp_path / "new", "sudoku")
    path, _ = summary_of(new, "sudoku", "eb:gamma=0.3")
    text = path.read_text()
    path.write_text(text[: int(len(text) * keep)])
    status, err = one_line(capsys, ["compare", str(base), str(new)])
    assert status == 2 and path.name in err and "not JSON" in err


@ONCE
@given(n=st.integers(400, 1000), changed=st.integers(10, 40), seed=st.integers(0, 2 ** 16))
def test_passes_marked_worse_fail_even_within_5_percent(tmp_path_factory, n, changed, seed):
    """One more pass on 10-40 inputs of 400-1,000 (mean passes about 40: at most 0.25% worse) is
    beyond noise: `worse`, and the default limits fail it (they allowed 5% before)."""
    rng = np.random.default_rng(seed)
    passes = rng.integers(30, 50, n)
    more = passes.copy()
    more[rng.choice(n, changed, replace=False)] += 1
    folder = tmp_path_factory.mktemp("passes")
    base, new = count_run(folder / "b", "passes", passes, False), count_run(folder / "n", "passes", more, False)
    status, rows, _ = compared(base, new, DEFAULT_FAIL_ON)
    assert rows[("sudoku", "topk:k=5", "passes")] == "worse" and status == 1
