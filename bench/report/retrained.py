"""Ablations checked on helpers retrained under other seeds (issue 29 item 9).

A helper is a network a strategy reads beside the task's model (a pairwise estimator, an order
policy). A claim that an idea helps may rest on one trained helper; retrained under other seeds,
the same claim may not hold. The `retrained` preset runs, on the test inputs and into its own
folder, each strategy that reads a helper with the retrained files named by path (a parameter
whose value is a file's path). Here each ablation of the task is recomputed once per folder of
retrained files: a side of the ablation with runs reading that folder takes them, a side without
(a rule that reads no helper) keeps the task's own runs; the budgets are interpolated as
elsewhere, and drawn-order bounds are tested at both ends.

These tests are not in the claims file's family: each checks a claim the family already tested,
as the test split confirms a validation choice. A shown claim *holds for every helper* at a
budget where each retrained folder's difference has the same sign with p below ALPHA (and at most
MAX_OUTSIDE of its replicates outside a line's range)."""
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench.multiplicity import ALPHA
from bench.report.ablations import ablation_at_budgets, distinct_pairs, pair_runs
from bench.report.verdicts import MAX_OUTSIDE, select_line


def helper_folder(summary):
    """The folder of the helper files a run names by path, or None (a run on the task's own helpers)."""
    folders = {str(Path(value).parent) for value in summary["config"]["strategy_params"].values()
               if isinstance(value, str) and "/" in value}
    return folders.pop() if len(folders) == 1 else None


def named_where(where):
    """An ablation side's parameters without those left empty ("the task's own helper file")."""
    return {key: value for key, value in where.items() if value != ""}


def replicate_sides(runs, retrained, ablation):
    """{folder: (idea runs, ablation runs)} for each folder of retrained helpers that either side
    of ``ablation`` reads; a side reading none of that folder keeps ``runs`` (the task's own)."""
    by_folder = defaultdict(list)
    for run in retrained:
        folder = helper_folder(run.summary)
        if folder is not None:
            by_folder[folder].append(run)
    out = {}
    for folder, on_folder in sorted(by_folder.items()):
        idea = select_line(on_folder, ablation.strategy, named_where(ablation.where))
        without = select_line(on_folder, ablation.without, named_where(ablation.without_where))
        if not (idea or without):
            continue
        idea = idea or select_line(runs, ablation.strategy, ablation.where)
        without = without or select_line(runs, ablation.without, ablation.without_where)
        if idea and without:
            out[folder] = (idea, without)
    return out


def at_lower(runs):
    """``runs`` with each bounded run's headline at its lower end."""
    return [replace(r, quality=r.lower) if r.lower is not None else r for r in runs]


def merge_ends(test, lower, key="lower_end"):
    """Give ``test`` (at the bounds) its ``lower_end`` (or another ``key``: the same test on a second
    reference sample) and the larger p of the two (1 on opposite signs of a two-sided difference), as
    bench.report.claims.both_ends does; True if it moved."""
    if np.array_equal([test["diff"], test["p"]], [lower["diff"], lower["p"]], equal_nan=True):
        return False
    agree = "one-sided" in test["test"] or np.sign(test["diff"]) == np.sign(lower["diff"])
    test[key] = {k: lower[k] for k in ("diff", "ci_low", "ci_high", "p")}
    test["p"] = max(test["p"], lower["p"]) if agree else 1.0
    return True


def replicate_tests(idea, without, where, idx, budgets):
    """(pairs, at_budgets) of one folder's ablation, tested at both ends where a run is bounded."""
    pairs, at_budgets = pair_runs(idea, without, where), ablation_at_budgets(idea, without, idx, budgets)
    if any(r.lower is not None for r in idea + without):
        low_idea, low_without = at_lower(idea), at_lower(without)
        low_pairs = pair_runs(low_idea, low_without, where)
        low_budgets = ablation_at_budgets(low_idea, low_without, idx, budgets)
        for test, lower in zip(at_budgets, low_budgets):
            merge_ends(test, lower)
        for pair, lower in zip(pairs, low_pairs):
            merge_ends(pair["quality"], lower["quality"])
    return distinct_pairs(pairs, at_budgets), at_budgets


def retrained_ablations(runs, retrained, ablations, idx, budgets):
    """{idea: [(folder, pairs, at_budgets)]} of every ablation with runs on retrained helpers."""
    out = {}
    for ablation in ablations:
        sides = replicate_sides(runs, retrained, ablation)
        if sides:
            out[ablation.idea] = [(folder, *replicate_tests(idea, without, ablation.where, idx, budgets))
                                  for folder, (idea, without) in sides.items()]
    return out


def holds(main, replicates):
    """Whether a shown difference at a budget (``main``, Holm-adjusted) holds on every retrained
    helper (``replicates``: each folder's test at that budget, None where its lines do not reach
    it): True where each has the same sign, p below ALPHA and few replicates outside; False where
    one fails that; None where the main claim is not shown or a folder does not reach the budget
    (nothing is decided)."""
    if not (main.get("p_holm", np.nan) < ALPHA and main.get("outside", 0.0) <= MAX_OUTSIDE):
        return None
    if any(t is None for t in replicates):
        return None
    return all(agrees(main, t) and t["outside"] <= MAX_OUTSIDE for t in replicates)


def agrees(main, replicate):
    """A retrained helper's difference has the main claim's sign with p below ALPHA."""
    return np.sign(replicate["diff"]) == np.sign(main["diff"]) and replicate["p"] < ALPHA
