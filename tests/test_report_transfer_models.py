"""transfer.md and the model-size figure on a task run on two published models (issue 50 item 5):
a column per model, whether the ordering holds on both, whether the two models agree, "not run"
where the second model's folder is absent, the --model-results flag and model_size_<task>."""
import json
from types import SimpleNamespace

import matplotlib.figure
import pytest

from bench.report.build import Folders, other_model_groups
from bench.report.canvas import caption_of, layout_problems
from conftest import run_cli

IDEA = "EB-Sampler against top-k"
NONE, BOTH = {"better": [], "worse": []}, {"better": ["8"], "worse": ["16"]}
BETTER, WORSE = {"better": ["8"], "worse": []}, {"better": [], "worse": ["16"]}


def shown_at(diff, p_holm, budget):
    return {"diff": diff, "ci_low": diff - 0.1, "ci_high": diff + 0.1, "p": p_holm / 2, "p_holm": p_holm,
            "outside": 0.0, "budget": budget}


def verdict(task, at_budgets):
    return SimpleNamespace(task=task, headline="recovery", higher_is_better=True, ablations=[(IDEA, [], at_budgets)])


@pytest.fixture
def two_models(monkeypatch):
    """Task 'own' (trained here) and 'ext' (external, its own model 'Big' and another, 'Small')."""
    import bench.report.transfer as transfer
    from bench.settings import Claims
    claims = {"own": Claims(), "ext": Claims(external_model=True, model_label="Big",
                                             other_models={"Small": "small/results"})}
    settings = {task: SimpleNamespace(claims=c) for task, c in claims.items()}
    monkeypatch.setattr(transfer, "all_task_settings", lambda: settings)
    return transfer


def table_row(text):
    return [cell.strip() for cell in next(line for line in text.splitlines() if line.startswith(f"| {IDEA}"))
            .strip("|").split("|")]


def test_each_model_gets_its_column_its_verdict_and_whether_both_agree(two_models):
    own, big = verdict("own", [shown_at(0.2, 0.01, 8)]), verdict("ext", [shown_at(0.1, 0.01, 4)])
    small = verdict("ext", [shown_at(-0.1, 0.01, 4), shown_at(0.05, 0.5, 8)])
    text = two_models.transfer_markdown([big, own], {"ext": {"Small": ([{}], 0, small)}})
    header = table_row(text.replace("| comparison |", f"| {IDEA} |", 1))
    assert header[1:] == ["own", "ext: Big", "ext: Small", "other tasks' ordering", "holds on Big", "holds on Small",
                          "on both", "Big and Small agree"]
    assert table_row(text)[1:] == ["better at 8 (of 1 tested)", "better at 4 (of 1 tested)",
                                   "worse at 4 (of 2 tested)", "better", "**holds**", "**reversed**",
                                   "**reversed** on Small", "**opposite**: Big better, Small worse"]
    assert f"- {IDEA}, on ext (Big):\n  - 4 passes: +0.1 [0, 0.2] recovery" in text
    assert f"- {IDEA}, on ext (Small):\n  - 4 passes: -0.1 [-0.2, 0] recovery" in text
    assert "[model_size_ext.png](model_size_ext.png)" in text


def test_the_figure_link_is_a_link_on_the_page():
    from bench.report.page import markdown_html
    assert markdown_html("see [model_size_ext.png](model_size_ext.png).") == \
        '<p>see <a href="model_size_ext.png">model_size_ext.png</a>.</p>'
    assert markdown_html("[x](https://host/y)") == "<p>[x](https://host/y)</p>"   # no link to a host


def test_a_second_model_without_runs_is_not_run_and_no_figure_is_linked(two_models):
    own, big = verdict("own", [shown_at(0.2, 0.01, 8)]), verdict("ext", [shown_at(0.1, 0.01, 4)])
    text = two_models.transfer_markdown([own, big], {"ext": {"Small": None}})
    assert table_row(text)[3:] == ["not run", "better", "**holds**", "not run", "not run on Small", "not run on Small"]
    assert f"- {IDEA}, on ext (Small): not run." in text and "model_size_ext" not in text
    assert table_row(two_models.transfer_markdown([own, big]))[3] == "not run"   # no others given: the same


@pytest.mark.parametrize("big, small, said", [
    (BETTER, BETTER, "**agree**: both better"),
    (WORSE, WORSE, "**agree**: both worse"),
    (BETTER, NONE, "one shown: Big better, Small none shown"),
    (NONE, WORSE, "one shown: Big none shown, Small worse"),
    (BETTER, WORSE, "**opposite**: Big better, Small worse"),
    (NONE, NONE, "neither shown"),
    (BOTH, BETTER, "partly: Big mixed, Small better"),
    (BETTER, None, "not run on Small"),
])
def test_whether_the_two_models_agree(big, small, said):
    from bench.report.transfer import models_agree
    assert models_agree({"Big": big, "Small": small}) == said


