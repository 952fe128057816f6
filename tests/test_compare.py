"""`bench compare`: marks, thresholds and exit codes on hand-made result files, and the gate on a
real regression (a deliberately broken strategy run through the real runner)."""
import json
from dataclasses import dataclass

import pytest

from bench.errors import BenchError
from bench.report.compare import DEFAULT_FAIL_ON, compare, parse_fail_on
from bench.results import records_file_text, text_digest
from bench.run.cell import Run
from bench.run.local import run_one
from conftest import run_cli
from strategies.ordering import order_score, top_k_mask
from strategies.topk import TopK
from tasks.sudoku.task import SudokuTask


def metric(name, value, half_width, higher_is_better):
    return {"name": name, "label": name, "value": value, "ci_low": value - half_width,
            "ci_high": value + half_width, "higher_is_better": higher_is_better, "n": 100}


def result(spec="topk:k=2,order=confidence", passes=20.0, accuracy=0.5, model="m1", seed=0, schema=1,
           extra=(), task="sudoku"):
    """A result summary shaped like the runner's, with CIs of +-1 pass and +-0.05 accuracy."""
    metrics = [metric("exact_accuracy", accuracy, 0.05, True), metric("passes", passes, 1.0, False), *extra]
    return {"schema_version": schema, "task": task, "strategy": spec.split(":")[0], "label": spec.split(",")[0],
            "headline": "exact_accuracy", "metrics": metrics, "n_samples": 100, "wall_seconds": 1.0,
            "config": {"task": task, "strategy_spec": spec, "seed": seed, "limit": 100, "batch_size": 250,
                       "data_id": "d1", "model_id": model, "temperature": 0.0},
            "provenance": {"finished_at": "2026-01-01T00:00:00+00:00"}}


def write(folder, *results):
    folder.mkdir(parents=True, exist_ok=True)
    for i, r in enumerate(results):
        (folder / f"run{i}.json").write_text(json.dumps(r))
    return folder


def marks(tmp_path, base, new, fail_on=DEFAULT_FAIL_ON):
    """(exit status, {(run, metric): (mark, note)}) of comparing hand-made results."""
    lines = []
    status = compare(write(tmp_path / "base", *base), write(tmp_path / "new", *new), fail_on, lines.append)
    table = lines[0].splitlines()[2:] if len(lines) > 1 else []
    parsed = {}
    for row in table:
        cells = [c for c in row.split("  ") if c.strip()]
        parsed[(cells[1].strip(), cells[2].strip())] = cells[-1].strip() if "REGRESSION" in row else None
        parsed[(cells[1].strip(), cells[2].strip(), "mark")] = next(
            m for m in ("better", "worse", "within noise", "not comparable", "missing", "new") if m in row)
    return status, parsed, lines[-1]


def test_identical_results_are_within_noise_and_exit_0(tmp_path):
    status, rows, summary = marks(tmp_path, [result()], [result()])
    assert status == 0 and summary.startswith("ok: 1 runs compared, 0 regressions")
    assert rows[("topk:k=2", "passes", "mark")] == rows[("topk:k=2", "exact_accuracy", "mark")] == "within noise"


def test_better_and_worse_need_separated_cis(tmp_path):
    status, rows, _ = marks(tmp_path, [result(passes=20, accuracy=0.5)], [result(passes=15, accuracy=0.3)])
    assert rows[("topk:k=2", "passes", "mark")] == "better"          # fewer passes: lower is better
    assert rows[("topk:k=2", "exact_accuracy", "mark")] == "worse"
    assert status == 1 and "REGRESSION beyond ci" in rows[("topk:k=2", "exact_accuracy")]


def test_direction_comes_from_the_file_not_the_name(tmp_path):
    """A metric called 'passes' that the file says is higher-is-better: more of it is better."""
    def passes_up(v):                 # "passes", higher is better
        return metric("passes", v, 1.0, True)

    base, new = result(), result()
    base["metrics"][1], new["metrics"][1] = passes_up(20.0), passes_up(30.0)
    status, rows, _ = marks(tmp_path, [base], [new], "passes:+5%")
    assert rows[("topk:k=2", "passes", "mark")] == "better" and status == 0
    new["metrics"][1] = passes_up(10.0)
    status, rows, _ = marks(tmp_path / "again", [base], [new], "passes:+5%")
    assert rows[("topk:k=2", "passes", "mark")] == "worse" and status == 1


