import json
from pathlib import Path

import pytest

from bench.errors import BenchError
from bench.presets import PRESETS, plan, sweep_of, unswept
from bench.registry import STRATEGIES, TASKS, canonical, load_plugins, parse_strategy
from bench.results import Store
from bench.run.cell import Run
from bench.settings import TaskSettings, all_task_settings, calibrated_specs, register_task_settings, verdicts_for
from conftest import ROOT, run_cli


def test_no_preset_runs_the_default_sweep_of_the_headline_task_on_all_data():
    (only,) = plan()
    declared = all_task_settings()["sudoku"]
    assert declared.tiers.headline and (only.task, only.limit) == ("sudoku", None)
    assert only.seeds == declared.tiers.seeds["default"] == (0, 1, 2)   # runs that draw nothing run seed 0 alone
    assert only.specs == list(declared.tiers.specs["default"]) + calibrated_specs(declared)


def test_ci_covers_every_family_and_task_on_few_inputs_and_paper_adds_seeds():
    """Issue 52: a regression in any strategy family or task must be able to fail the gate, so
    the ci tier runs each family at one setting on every task a tier runs (gsm waits for its
    model), on a few inputs, and .ci/gate_runs adds an ``hf:`` checkpoint."""
    load_plugins()
    ci = {p.task: p for p in plan("ci")}
    quick_tasks = {name for name, s in all_task_settings().items() if "quick" in s.tiers.specs}
    assert set(ci) == quick_tasks >= {"sudoku", "protein", "hmm", "hmm_mdm", "antibody"}
    assert unswept(STRATEGIES, "ci") == unswept(STRATEGIES, "quick")   # a family a task's quick tier runs
    assert all(p.seeds == (0,) and p.limit <= 200 for p in ci.values())
    for name, p in ci.items():   # every family the task's quick tier runs, the exact oracle where cheap
        assert {s.partition(":")[0] for s in sweep_of(name, "quick")} <= {s.partition(":")[0] for s in p.specs}
    gate_runs = (Path(__file__).resolve().parent.parent / ".ci" / "gate_runs").read_text()
    assert "--preset ci --out" in gate_runs and '--model "hf:$hf"' in gate_runs
    paper = {p.task: p for p in plan("paper")}
    assert set(paper) >= {"sudoku", "protein", "hmm", "hmm_mdm"}
    assert all(p.limit == (48 if p.task == "antibody" else None) and p.specs == sweep_of(p.task, "paper")
               for p in paper.values())
    assert all(p.seeds == (0, 1, 2) for p in paper.values())   # the runner keeps only seed 0 of runs that draw nothing


def test_tiers_nest_quick_in_every_family_and_default_in_paper():
    """quick runs every strategy family a task's paper grid runs, at one setting, on fewer inputs;
    default runs only paper specs, on the paper's inputs (its committed results are a subset of the paper's):
    the full data, but for a task whose model is too slow for it on 2 cores (antibody: 48 test domains)."""
    for name, declared in all_task_settings().items():
        paper, default, quick = (declared.tiers.specs[tier] for tier in ("paper", "default", "quick"))
        assert set(default) <= set(paper), name
        families = {spec.partition(":")[0] for spec in paper}
        assert families - {spec.partition(":")[0] for spec in quick} <= {"mi_oracle"}, name
        assert declared.tiers.limits.get("default") == declared.tiers.limits.get("paper"), name
        assert declared.tiers.limits.get("paper") is None or name == "antibody", name
    assert list(PRESETS) == ["quick", "default", "paper", "ci", "validation", "retrained"]


def test_a_task_declares_its_settings_once_and_names_known_tiers_and_ablations():
    with pytest.raises(BenchError, match="task settings 'sudoku' is registered twice"):
        register_task_settings("sudoku", {"default": ["sequential"]})
    with pytest.raises(BenchError, match="unknown preset tiers nightly; tiers are quick, default, paper, ci"):
        register_task_settings("a_new_task", {"nightly": ["sequential"]})
    assert verdicts_for("sudoku").reference == "sequential" and len(verdicts_for("sudoku").ablations) == 15
    assert verdicts_for("a_task_without_settings") is None
    assert isinstance(all_task_settings()["protein"], TaskSettings)


