"""An idea against the same rule without it (bench.settings.Ablation), as paired tests: run by
run where their other parameters agree, and at equal pass budgets (the two runs at a budget,
calibrated to it or fixed-step runs, where both lines have one, else the lines
interpolated in log passes)."""
import numpy as np

from bench.paired import paired_difference
from bench.report.verdicts import interpolated_difference, is_distance, make_line, select_line


def ablation_pairs(runs, ablation):
    """Runs of an idea and of its ablation with equal other parameters: paired differences."""
    with_idea = select_line(runs, ablation.strategy, ablation.where)
    without = select_line(runs, ablation.without, ablation.without_where)
    return with_idea, without, pair_runs(with_idea, without, ablation.where)


def pair_runs(with_idea, without, where):
    """[pair dict] of each run of ``with_idea`` and the run of ``without`` whose numeric
    parameters (those ``where`` does not fix) are equal: their paired differences."""
    pairs = []
    for run in with_idea:
        swept = {k: v for k, v in run.summary["config"]["strategy_params"].items()
                 if k not in where and isinstance(v, (int, float)) and not isinstance(v, bool)}
        match = next((w for w in without if all(w.summary["config"]["strategy_params"].get(k) == v
                                                 for k, v in swept.items())), None)
        if match is not None:
            pairs.append({"run": run.label, "ablation": match.label,
                          "quality": paired_difference(run.quality, match.quality),
                          "passes": paired_difference(run.passes, match.passes)})
    return pairs


def ablation_at_budgets(with_idea, without, idx, budgets, at_budget=None):
    """[difference dict] of the idea's line minus its ablation's at equal budgets, with its
    ``budget``, ``pchip`` dict and share of replicates ``outside``. Where both lines have a run
    at the budget (``at_budget``, {budget: {line: run label}} of a calibrated table) the two runs
    are compared as they are (``paired_difference``; ``runs`` names them, ``pchip`` is None);
    elsewhere as a lead is tested (``interpolated_difference``: linear and monotone cubic in log
    passes, paired bootstrap)."""
    a, b = make_line("with", with_idea, idx), make_line("without", without, idx)
    out, distance = [], is_distance([a, b])
    for budget in budgets:
        labels = set((at_budget or {}).get(budget, {}).values())
        pair = [run_at(side, budget, labels) for side in (with_idea, without)]
        if all(pair):
            out.append(dict(paired_difference(pair[0].quality, pair[1].quality), budget=budget, pchip=None,
                            outside=0.0, runs=(pair[0].label, pair[1].label),
                            passes=(pair[0].passes(), pair[1].passes())))
        elif not (np.isnan(a.at(budget)[0]) or np.isnan(b.at(budget)[0])):
            test, pchip, outside = interpolated_difference(a, b, budget, distance)
            out.append(dict(test, budget=budget, pchip=pchip, outside=outside))
    return out


def run_at(side, budget, labels):
    """The run of ``side`` at ``budget``: one named in ``labels`` (calibrated to it), else one whose
    mean passes are the budget itself (a rule with a fixed number of steps); None where there is none."""
    named = next((r for r in side if r.label in labels), None)
    return named or next((r for r in side if abs(r.passes() - budget) < 1e-9), None)


def distinct_pairs(pairs, at_budgets):
    """``pairs`` less those an at-budget test already compares (both runs sit at the budget), so that
    one test counts once in a Holm family."""
    compared = {tuple(t["runs"]) for t in at_budgets if t.get("runs")}
    return [p for p in pairs if (p["run"], p["ablation"]) not in compared]
