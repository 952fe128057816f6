"""`bench report` on hand-made result files: sweep lines, sizes, fonts, colours, tables, speed-up."""
import csv
import json
import struct
from pathlib import Path

import pytest

from bench.report import report
from bench.report.canvas import PALETTE, family_styles
from bench.report.sweeps import point_label, reference_run, sweep_lines
from bench.results import Store, records_file_text, text_digest


def run(spec, passes, accuracy, params, label=None):
    """A result summary as the runner writes it (only what the report reads)."""
    metrics = [{"name": "exact_accuracy", "label": "exact-board accuracy", "value": accuracy,
                "ci_low": accuracy - 0.03, "ci_high": accuracy + 0.03, "higher_is_better": True, "n": 100},
               {"name": "passes", "label": "passes", "value": passes, "ci_low": passes * 0.98,
                "ci_high": passes * 1.02, "higher_is_better": False, "n": 100}]
    return {"schema_version": 1, "task": "sudoku", "strategy": spec.split(":")[0], "label": label or spec,
            "headline": "exact_accuracy", "metrics": metrics, "n_samples": 100, "wall_seconds": 1.0,
            "model": {"id": "m1"}, "config": {"strategy_spec": spec, "strategy_params": params, "seed": 0,
                                              "limit": 100, "data_id": "d1"},
            "provenance": {"finished_at": "2026-01-01T00:00:00+00:00"}}


RUNS = [run("sequential:order=confidence", 50, 0.60, {"order": "confidence"}, "sequential"),
        run("eb:gamma=0.1,order=entropy", 10, 0.62, {"gamma": 0.1, "order": "entropy"}, "eb:gamma=0.1"),
        run("eb:gamma=1.0,order=entropy", 5, 0.40, {"gamma": 1.0, "order": "entropy"}, "eb:gamma=1"),
        run("topk:k=2,order=confidence", 25, 0.55, {"k": 2, "order": "confidence"}, "topk:k=2"),
        run("topk:k=5,order=confidence", 12, 0.45, {"k": 5, "order": "confidence"}, "topk:k=5"),
        run("topk:k=2,order=margin", 25, 0.57, {"k": 2, "order": "margin"}, "topk:k=2,order=margin")]


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    results, out = tmp_path_factory.mktemp("results"), tmp_path_factory.mktemp("reports")
    for i, r in enumerate(RUNS):
        (results / f"run{i}.json").write_text(json.dumps(r))
    report(results, out)
    return out


def png_size(path):
    return struct.unpack(">II", path.read_bytes()[16:24])


def test_one_and_two_column_figures_in_png_and_pdf_with_truetype_fonts(drawn):
    assert png_size(drawn / "pareto_sudoku.png")[0] == round(7.0 * 300)
    assert png_size(drawn / "pareto_sudoku_families.png")[0] == round(7.0 * 300)
    assert png_size(drawn / "pareto_sudoku_1col.png")[0] == round(3.3 * 300)
    for name in ("pareto_sudoku.pdf", "pareto_sudoku_1col.pdf"):
        pdf = (drawn / name).read_bytes()
        assert b"/FontFile2" in pdf and b"/Type3" not in pdf  # pdf.fonttype 42: embedded TrueType


def test_tables_as_markdown_csv_and_latex(drawn):
    assert "| eb:gamma=0.1 |" in (drawn / "table_sudoku.md").read_text()
    rows = list(csv.DictReader((drawn / "table_sudoku.csv").open()))
    assert [float(r["passes"]) for r in rows] == sorted((float(r["passes"]) for r in rows), reverse=True)
    assert float(rows[0]["exact_accuracy_ci_low"]) == pytest.approx(0.57)
    tex = (drawn / "table_sudoku.tex").read_text()
    assert tex.startswith(r"\begin{tabular}") and r"exact\_accuracy" in tex and r"\bottomrule" in tex


def with_records(folder, summary, exact, passes):
    """Write ``summary`` with per-input records (0/1 ``exact``; ``passes`` constant or per input) beside it."""
    name = summary["label"].replace(":", "_").replace("=", "_").replace(",", "_")
    summary = json.loads(json.dumps(summary))
    passes = passes if isinstance(passes, list) else [passes] * len(exact)
    text = records_file_text(summary["config"], [{"index": i, "exact": e, "passes": p}
                                                 for i, (e, p) in enumerate(zip(exact, passes))])
    summary.update(n_samples=len(exact), records_file=f"{name}.jsonl", records_sha256=text_digest(text))
    summary["metrics"][0]["per_input"] = {"statistic": "mean", "fields": ["exact"]}
    summary["metrics"][1]["per_input"] = {"statistic": "mean", "fields": ["passes"]}
    (folder / f"{name}.json").write_text(json.dumps(summary))
    (folder / f"{name}.jsonl").write_text(text)