def test_a_tasks_settings_keep_each_keyword_in_the_part_its_readers_take(toy_plugin):
    from bench.settings import (
        BudgetCalibration,
        Claims,
        DrawnOrders,
        Knob,
        SecondReference,
        Tiers,
        Validation,
        Verdicts,
    )
    validation, verdicts = Validation(seed=3), Verdicts((8,), 0.1, "sequential")
    calibration, second = BudgetCalibration((Knob("eb", "gamma", 1, 10),), "x.json"), SecondReference("a", "b", None)
    s = register_task_settings("a_nested_task", {"default": ["eb"]}, limits={"default": 5}, seeds={"default": [1, 2]},
                               headline=True, validation=validation, verdicts=verdicts, ablations=["eb_vs_topk"],
                               calibration=calibration, second_reference=second, external_model=True,
                               order_bounds={"kl": 0.0}, order_lower={"kl": "kl_low"}, figure_references=["eb"])
    assert s.tiers == Tiers({"default": ["eb"]}, {"default": 5}, {"default": (1, 2)}, True, validation)
    assert s.claims == Claims(verdicts, ("eb_vs_topk",), calibration, second, True)
    assert s.drawn == DrawnOrders({"kl": 0.0}, {"kl": "kl_low"}) and s.figure_references == ("eb",)
    assert not hasattr(s, "specs")   # one name per field: the nested one


def test_every_task_runs_both_sides_of_its_remasking_ablations():
    """Each task's paper tier runs the re-masking samplers and the same rules without re-masking
    (ReMDM at eta 0; LLaDA's confidence order) at the same steps, so the ablations are tested."""
    from strategies.schedules.presets import REMASKING
    load_plugins()
    for name, declared in all_task_settings().items():
        assert set(REMASKING) <= set(declared.claims.ablation_keys), name
        runs = [parse_strategy(spec) for spec in sweep_of(name, "paper")]
        for ablation in (a for a in verdicts_for(name).ablations if a.strategy in ("remdm", "rcr", "dplm")):
            sides = [[r for r in runs if r.name == strategy and all(getattr(r, k) == v for k, v in where.items())]
                     for strategy, where in ((ablation.strategy, ablation.where),
                                             (ablation.without, ablation.without_where))]
            assert all(sides), (name, ablation.idea)
            assert {r.steps for r in sides[0]} <= {r.steps for r in sides[1]}, (name, ablation.idea)


def test_sudoku_default_pairs_each_newer_rule_with_its_ablation_run_by_run(monkeypatch):
    """Sudoku's default tier runs the newer rules (``newer_sweep``) and their ablations at the same
    swept parameter, and `bench report` pairs every run of each rule with one of its ablation: P2 at
    eta 1 and Prophet at its thresholds with LLaDA's order at the same steps, Saber with
    backtrack=false at the same n, CreditDecoding with alpha 0 at the same threshold."""
    from types import SimpleNamespace

    import bench.report.ablations as report_ablations
    from bench.registry import strategy_params
    from bench.settings import ABLATIONS
    load_plugins()
    monkeypatch.setattr(report_ablations, "paired_difference", lambda a, b: None)
    runs = []
    for spec in sweep_of("sudoku", "default"):
        strategy = parse_strategy(spec)
        runs.append(SimpleNamespace(label=canonical(strategy), quality=None, passes=lambda: 0.0, summary={
            "strategy": strategy.name, "config": {"strategy_params": strategy_params(strategy)}}))
    keys = ("remasking_p2", "early_commit_prophet", "remasking_saber", "credit_history")
    assert set(keys) <= set(all_task_settings()["sudoku"].claims.ablation_keys)
    for key in keys:
        with_idea, without, pairs = report_ablations.ablation_pairs(runs, ABLATIONS[key])
        assert len(with_idea) == len(pairs) == 3, key
        for pair in pairs:
            idea, ablation = (parse_strategy(pair[side]) for side in ("run", "ablation"))
            swept = {"p2": "steps", "prophet": "steps", "saber": "n", "credit": "threshold"}[idea.name]
            assert getattr(idea, swept) == getattr(ablation, swept), (key, pair)


def test_command_line_overrides_the_preset():
    (sudoku,) = plan("ci", tasks="sudoku", strategies="topk:k=9,order=margin,eb:gamma=2", limit=5, seed=3)
    assert (sudoku.specs, sudoku.limit, sudoku.seeds) == (["topk:k=9,order=margin", "eb:gamma=2"], 5, (3,))
    assert plan("paper", tasks="protein", seed=1)[0].seeds == (1,)


