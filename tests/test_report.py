"""`bench report` on hand-made result files: sweep lines, sizes, fonts, colours, tables, speed-up."""
import csv
import json
import struct

import matplotlib.pyplot as plt
import pytest

from bench.report import LAYOUTS, draw_lines, label_points, report, strategy_color
from bench.sweeps import point_label, speedup_rows, sweep_lines


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
    assert png_size(drawn / "pareto_sudoku.png")[0] == round(6.8 * 300)
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


def test_speedup_table_takes_the_cheapest_run_at_sequential_quality_or_the_closest(drawn):
    header, rows = speedup_rows(RUNS)
    by_line = {row[0]: row for row in rows}
    assert by_line["eb"][1:3] == ["eb:gamma=0.1", "10.00"] and by_line["eb"][-1] == "yes"
    assert by_line["eb"][header.index("passes / sequential")] == "0.200"
    assert by_line["topk order=confidence"][1] == "topk:k=2" and by_line["topk order=confidence"][-1] == "no (closest)"
    assert rows[0][0] == "eb" and by_line["sequential"][header.index("speed-up")] == "1.00x"
    numbers = list(csv.DictReader((drawn / "speedup_sudoku.csv").open()))
    assert {r["strategy"]: float(r["passes / sequential"]) for r in numbers}["eb"] == pytest.approx(0.2)
    assert (drawn / "speedup_sudoku.md").exists() and (drawn / "speedup_sudoku.tex").exists()


def test_a_speedup_table_needs_a_sequential_run():
    assert speedup_rows(RUNS[1:]) is None


def test_sweep_lines_join_a_strategy_sorted_by_passes_and_split_on_non_numeric_parameters():
    lines = sweep_lines(RUNS)
    assert list(lines) == ["eb", "sequential", "topk order=confidence", "topk order=margin"]
    assert [r["label"] for r in lines["eb"]] == ["eb:gamma=1", "eb:gamma=0.1"]
    assert [point_label(r, lines["topk order=confidence"]) for r in lines["topk order=confidence"]] == ["k=5", "k=2"]
    assert point_label(lines["sequential"][0], lines["sequential"]) == ""


def test_each_line_has_its_strategy_colour_and_overlapping_labels_are_dropped():
    fig, ax = plt.subplots()
    lines = sweep_lines(RUNS)
    draw_lines(ax, lines, "exact_accuracy", LAYOUTS[0])
    colours = {c.get_label(): c.lines[0].get_color() for c in ax.containers}
    assert colours["eb"] == strategy_color("eb") and colours["topk order=margin"] == strategy_color("topk")
    crowd = [run(f"topk:k={k},order=confidence", 20, 0.5, {"k": k, "order": "confidence"}) for k in (3, 4, 5)]
    crowd[0]["metrics"][1]["value"] = 19  # not identical passes, still overlapping labels
    ax.set_xscale("log")
    label_points(ax, {"topk": sorted(crowd, key=lambda r: r["metrics"][1]["value"])}, "exact_accuracy", LAYOUTS[0])
    assert len(ax.texts) == 1
    plt.close(fig)


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
