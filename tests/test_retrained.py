"""Ablations checked on helpers retrained under other seeds (bench.report.retrained, issue 29 item 9)."""
import numpy as np
import pytest

from bench.settings import Ablation

MI_TERM = Ablation("the MI term", "mi", {"lam": 1.0}, "mi", {"lam": 0.0})
TRAINED = Ablation("the trained policy", "learned", {"init": False, "mode": "sample", "policy": ""},
                   "learned", {"init": True, "mode": "sample", "policy": ""})


def run(strategy, params, passes, values):
    from bench.paired import PerInput
    from bench.report.verdicts import ScoredRun
    label = strategy + ":" + ",".join(f"{k}={v}" for k, v in params.items())
    summary = {"label": label, "strategy": strategy, "config": {"strategy_params": params}}
    return ScoredRun(summary, PerInput("accuracy", "mean", [np.asarray(values, float)], True, {}),
                     PerInput("passes", "mean", [np.full(len(values), float(passes))], False, {}))


def outcomes(p, seed, n=400):
    return (np.random.default_rng(seed).random(n) < p).astype(float)


def test_a_run_names_its_helper_folder_by_the_path_of_its_file():
    from bench.report.retrained import helper_folder
    on_seed = run("mi", {"gamma": 2.0, "lam": 1.0, "estimator": "w/seeds/1/mi_estimator.pt"}, 8, [1.0])
    assert helper_folder(on_seed.summary) == "w/seeds/1"
    assert helper_folder(run("mi", {"gamma": 2.0, "lam": 1.0, "estimator": ""}, 8, [1.0]).summary) is None


def test_a_side_that_reads_no_retrained_helper_keeps_the_tasks_own_runs():
    """The MI term on seed 1's estimator is compared with the task's lam=0 runs (lam=0 reads no
    estimator); the trained policy of seed 1 with seed 1's own initialisation, never the shipped one."""
    from bench.report.retrained import replicate_sides
    own = [run("mi", {"gamma": g, "lam": 0.0, "estimator": ""}, p, outcomes(0.5, 1)) for g, p in ((2.0, 16), (8.0, 8))]
    own += [run("learned", {"T": 8, "mode": "sample", "policy": "", "init": init}, 8, outcomes(0.5, 2))
            for init in (False, True)]
    folder = "w/seeds/1"
    retrained = [run("mi", {"gamma": g, "lam": 1.0, "estimator": f"{folder}/mi_estimator.pt"}, p, outcomes(0.7, 3))
                 for g, p in ((2.0, 16), (8.0, 8))]
    retrained += [run("learned", {"T": 8, "mode": "sample", "policy": f"{folder}/order_policy_T8.pt", "init": init},
                      8, outcomes(0.5, 4)) for init in (False, True)]
    idea, without = replicate_sides(own, retrained, MI_TERM)[folder]
    assert [r.summary["config"]["strategy_params"]["estimator"] for r in idea] == [f"{folder}/mi_estimator.pt"] * 2
    assert [r.summary["config"]["strategy_params"]["lam"] for r in without] == [0.0, 0.0]
    idea, without = replicate_sides(own, retrained, TRAINED)[folder]
    assert [r.summary["config"]["strategy_params"]["init"] for r in idea + without] == [False, True]
    assert {r.summary["config"]["strategy_params"]["policy"] for r in idea + without} == {
        f"{folder}/order_policy_T8.pt"}


def test_each_retrained_folder_gets_its_own_tests_at_the_budgets():
    from bench.report.retrained import retrained_ablations
    from bench.report.verdicts import joint_indices
    own = [run("mi", {"gamma": g, "lam": 0.0, "estimator": ""}, p, outcomes(0.4, 10 + p)) for g, p in ((2.0, 16),
                                                                                                     (8.0, 8))]
    retrained = [run("mi", {"gamma": g, "lam": 1.0, "estimator": f"w/seeds/{s}/mi_estimator.pt"}, p,
                     outcomes(quality, 20 + p))
                 for s, quality in ((1, 0.8), (2, 0.4)) for g, p in ((2.0, 16), (8.0, 8))]
    out = retrained_ablations(own, retrained, [MI_TERM], joint_indices(own), (8, 12, 16))
    (first, pairs_1, budgets_1), (second, _, budgets_2) = out["the MI term"]
    assert (first, second) == ("w/seeds/1", "w/seeds/2")
    assert [t["budget"] for t in budgets_1] == [8, 12, 16]
    # both sides' runs sit exactly at 8 and 16 passes: those are the budget tests, not also pairs
    assert [t["pchip"] is None for t in budgets_1] == [True, False, True] and pairs_1 == []
    assert all(t["diff"] > 0.3 and t["p"] < 0.001 for t in budgets_1)
    assert all(abs(t["diff"]) < 0.1 for t in budgets_2)


def test_a_shown_claim_holds_only_where_every_retrained_helper_agrees():
    from bench.report.retrained import holds
    shown = {"diff": 0.1, "p_holm": 0.01, "outside": 0.0}
    agree = {"diff": 0.08, "p": 0.02, "outside": 0.0}
    assert holds(shown, [agree, agree]) is True
    assert holds(shown, [agree, {"diff": -0.05, "p": 0.01, "outside": 0.0}]) is False
    assert holds(shown, [agree, {"diff": 0.05, "p": 0.2, "outside": 0.0}]) is False
    assert holds(shown, [agree, None]) is None       # a helper whose lines do not reach the budget: undecided
    assert holds(dict(shown, p_holm=0.2), [agree, agree]) is None


@pytest.mark.parametrize("lower, expected_p", [(-0.2, 1.0), (0.2, 0.3)])
def test_a_bounded_replicate_counts_the_larger_p_and_one_on_opposite_signs(lower, expected_p):
    from bench.report.retrained import merge_ends
    test = {"diff": 0.3, "p": 0.01, "ci_low": 0.1, "ci_high": 0.5, "test": "paired bootstrap"}
    assert merge_ends(test, {"diff": lower, "p": 0.3, "ci_low": -0.5, "ci_high": 0.5})
    assert test["p"] == expected_p and test["lower_end"]["diff"] == lower


def test_the_sentence_says_where_a_shown_difference_holds_fails_or_is_not_decided():
    from bench.report.render import holds_sentence
    main = [{"budget": 8, "diff": -1.0, "p_holm": 0.001, "outside": 0.0},
            {"budget": 16, "diff": -0.5, "p_holm": 0.001, "outside": 0.0},
            {"budget": 24, "diff": -0.2, "p_holm": 0.001, "outside": 0.0},
            {"budget": 32, "diff": -0.1, "p_holm": 0.4, "outside": 0.0}]

    def at(*budgets):
        return [{"budget": b, "diff": d, "p": p, "outside": 0.0} for b, d, p in budgets]
    replicates = [("w/seeds/1", [], at((8, -0.9, 0.001), (16, -0.4, 0.01), (24, -0.1, 0.3), (32, 0.1, 0.5))),
                  ("w/seeds/2", [], at((8, -0.8, 0.001), (24, -0.3, 0.01), (32, 0.1, 0.5)))]
    text = holds_sentence(main, replicates)
    assert "at 8 passes it holds for all 3 trained helpers" in text
    assert "at 16 passes it is not decided (`seeds/2`: no line through the budget)" in text
    assert "at 24 passes it does not (`seeds/1` -0.1, p 0.300)" in text
    assert "32 passes" not in text      # not shown above: nothing to check