@pytest.mark.parametrize("ordering, big, small, said", [
    ("better", BETTER, BETTER, "**holds** on both"),
    ("better", BETTER, NONE, "holds on Big only"),
    ("worse", BETTER, WORSE, "**reversed** on Big"),
    ("better", NONE, NONE, "not shown on either"),
    ("better", BETTER, None, "not run on Small"),
    ("mixed", BETTER, BETTER, "no ordering to carry"),
])
def test_whether_the_ordering_holds_on_both_models(ordering, big, small, said):
    from bench.report.transfer import on_every_model
    assert on_every_model(ordering, {"Big": big, "Small": small}) == said


def test_the_second_models_folder_is_declared_beside_the_results_and_absent_means_not_run(tmp_path):
    folders = Folders.beside(tmp_path / "results")
    assert folders.models["Sapiens"].results == tmp_path / "antibody_sapiens" / "results"
    assert folders.models["Sapiens"].validation == tmp_path / "antibody_sapiens" / "validation"
    assert other_model_groups(folders, ["antibody", "sudoku"]) == {"antibody": {"Sapiens": None}}
    given = Folders.beside(tmp_path / "results", models={"Sapiens": tmp_path / "elsewhere" / "runs"})
    assert given.models["Sapiens"].validation == tmp_path / "elsewhere" / "validation"


def test_a_missing_or_unknown_model_results_folder_is_one_line_exit_2(tmp_path):
    missing = run_cli("report", "--results", tmp_path, "--out", tmp_path / "out",
                      "--model-results", f"Sapiens={tmp_path / 'nope'}")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "--model-results Sapiens=" in missing.stderr and "no such folder" in missing.stderr
    unknown = run_cli("report", "--results", tmp_path, "--out", tmp_path / "out", "--model-results", f"Esm={tmp_path}")
    assert unknown.returncode == 2 and "no task declares a model of that label (declared: Sapiens)" in unknown.stderr
    assert not (tmp_path / "out").exists()


def antibody_run(spec, passes, recovery, n_params, model_id):
    """An antibody result summary (what the figures read; no records, so no verdicts)."""
    name, _, given = spec.partition(":")
    params = dict(pair.split("=") for pair in given.split(",") if pair)
    metric = {"name": "recovery", "label": "amino-acid recovery", "value": recovery, "ci_low": recovery - 0.02,
              "ci_high": recovery + 0.02, "higher_is_better": True, "n": 40}
    cost = {"name": "passes", "label": "passes", "value": passes, "ci_low": passes * 0.98, "ci_high": passes * 1.02,
            "higher_is_better": False, "n": 40}
    return {"schema_version": 1, "task": "antibody", "strategy": name, "label": spec, "headline": "recovery",
            "metrics": [metric, cost], "n_samples": 40, "wall_seconds": 1.0,
            "model": {"id": model_id, "n_params": n_params},
            "config": {"strategy_spec": spec, "strategy_params": params, "seed": 0, "limit": 40, "data_id": "d1"},
            "provenance": {"finished_at": "2026-01-01T00:00:00+00:00"}}


def write_runs(folder, n_params, model_id, shift):
    folder.mkdir(parents=True)
    specs = [("sequential", 80, 0.5), ("eb:gamma=1", 10, 0.45), ("eb:gamma=10", 4, 0.4), ("topk:k=4", 20, 0.42)]
    for i, (spec, passes, recovery) in enumerate(specs):
        (folder / f"run{i}.json").write_text(json.dumps(antibody_run(spec, passes, recovery + shift, n_params,
                                                                     model_id)))


def test_bench_report_draws_both_models_side_by_side_only_where_both_have_runs(tmp_path, monkeypatch):
    from bench.report import report
    write_runs(tmp_path / "results", 25_759_769, "big", 0.0)
    write_runs(tmp_path / "small" / "results", 1_135_666, "small", 0.1)
    problems, original = {}, matplotlib.figure.Figure.savefig

    def checked(fig, path, *args, **kwargs):
        problems[str(path)] = layout_problems(fig)
        return original(fig, path, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", checked)
    folders = Folders.beside(tmp_path / "results", models={"Sapiens": tmp_path / "small" / "results"})
    report(tmp_path / "results", tmp_path / "both", folders=folders)
    png = tmp_path / "both" / "model_size_antibody.png"
    assert png.is_file() and png.with_suffix(".pdf").is_file() and problems[str(png)] == []
    caption = caption_of(png)
    assert "Sapiens (1.14M parameters), AntiBERTy (25.8M parameters)" in caption   # smallest first
    assert "model_size_antibody.png" in (tmp_path / "both" / "README.md").read_text()
    report(tmp_path / "results", tmp_path / "one")                     # antibody_sapiens/ absent beside it
    assert not (tmp_path / "one" / "model_size_antibody.png").exists()