def test_speedup_table_takes_the_cheapest_run_a_paired_test_shows_non_inferior(tmp_path):
    from bench.report import write_all_tables
    results = tmp_path / "results"
    results.mkdir()
    base = [1] * 300 + [0] * 300
    outcomes = {"sequential": base, "eb:gamma=0.1": base, "eb:gamma=1": [0] * 600,
                "topk:k=2": [1] * 200 + [0] * 400, "topk:k=5": [0] * 600}
    for r in RUNS[:5]:
        with_records(results, r, outcomes[r["label"]], r["metrics"][1]["value"])
    write_all_tables(results, tmp_path / "reports")
    rows = list(csv.DictReader((tmp_path / "reports" / "speedup_sudoku.csv").open()))
    by_line = {r["strategy"]: r for r in rows}
    assert by_line["eb"]["run"] == "eb:gamma=0.1" and by_line["eb"]["non-inferior (margin 0.01)"] == "yes"
    assert float(by_line["eb"]["passes / sequential"]) == pytest.approx(0.2) and float(by_line["eb"]["diff"]) == 0
    assert by_line["topk"]["run"] == "topk:k=2" and by_line["topk"]["non-inferior (margin 0.01)"] == "no"
    assert "sequential" not in by_line
    claims = (tmp_path / "reports" / "claims_sudoku.md").read_text()
    assert "`eb:gamma=0.1` (10.0 passes, 5.00x fewer than sequential; median 10, p90 10, max 10 passes; " in claims
    assert "is non-inferior to sequential within 0.01" in claims
    assert "`topk:k=2` (25.0 passes, 2.00x fewer than sequential; " in claims
    assert "is worse than sequential by more than 0.01" in claims


def test_a_line_with_no_validation_run_is_not_chosen_by_its_test_outcome(tmp_path):
    """With a validation split, a speed-up line run on test only (eb here) tests its run of most
    passes, even where a cheaper run of it would pass on test: that pick would be made on test."""
    from bench.report import write_all_tables
    base = [1] * 300 + [0] * 300
    outcomes = {"sequential": base, "eb:gamma=0.1": [0] * 600, "eb:gamma=1": base,
                "topk:k=2": base, "topk:k=5": [0] * 600}
    for folder, labels in (("results", outcomes), ("validation", ("sequential", "topk:k=2", "topk:k=5"))):
        (tmp_path / folder).mkdir()
        for r in RUNS[:5]:
            if r["label"] in labels:
                with_records(tmp_path / folder, r, outcomes[r["label"]], r["metrics"][1]["value"])
    write_all_tables(tmp_path / "results", tmp_path / "reports")
    by_line = {r["strategy"]: r for r in csv.DictReader((tmp_path / "reports" / "speedup_sudoku.csv").open())}
    assert by_line["eb"]["run"] == "eb:gamma=0.1" and by_line["eb"]["non-inferior (margin 0.01)"] == "no"
    assert by_line["topk"]["run"] == "topk:k=2"                       # chosen on validation


def test_cost_tables_give_the_passes_users_wait_for_in_batches(tmp_path):
    """Batched steps: each batch of the recorded batch size, inputs in their recorded order, waits for
    its slowest row; a run with a long tail gains less in batched steps than in mean passes."""
    from bench.report import write_all_tables
    results = tmp_path / "results"
    results.mkdir()
    base = [1] * 300 + [0] * 300
    tail = ([4] * 99 + [40]) * 6                         # mean 4.36, one slow row in every 100
    runs = {"sequential": (RUNS[0], [50] * 600), "eb:gamma=0.1": (RUNS[1], tail)}
    for summary, passes in runs.values():
        summary = dict(summary, config=dict(summary["config"], batch_size=100))
        summary["metrics"] = [dict(m, value=sum(passes) / 600) if m["name"] == "passes" else m
                              for m in summary["metrics"]]
        with_records(results, summary, base, passes)
    write_all_tables(results, tmp_path / "reports")
    rows = {r["run"]: r for r in csv.DictReader((tmp_path / "reports" / "cost_sudoku.csv").open())}
    eb = rows["eb:gamma=0.1"]
    assert (float(eb["median"]), float(eb["p90"]), float(eb["max"])) == (4, 4, 40)
    assert float(eb["batched steps"]) == 6 * 40 and float(rows["sequential"]["batched steps"]) == 6 * 50
    assert float(eb["speed-up over sequential (mean passes)"]) == pytest.approx(50 / 4.36)
    assert float(eb["speed-up (batched steps)"]) == pytest.approx(50 / 40)
    speedup = next(csv.DictReader((tmp_path / "reports" / "speedup_sudoku.csv").open()))
    assert float(speedup["batched_steps"]) == 240 and float(speedup["batched_speedup"]) == pytest.approx(1.25)
    claims = (tmp_path / "reports" / "claims_sudoku.md").read_text()
    assert "median 4, p90 4, max 40 passes; 240 batched steps in batches of 100, 1.25x fewer" in claims


