"""`bench report` pairs a fine-tuned denoiser's runs with its base model's (bench.report.denoisers)."""
from bench.report import write_all_tables
from tests.test_report import run, with_records

N = 400


def base_and_tuned(results):
    """Runs of base model m1 and of m2 (fine-tuned from m1) on the same 400 inputs: on m1 the order
    equals eb there; on m2 the order solves 100 more inputs than m2's eb."""
    some = [1] * 100 + [0] * 300
    more = [1] * 200 + [0] * 200
    specs = [("eb:gamma=1.0,order=entropy", {"gamma": 1.0, "order": "entropy"}, 6.0),
             ("eb:gamma=2.0,order=entropy", {"gamma": 2.0, "order": "entropy"}, 4.0),
             ("margin:k=10", {"k": 10}, 6.0), ("margin:k=15", {"k": 15}, 4.0)]
    for model, order_outcome in (("m1", some), ("m2", more)):
        for spec, params, passes in specs:
            summary = run(spec, passes, 0.25, params, label=f"{spec} {model}")
            summary["model"] = {"id": model, **({"derived_from": "m1"} if model == "m2" else {})}
            summary["config"]["model_id"] = model   # as a run records it: the model is part of its identity
            summary["label"] = spec if model == "m1" else f"{spec}@{model}"
            with_records(results, summary, some, passes)
        order = {"T": 5, "mode": "sample", "init": False, "policy": f"{model}/order_policy_T5.pt"}
        summary = run("learned:T=5", 5.0, sum(order_outcome) / N, order)
        summary["model"] = {"id": model, **({"derived_from": "m1"} if model == "m2" else {})}
        summary["config"]["model_id"] = model
        summary["label"] = "learned:T=5" if model == "m1" else "learned:T=5@m2"
        with_records(results, summary, order_outcome, 5.0)


def test_the_fine_tuned_denoisers_file_pairs_its_runs_with_the_base_models(tmp_path):
    results, out = tmp_path / "results", tmp_path / "reports"
    results.mkdir()
    base_and_tuned(results)
    written = {p.name for p in write_all_tables(results, out)}
    assert "joint_sudoku.md" in written
    text = (out / "joint_sudoku.md").read_text()
    assert "**Fine-tuned model m2, from frozen model m1**" in text
    assert ("frozen denoiser: `learned:T=5` (5.00 passes, exact_accuracy 0.250) **is not shown to differ from** "
            "`eb`") in text
    assert "fine-tuned denoiser: `learned:T=5@m2` (5.00 passes, exact_accuracy 0.500) **beats** `margin`" in text
    assert ("`learned:T=5@m2` on the fine-tuned denoiser minus `learned:T=5` on the frozen one, input by input: "
            "+0.25 [") in text                                              # paired across the policy files
    assert "Multiplicity: the 7 p-values below are one family" in text     # 2 x 2 order tests, 1 pair, 2 lines
    assert "not reached" not in text
    main = (out / "table_sudoku.md").read_text()
    assert "@m2" not in main                                                # the base model's table alone