@pytest.mark.parametrize("kwargs,message", [
    ({"preset_name": "defualt"}, "unknown preset 'defualt' (did you mean 'default'?); available: quick, default, "
                                 "paper, ci"),
    ({"tasks": "sudok"}, "did you mean 'sudoku'"),
    ({"limit": 0}, "--limit must be at least 1"),
])
def test_bad_presets_and_overrides_are_one_line_errors(kwargs, message):
    with pytest.raises(BenchError) as err:
        plan(**kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_every_preset_spec_parses_and_every_task_has_a_sweep():
    load_plugins()
    assert set(all_task_settings()) <= set(TASKS)
    assert sweep_of("a_task_just_added") == sorted(STRATEGIES)   # no sweep named: every strategy at its default
    for declared in all_task_settings().values():
        for specs in declared.tiers.specs.values():
            for spec in specs:
                parse_strategy(spec)
    assert unswept(["sequential", "topk", "brand_new"]) == ["brand_new"]
    assert {spec.split(":")[0] for spec in sweep_of("sudoku")} >= {"sequential", "topk", "margin", "eb", "threshold"}


def test_no_tier_names_one_run_twice():
    """`bench run` refuses a list naming one run twice, so every tier of every task must resolve
    to distinct runs (the antibody paper tier once named the confidence order at 8 steps twice)."""
    load_plugins()
    for name, declared in all_task_settings().items():
        for tier in declared.tiers.specs:
            runs = [canonical(parse_strategy(spec)) for spec in sweep_of(name, tier)]
            twice = sorted({run for run in runs if runs.count(run) > 1})
            assert not twice, (name, tier, twice)


def test_the_default_preset_finds_the_committed_sudoku_results():
    """The preset resolves to the same run identity (file name and config) the committed files have."""
    from tasks.sudoku.task import SudokuTask
    task = SudokuTask()
    model, eval_set = task.load_model(), task.eval_set(None, 0)
    (sudoku,) = plan("default", tasks="sudoku")
    committed = {"sequential", "topk:k=2", "topk:k=7", "eb:gamma=0.1", "eb:gamma=1", "threshold:tau=0.7"}
    for spec in committed & set(sudoku.specs):
        config = Run(task, model, eval_set, parse_strategy(spec), spec, 0, sudoku.limit, batch_size=250).config
        summary = Store(ROOT / "results").locate(config)
        assert summary is not None, spec
        assert json.loads(Path(summary).read_text())["config"] == config, spec


def test_cli_runs_a_preset_with_overrides(tmp_path):
    proc = run_cli("run", "--preset", "ci", "--tasks", "sudoku", "--strategies", "topk:k=9", "--limit", 3,
                   "--seed", 1, "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    (summary,) = (tmp_path / "sudoku").glob("*.json")
    config = json.loads(summary.read_text())["config"]
    assert (config["limit"], config["seed"], config["strategy_spec"]) == (3, 1, "topk:k=9,order=confidence")


def test_cli_unknown_preset_is_one_line():
    proc = run_cli("run", "--preset", "nightly")
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "error: unknown preset 'nightly'; available: quick, default, paper, ci, validation, retrained")


def test_list_names_presets_and_strategies_missing_from_the_sweep():
    proc = run_cli("list")
    assert proc.returncode == 0 and "presets" in proc.stdout and "paper" in proc.stdout and "quick" in proc.stdout
    missing = unswept(STRATEGIES)
    assert ("not in any task's paper sweep" in proc.stdout) == bool(missing)


def test_declared_budgets_must_be_positive_and_the_headline_task_runs_first():
    from bench.settings import Verdicts
    with pytest.raises(BenchError, match="declares pass budgets \\(\\); give at least one"):
        register_task_settings("a_task_with_no_budgets", {"default": ["sequential"]}, verdicts=Verdicts((), 0.1))
    assert [p.task for p in plan("default")][0] == "sudoku"


def test_the_retrained_tier_reads_retrained_helper_files_that_ship():
    """Each spec of the retrained tier names a helper file by path, and each such file (and, for
    init=true, the initialisation beside it) is committed: the tier runs on a fresh clone."""
    from bench.presets import sweep_of
    from bench.report.retrained import helper_folder
    specs = sweep_of("hmm", "retrained")
    assert len(specs) == 60
    for spec in specs:
        params = dict(part.split("=", 1) for part in spec.partition(":")[2].split(","))
        path = Path(params.get("estimator") or params["policy"])
        if params.get("init") == "true":
            path = path.with_name(path.stem + "_init.pt")
        assert path.is_file(), spec
        assert helper_folder({"config": {"strategy_params": params}}) in {
            "tasks/hmm/weights/exact/seeds/1", "tasks/hmm/weights/exact/seeds/2"}


def test_model_settings_need_the_task_s_settings_first():
    from bench.settings import register_model_settings
    with pytest.raises(BenchError, match="register_task_settings first"):
        register_model_settings("no_such_task_here", "m", {"default": ["sequential"]})