def test_no_verdict_tables_without_per_input_records(drawn):
    assert not (drawn / "speedup_sudoku.md").exists() and not (drawn / "claims_sudoku.md").exists()


def test_sweep_lines_join_a_strategy_sorted_by_passes_and_split_on_non_numeric_parameters():
    lines = sweep_lines(RUNS)
    assert list(lines) == ["eb", "sequential", "topk order=confidence", "topk order=margin"]
    ablation = [run("mi:gamma=0.3,lam=1.0", 15, 0.6, {"gamma": 0.3, "lam": 1.0}),
                run("mi:gamma=1.0,lam=1.0", 8, 0.5, {"gamma": 1.0, "lam": 1.0}),
                run("mi:gamma=0.3,lam=0.0", 14, 0.6, {"gamma": 0.3, "lam": 0.0})]
    assert {k: len(v) for k, v in sweep_lines(ablation).items()} == {"mi lam=0.0": 1, "mi lam=1.0": 2}
    assert [r["label"] for r in lines["eb"]] == ["eb:gamma=1", "eb:gamma=0.1"]
    assert [point_label(r, lines["topk order=confidence"]) for r in lines["topk order=confidence"]] == ["k=5", "k=2"]
    assert point_label(lines["sequential"][0], lines["sequential"]) == ""


def test_a_parameter_left_empty_is_not_named_in_a_line():
    learned = [run("learned:T=8", 8, 0.5, {"T": 8, "policy": ""}),
               run("learned:T=16", 16, 0.6, {"T": 16, "policy": ""}),
               run("learned:T=8,policy=p.pt", 8, 0.55, {"T": 8, "policy": "p.pt"})]
    assert {k: len(v) for k, v in sweep_lines(learned).items()} == {"learned": 2, "learned policy=p.pt": 1}


def test_an_extra_metric_the_result_files_name_gets_its_own_pareto_figure(tmp_path):
    results, out = tmp_path / "results", tmp_path / "reports"
    results.mkdir()
    for i, r in enumerate(RUNS[:3]):
        judge = {"name": "judge_perplexity", "label": "UniRep judge perplexity", "value": 16.0 + i,
                 "ci_low": 15.9 + i, "ci_high": 16.1 + i, "higher_is_better": False, "n": 100}
        protein = dict(r, task="protein", headline="composition_jsd", extra_figures=["judge_perplexity"],
                       metrics=[dict(m, name="composition_jsd") if m["name"] == "exact_accuracy" else m
                                for m in r["metrics"]] + [judge])
        (results / f"run{i}.json").write_text(json.dumps(protein))
    report(results, out)
    assert (out / "pareto_protein.png").exists() and (out / "pareto_protein_judge_perplexity.pdf").exists()
    assert (out / "pareto_protein_judge_perplexity_1col.png").exists()
    assert not (out / "pareto_protein_longest_run.png").exists()


def test_error_bars_of_an_interval_beside_its_value_are_drawn_from_the_value():
    from bench.report.figures import error_bars
    runs = [{"metrics": [{"name": "window_jsd", "value": 0.010, "ci_low": 0.000, "ci_high": 0.008}]}]
    values, (below, above) = error_bars(runs, "window_jsd")
    assert values == [0.010] and below == [pytest.approx(0.010)] and above == [0.0]


def test_a_report_of_unchanged_results_writes_the_same_bytes(drawn, tmp_path):
    """PDFs carry no creation date, so regenerating reports changes no committed file."""
    results = tmp_path / "results"
    results.mkdir()
    for i, r in enumerate(RUNS):
        (results / f"run{i}.json").write_text(json.dumps(r))
    report(results, tmp_path / "again")
    for name in ("pareto_sudoku.pdf", "pareto_sudoku_1col.pdf", "pareto_sudoku.png", "pareto_sudoku_families.pdf"):
        assert (tmp_path / "again" / name).read_bytes() == (drawn / name).read_bytes(), name


