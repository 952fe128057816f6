"""Figures a paper can print: the text-fit check can fail (a text off the canvas, two texts on
each other, a font under 7 pt), every figure `bench report` draws from the committed results
passes it, a bound is drawn as a range off every frontier, and reports/README.md shows each
figure with its caption."""
import json
from pathlib import Path

import matplotlib.figure
import matplotlib.pyplot as plt
import pytest

from bench.report import report
from bench.report.build import Folders, comparison_group, model_groups, other_model_groups, plugin_sections
from bench.report.canvas import caption_of, family_styles, layout_problems, legend_columns
from bench.report.figures import Panel, draw_figures, family_front, split_runs
from bench.report.model_size import draw_model_sizes
from bench.results import Store

REPO = Path(__file__).resolve().parent.parent


def test_the_check_finds_a_text_off_the_canvas_an_overlap_and_a_small_font():
    fig, ax = plt.subplots(figsize=(3.3, 2.5))
    assert layout_problems(fig) == []
    fig.text(0.98, 0.5, "runs off the right edge", fontsize=8)
    ax.text(0.5, 0.5, "first", fontsize=8, transform=ax.transAxes)
    ax.text(0.5, 0.5, "second", fontsize=8, transform=ax.transAxes)
    ax.set_title("tiny", fontsize=5)
    problems = layout_problems(fig)
    plt.close(fig)
    assert any("runs off the right edge" in p and "outside the canvas" in p for p in problems)
    assert any("'first' overlaps 'second'" in p for p in problems)
    assert any("'tiny' at 5 pt" in p for p in problems)


def test_tick_labels_of_ticks_beyond_the_view_limits_are_not_counted():
    fig, ax = plt.subplots(figsize=(3.3, 2.5))
    ax.plot([0.05, 0.62], [0.05, 0.62])   # the locator keeps ticks past both ends, which are not drawn
    ax.set_ylim(0.05, 0.62)
    assert layout_problems(fig) == []
    plt.close(fig)


def test_legend_columns_fit_the_width():
    labels = ["sequential", "eb", "learned", "margin", "mi", "upper bound (range)"]
    assert legend_columns(7.0, 7, labels) == 6
    assert 1 < legend_columns(3.3, 7, labels) < 6
    assert legend_columns(1.0, 7, labels) == 1


def every_committed_group():
    results = Store(REPO / "results").runs()
    return {task: comparison_group([r for r in results if r["task"] == task])[0]
            for task in sorted({r["task"] for r in results})}


def test_every_figure_of_the_committed_results_fits_its_canvas(tmp_path, monkeypatch):
    """Renders what `bench report` draws from results/ (Pareto figures and the plugins' MI and
    learned-order figures) and checks each just before it is saved."""
    problems, saved = {}, []
    original = matplotlib.figure.Figure.savefig

    def checked(fig, path, *args, **kwargs):
        if str(path).endswith(".png"):
            saved.append(Path(path).name)
            problems[Path(path).name] = layout_problems(fig)
        return original(fig, path, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", checked)
    groups = every_committed_group()
    others = other_model_groups(Folders.beside(REPO / "results"), groups)   # antibody on Sapiens too
    for task, group in groups.items():
        draw_figures(group, task, tmp_path)
        by_model = model_groups(task, group, others)
        draw_model_sizes(by_model, task, tmp_path, family_styles(r["strategy"] for runs in by_model.values()
                                                                 for r in runs))
    plugin_sections(REPO / "results", tmp_path)
    assert {"pareto_sudoku.png", "pareto_sudoku_1col.png", "pareto_sudoku_families.png", "mi_maps_sudoku.png",
            "learned_curves_sudoku.png", "model_size_antibody.png"} <= set(saved)
    assert {name: found for name, found in problems.items() if found} == {}


def test_a_sampled_order_kl_is_a_range_never_a_frontier_point():
    hmm = every_committed_group()["hmm_mdm"]
    panel = split_runs(hmm, "hmm_mdm", "kl_nats")
    sampled = [r for r in hmm if r["config"]["strategy_params"].get("mode") == "sample"]
    assert sampled and all(r in panel.bounded for r in sampled) and panel.lower == 0.0
    assert not any(r in panel.exact for r in sampled)
    learned = [r for r in panel.exact if r["strategy"] == "learned"]
    assert all(r["config"]["strategy_params"]["mode"] == "threshold" for r in family_front(learned, "kl_nats"))
    share = split_runs(hmm, "hmm_mdm", "share_over_1nat")
    assert share.left_out and not share.bounded           # no bound known: left out, and the caption says so
    sudoku = every_committed_group()["sudoku"]
    assert split_runs(sudoku, "sudoku", "exact_accuracy") == Panel("exact_accuracy", sudoku, [], [])


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    results, out = tmp_path_factory.mktemp("results"), tmp_path_factory.mktemp("reports")
    for path in sorted((REPO / "results" / "sudoku").glob("*.json"))[:6]:
        summary = json.loads(path.read_text())
        summary.pop("records_file", None)     # figures only: no verdicts without per-input records
        (results / path.name).write_text(json.dumps(summary))
    report(results, out)
    return out


def test_the_figure_readme_shows_every_figure_with_its_caption(reported):
    readme = (reported / "README.md").read_text()
    pngs = sorted(p.name for p in reported.glob("*.png"))
    assert pngs and all(f"![{Path(name).stem}]({name})" in readme for name in pngs)
    caption = caption_of(reported / "pareto_sudoku_families.png")
    assert "one panel per strategy family" in caption and caption in readme
    assert caption_of(reported / "pareto_sudoku.png") in readme


def test_the_declared_drawn_orders_agree_with_every_preset_spec_s_samples():
    """What figures read without loading strategies (bench.settings.register_drawn_order) must
    say what Strategy.samples() says, for every spec of every tier of every task."""
    from bench.registry import canonical, parse_strategy
    from bench.settings import all_task_settings, order_is_drawn
    specs = {spec for settings in all_task_settings().values() for tier in settings.tiers.specs.values()
             for spec in tier}
    assert any(spec.startswith("learned:") and "mode=sample" in spec for spec in specs)
    for spec in sorted(specs):
        strategy = parse_strategy(spec)
        params = dict(pair.split("=", 1) for pair in canonical(strategy).partition(":")[2].split(",") if pair)
        typed = {k: getattr(strategy, k) for k in params}
        assert order_is_drawn(strategy.name, typed) == strategy.samples(), spec


def test_a_legend_names_a_file_parameter_by_its_folder():
    from bench.report.figures import short_paths
    assert short_paths("init=False mode=sample policy=tasks/protein/weights/elbo/order_policy_T5.pt") == (
        "init=False mode=sample policy=elbo")
    assert short_paths("lam=0.0") == "lam=0.0"