def test_missing_and_new_runs_and_metrics(tmp_path):
    base = [result(), result(spec="sequential:order=confidence")]
    new = [result(extra=[metric("cell_accuracy", 0.8, 0.01, True)]), result(spec="eb:gamma=0.1,order=entropy")]
    status, rows, summary = marks(tmp_path, base, new)
    assert rows[("sequential:order=confidence", "-", "mark")] == "missing"
    assert rows[("eb:gamma=0.1", "-", "mark")] == "new"
    assert rows[("topk:k=2", "cell_accuracy", "mark")] == "new"
    assert status == 1 and "1 missing, 1 new" in summary   # a BASE run missing from NEW is a regression
    _, rows, _ = marks(tmp_path / "swap", new[:1], base[:1])
    assert rows[("topk:k=2", "cell_accuracy", "mark")] == "missing"


@pytest.mark.parametrize("change,reason", [
    ({"model": "m2"}, "model_id m1 vs m2"),
    ({"schema": 2}, "schema_version 1 vs 2"),
    ({"seed": 1}, "seed 0 vs 1"),
])
def test_different_model_schema_or_seed_is_not_comparable_and_exits_3(tmp_path, change, reason):
    lines = []
    status = compare(write(tmp_path / "b", result()), write(tmp_path / "n", result(**change)), DEFAULT_FAIL_ON,
                     lines.append)
    assert status == 3 and "not comparable" in lines[0] and reason in lines[0]
    assert lines[-1].startswith("nothing comparable")


def test_a_metric_whose_direction_changed_is_an_error_naming_both_files(tmp_path):
    """Neither 'better' nor 'worse' means anything when the direction changed, and a row of its own
    would let the run drop out of the gate: a one-line error (exit 2)."""
    new = result()
    new["metrics"][0]["higher_is_better"] = False
    with pytest.raises(BenchError, match=r"'exact_accuracy' has higher_is_better True in the baseline .*base/run0.json "
                                         r"but False in .*new/run0.json"):
        marks(tmp_path, [result()], [new])


@pytest.mark.parametrize("fail_on,new_passes,new_accuracy,status", [
    ("passes:+5%", 20.9, 0.5, 0),         # +4.5%: within the limit (and within noise)
    ("passes:+5%", 21.2, 0.5, 1),         # +6%: beyond it, though the CIs overlap
    ("passes:-5%", 21.2, 0.5, 1),         # the sign is ignored: the file says lower is better
    ("passes:2", 21.9, 0.5, 0),           # absolute, in passes
    ("passes:2", 22.1, 0.5, 1),
    ("exact_accuracy:0.02", 20, 0.49, 0),
    ("exact_accuracy:-0.02", 20, 0.47, 1),
    ("exact_accuracy:50%", 20, 0.30, 0),  # 0.2 worse is 40% of 0.5
    ("headline:ci", 20, 0.42, 0),         # worse, but the CIs overlap
    ("headline:ci", 20, 0.38, 1),
    ("passes:0%", 19.0, 0.5, 0),          # better never fails
])
def test_thresholds(tmp_path, fail_on, new_passes, new_accuracy, status):
    got, _, _ = marks(tmp_path, [result()], [result(passes=new_passes, accuracy=new_accuracy)], fail_on)
    assert got == status


def test_relative_threshold_on_a_zero_base_fails_on_any_worsening(tmp_path):
    def rule_breaks(v):
        return metric("rule_break_share", v, 0.0, False)

    status, _, _ = marks(tmp_path, [result(extra=[rule_breaks(0.0)])], [result(extra=[rule_breaks(0.01)])],
                         "rule_break_share:10%")
    assert status == 1


@pytest.mark.parametrize("text", ["passes", "passes:", "passes:5x", ":5%", "", "passes:+-5"])
def test_malformed_fail_on_is_a_one_line_error(text):
    with pytest.raises(BenchError) as err:
        parse_fail_on(text)
    assert "\n" not in str(err.value)


def test_fail_on_parsing():
    limits = parse_fail_on("passes:+5%, exact_accuracy:-2,composition_jsd:CI")
    assert [(x.metric, x.kind, x.amount) for x in limits] == [
        ("passes", "rel", 5.0), ("exact_accuracy", "abs", 2.0), ("composition_jsd", "ci", 0.0)]