def test_styles_go_to_the_family_names_in_sorted_order_whatever_their_order():
    styles = family_styles(["topk", "eb", "topk", "sequential"])
    assert list(styles) == ["eb", "sequential", "topk"] and len({s.colour for s in styles.values()}) == 3
    assert family_styles(["sequential", "topk", "eb"]) == styles


def test_25_families_get_25_different_colour_and_marker_pairs():
    styles = family_styles(f"family{i:02d}" for i in range(25))
    assert len(set(styles.values())) == 25
    assert {s.colour for s in styles.values()} <= set(PALETTE)


def test_without_a_declared_reference_the_line_with_the_most_passes_is_the_reference():
    assert reference_run(RUNS, "sequential")["label"] == "sequential"
    assert reference_run(RUNS, "absent") is None
    assert reference_run(RUNS)["label"] == "sequential"            # 50 passes: the most
    cheaper = [r for r in RUNS if r["strategy"] != "sequential"]
    assert reference_run(cheaper)["label"] == "topk:k=2,order=margin"   # its line: 25 passes on average


def test_a_task_without_settings_has_no_declared_reference():
    from bench.report.claims import default_verdicts

    class Run:
        def __init__(self, p):
            self.passes = lambda: p
    assert default_verdicts([Run(4.0), Run(50.0)]).reference is None


def copy_committed_run(pattern, folder, like=None):
    """Copy the first committed Sudoku run whose summary matches ``pattern`` (with ``like``: the first
    comparable with that summary) and its records into ``folder``/sudoku; its summary."""
    import shutil

    from bench.report.build import comparison_key
    for path in sorted(Path("results/sudoku").glob(pattern)):
        summary = json.loads(path.read_text())
        if like is None or comparison_key(summary) == comparison_key(like):
            (folder / "sudoku").mkdir(parents=True, exist_ok=True)
            for part in (path, path.with_suffix(".jsonl")):
                shutil.copy(part, folder / "sudoku")
            return summary
    raise AssertionError(f"no committed run {pattern}")


def test_a_report_without_learned_runs_draws_no_learned_curve_nor_an_empty_table(tmp_path):
    # issue 49: a folder of one task drew every shipped task's learned curves, and wrote (and the
    # page showed) a budget table of headers alone where no run reaches a budget
    reference = copy_committed_run("sequential_order_confidence-seed0-*.json", tmp_path / "results")
    copy_committed_run("topk_k_20_order_confidence-seed0-*.json", tmp_path / "results", like=reference)  # 3 passes
    report(tmp_path / "results", tmp_path / "out")
    written = {path.name for path in (tmp_path / "out").iterdir()}
    assert not {name for name in written if name.startswith("learned")}, written
    assert "claims_sudoku.md" in written and not {name for name in written if name.startswith("budgets_")}, written
    page = (tmp_path / "out" / "index.html").read_text()
    assert 'id="sudoku-claims"' in page and 'id="sudoku-budgets"' not in page


@pytest.mark.parametrize("pattern, policy_folder", [
    ("learned_T_5_*mode_sample_seed_0_init_False-seed0-*.json", "sudoku"),
    ("learned_T_10_*joint_order_policy_T10.pt_init_False-seed0-*.json", "sudoku joint")])
def test_a_report_of_one_learned_run_draws_only_its_policys_curves(tmp_path, pattern, policy_folder):
    # issue 49: one learned run drew the curves of every policy its task ships (elbo/, joint/, ...)
    from strategies.learned.figures import report_learned
    run_summary = copy_committed_run(pattern, tmp_path / "results")
    paths = report_learned(Store(tmp_path / "results"), tmp_path)
    budget = run_summary["config"]["strategy_params"]["T"]
    stem = f"learned_curves_{policy_folder.replace(' ', '_')}"
    assert {p.name for p in paths if p.suffix == ".png"} <= {f"{stem}.png", f"{stem}_attempts.png"}
    assert f"{stem}.png" in {p.name for p in paths}
    rows = [line.split(" | ") for line in paths[-1].read_text().splitlines()[4:] if line.startswith("|")]
    shipped = {(row[0].strip("| "), row[1]) for row in rows if "attempts" not in row[0]}
    assert shipped == {(policy_folder, f"order_policy_T{budget}.log")}, shipped
    assert all(row[2] == str(budget) for row in rows)
    assert report_learned(Store(tmp_path / "empty"), tmp_path, figures=False) == []