def test_exit_codes_and_one_line_errors_from_the_command_line(tmp_path):
    base, new = write(tmp_path / "b", result()), write(tmp_path / "n", result(passes=30))
    assert run_cli("compare", base, base).returncode == 0
    worse = run_cli("compare", base, new)
    assert worse.returncode == 1 and "REGRESSION" in worse.stdout and worse.stdout.strip().endswith(
        "1 runs compared, 1 regressions; 0 missing, 0 new, 0 not comparable; "
        "metrics: 1 within noise, 0 better, 1 worse, 0 missing, 0 new")
    assert run_cli("compare", base / "run0.json", new / "run0.json").returncode == 1  # single files
    (tmp_path / "empty").mkdir()
    assert run_cli("compare", base, tmp_path / "empty").returncode == 1   # every BASE run missing
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "other.json").write_text('{"a": 1}')
    for args, message in [((base, tmp_path / "nope"), "no such file or folder"),
                          ((base, tmp_path / "bad.json"), "cannot read"),
                          ((tmp_path / "other.json", base), "not a result summary"),
                          ((base, new, "--fail-on", "acuracy:2"), "no result has"),
                          ((base, new, "--fail-on", "passes"), "expected METRIC:LIMIT"),
                          ((base,), "required: new")]:
        proc = run_cli("compare", *args)
        assert proc.returncode == 2 and proc.stderr.startswith("error: ") and message in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_newest_of_duplicate_runs_is_compared(tmp_path):
    old, newer = result(passes=30), result(passes=20)
    newer["provenance"]["finished_at"] = "2026-02-01T00:00:00+00:00"
    status, _, summary = marks(tmp_path, [old, newer], [result(passes=20)])
    assert status == 0 and summary.startswith("ok: 1 runs compared")


@dataclass
class WastefulTopK(TopK):
    """A deliberately broken top-k (test only, never registered): on every odd pass it reveals one
    position instead of k, so it spends more passes under the very same spec 'topk:k=3'."""

    def select(self, state):
        k = self.k if state.step % 2 == 0 else 1
        return top_k_mask(order_score(state, self.order), state.masked, k)


def test_the_gate_catches_a_strategy_that_spends_more_passes(tmp_path):
    task = SudokuTask()
    model, eval_set = task.load_model(), task.eval_set(8, 0)
    for folder, strategy in (("good", TopK(k=3)), ("broken", WastefulTopK(k=3))):
        run_one(Run(task, model, eval_set, strategy, "topk:k=3", 0, 8, batch_size=8, out=tmp_path / folder))
    proc = run_cli("compare", tmp_path / "good", tmp_path / "broken")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    regression = next(line for line in proc.stdout.splitlines() if "REGRESSION" in line)
    assert "topk:k=3" in regression and "passes" in regression and "worse" in regression
    assert run_cli("compare", tmp_path / "good", tmp_path / "good").returncode == 0


def with_records(folder, name, exact):
    """A result with per-input records (``exact`` 0/1 per board) written beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    accuracy = float(sum(exact)) / len(exact)
    summary = result(accuracy=accuracy)
    summary["n_samples"] = len(exact)
    summary["metrics"][0]["per_input"] = {"statistic": "mean", "fields": ["exact"]}
    summary["records_file"] = f"{name}.jsonl"
    text = records_file_text(summary["config"], [{"index": i, "exact": e, "passes": 20} for i, e in enumerate(exact)])
    summary["records_sha256"] = text_digest(text)
    (folder / f"{name}.json").write_text(json.dumps(summary))
    (folder / f"{name}.jsonl").write_text(text)
    return folder


def test_runs_on_the_same_inputs_are_judged_by_the_paired_test(tmp_path):
    base = [1] * 50 + [0] * 50
    worse = [0] * 20 + [1] * 30 + [0] * 50            # 20 boards lost, none gained: 0.30 vs 0.50
    lines = []
    status = compare(with_records(tmp_path / "b", "r", base), with_records(tmp_path / "n", "r", worse),
                     "headline:ci", lines.append)
    row = next(line for line in lines[0].splitlines() if "exact_accuracy" in line)
    assert "worse" in row and "Tango score (McNemar) p 7.74e-06 (0 vs 20)" in row and status == 1
    lines = []
    status = compare(with_records(tmp_path / "b2", "r", base), with_records(tmp_path / "n2", "r", base),
                     "headline:ci", lines.append)
    row = next(line for line in lines[0].splitlines() if "exact_accuracy" in line)
    assert "within noise" in row and status == 0     # no discordant board: the score interval is not [0, 0]
    assert "paired +0 [-0.03699, 0.03699], Tango score (McNemar) p 1 (0 vs 0)" in row


def test_a_small_shift_the_marginal_cis_miss_is_found_when_paired(tmp_path):
    base = [1] * 300 + [0] * 700
    new = [0] * 20 + [1] * 280 + [0] * 700             # 0.28 vs 0.30: marginal 95% CIs overlap
    lines = []
    compare(with_records(tmp_path / "b", "r", base), with_records(tmp_path / "n", "r", new), "headline:ci",
            lines.append)
    assert "worse" in next(line for line in lines[0].splitlines() if "exact_accuracy" in line)


def test_an_unreadable_baseline_file_is_named_and_exits_2(tmp_path):
    base = write(tmp_path / "base", result())
    (base / "broken.json").write_text('{"schema_version": 1, "task": "su')
    new = write(tmp_path / "new", result())
    (new / "list.json").write_text("[1, 2]")
    proc = run_cli("compare", base, new)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "broken.json" in proc.stderr
    assert proc.stderr.startswith(f"error: 1 file(s) in the baseline {base} cannot be compared: ")
    (base / "broken.json").unlink()
    proc = run_cli("compare", base, new)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "list.json" in proc.stderr
    assert proc.stderr.startswith(f"error: 1 file(s) in NEW {new} cannot be compared: ")


def test_baseline_records_that_do_not_match_their_summary_are_an_error(tmp_path):
    """Records edited after the run would be judged in place of the run the summary describes."""
    base = with_records(tmp_path / "b", "r", [1] * 50 + [0] * 50)
    (base / "r.jsonl").write_text((base / "r.jsonl").read_text().replace('"exact": 0', '"exact": 1', 1))
    with pytest.raises(BenchError, match=r"cannot compare .*r.json: .*checksum"):
        compare(base, with_records(tmp_path / "n", "r", [1] * 50 + [0] * 50), "headline:ci", print)


def test_a_significant_difference_within_the_tolerance_is_noted(tmp_path):
    """Disjoint CIs around values 2e-7 apart: float noise, 'within noise', and the note says why."""
    def tight_kl(v):                  # kl_nats with a half-width of 1e-8
        return metric("kl_nats", v, 1e-8, False)

    status, rows, _ = marks(tmp_path, [result(extra=[tight_kl(2.0)])], [result(extra=[tight_kl(2.0 + 2e-7)])],
                            "kl_nats:0")
    assert rows[("topk:k=2", "kl_nats", "mark")] == "within noise" and status == 0
    lines = []
    compare(tmp_path / "base", tmp_path / "new", "kl_nats:0", lines.append)
    assert "within tolerance 2e-06" in next(line for line in lines[0].splitlines() if "kl_nats" in line)


def test_a_declared_tolerance_is_the_metrics_own(tmp_path):
    """A metric's owner may declare how much of a difference is noise (metric units)."""
    def tolerant_w1(v):               # judge_w1 declaring a tolerance of 0.01
        return {**metric("judge_w1", v, 0.001, False), "tolerance": 0.01}

    status, rows, _ = marks(tmp_path, [result(extra=[tolerant_w1(0.05)])], [result(extra=[tolerant_w1(0.058)])],
                            "judge_w1:0")
    assert rows[("topk:k=2", "judge_w1", "mark")] == "within noise" and status == 0
    status, rows, _ = marks(tmp_path / "more", [result(extra=[tolerant_w1(0.05)])], [result(extra=[tolerant_w1(0.07)])],
                            "judge_w1:0")
    assert rows[("topk:k=2", "judge_w1", "mark")] == "worse" and status == 1


def test_batch_size_is_not_a_setting_that_must_match(tmp_path):
    other = result()
    other["config"]["batch_size"] = 5
    status, rows, summary = marks(tmp_path, [result()], [other])
    assert status == 0 and summary.startswith("ok: 1 runs compared") and "not comparable" not in rows.values()
