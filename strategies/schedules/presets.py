"""The samplers of the field as preset specs (light: no model code; tasks/*/presets.py read it).

``field_sweep`` gives a task's default-tier specs of this family: the vanilla sampler (random
order, linear schedule) at a few step counts, LLaDA's confidence on the linear schedule, the
Fast-dLLM factor rule at f in {0.7, 1.0, 1.5}, KLASS, PC-Sampler, DUS, and ReMDM, RCR and DPLM
at one step budget each; ``newer_sweep`` the newer rules (P2, Prophet, Saber, CreditDecoding)
each beside its ablation; ``remasking_ablation`` ReMDM at eta 0 for the paper tier;
``field_quick`` each strategy once for the quick tier.
"""
from bench.settings import Ablation, register_ablation, register_drawn_order, sweep

# which runs of this family draw their order at random (Strategy.samples), for the report's figures
register_drawn_order("schedule", {"score": "random"})          # the vanilla sampler's random order
register_drawn_order("schedule", {"schedule": "bernoulli"})    # MDLM's per-position draws
register_drawn_order("remdm")                                   # re-masking drawn with probability sigma

# LLaDA's rule over the vanilla sampler: the same linear schedule and steps, the order by confidence
# instead of at random (run by run at equal steps, and at equal passes)
LINEAR = {"schedule": "linear", "block": 0}
register_ablation("confidence_vs_random", Ablation(
    "confidence order over random order (schedule score=confidence against score=random, linear "
    "schedule, same steps)", "schedule", {"score": "confidence", **LINEAR}, "schedule", {"score": "random", **LINEAR}))
# Re-masking credited only with what it adds over the same rule without it: ReMDM against itself at
# eta 0 (MDLM's sampler: nothing is masked again); RCR and DPLM against LLaDA's confidence order on
# the linear schedule at the same steps, which is what each does when a revealed position stays
# revealed (DPLM's count per step may differ from LLaDA's by one).
register_ablation("remasking_remdm", Ablation(
    "re-masking in ReMDM (remdm eta=0.02 against eta=0, MDLM's sampler, same steps)",
    "remdm", {"sigma": "cap", "eta": 0.02}, "remdm", {"eta": 0.0}))
register_ablation("remasking_rcr", Ablation(
    "re-masking in RCR (rcr against LLaDA's confidence order on the linear schedule, same steps)",
    "rcr", {}, "schedule", {"score": "confidence", **LINEAR}))
register_ablation("remasking_dplm", Ablation(
    "re-masking in DPLM (dplm against LLaDA's confidence order on the linear schedule, same steps)",
    "dplm", {}, "schedule", {"score": "confidence", **LINEAR}))
# P2 (self-planning) re-masks every position each pass by its drawn value's score: credited with what it
# adds over LLaDA's confidence order at the same steps, as DPLM is. CreditDecoding with what the history
# credit adds over the same threshold rule without it (alpha 0).
# P2 is fixed at eta 1 (its default): runs are paired where the numeric parameters ``where`` leaves
# free agree, and LLaDA's order has no eta, so with eta free a P2 run paired with none of its runs.
# (``planner`` cannot be fixed here: at its default, none, a run's identity leaves it out.)
register_ablation("remasking_p2", Ablation(
    "re-masking in P2 (p2 eta=1 against LLaDA's confidence order on the linear schedule, same steps)",
    "p2", {"eta": 1.0}, "schedule", {"score": "confidence", **LINEAR}))
register_ablation("credit_history", Ablation(
    "history credit in CreditDecoding (credit alpha=0.7 against alpha=0, the threshold rule alone)",
    "credit", {"alpha": 0.7}, "credit", {"alpha": 0.0}))
# Saber's backtracking against its adaptive threshold alone (backtrack=false masks nothing again), at
# the same n; Prophet's early commit against its base rule, LLaDA's confidence order on the linear
# schedule, at the same steps (its gap thresholds fixed at the reference's, which the base rule lacks).
register_ablation("remasking_saber", Ablation(
    "re-masking in Saber (saber against backtrack=false, the adaptive threshold alone, same n)",
    "saber", {"backtrack": True}, "saber", {"backtrack": False}))
# WINO's revocation (re-masking decoded positions whose verification falls below tau2) against the
# same accept rule never re-masking (tau2 0), at the same tau1.
register_ablation("remasking_wino", Ablation(
    "re-masking in WINO (wino against tau2=0, its accept rule alone, same tau1)",
    "wino", {"tau2": 0.9}, "wino", {"tau2": 0.0}))
register_ablation("early_commit_prophet", Ablation(
    "early commit in Prophet (prophet at its reference thresholds against LLaDA's confidence order on "
    "the linear schedule, same steps)",
    "prophet", {"score": "confidence", **LINEAR, "early": 7.5, "mid": 5.0, "late": 2.5, "region": "masked"},
    "schedule", {"score": "confidence", **LINEAR}))
REMASKING = ("remasking_remdm", "remasking_rcr", "remasking_dplm", "remasking_p2", "remasking_saber")   # every task's
PLANNING = ("credit_history", "early_commit_prophet")   # every task's ablations of the newer rules besides re-masking


def field_sweep(steps, *, dus_block, pc_lam=0.25, remask_steps=None, factors=(0.7, 1.0, 1.5), llada=True):
    """Specs of this family for one task. ``steps``: the vanilla sampler's step counts (its first
    also KLASS's and PC-Sampler's); ``remask_steps``: the re-masking samplers' budget (default:
    the first of ``steps``); ``pc_lam``: PC-Sampler's positional decay (0 for Sudoku, as its
    paper does)."""
    first = steps[0]
    remask = remask_steps or first
    return (sweep("schedule", "steps", steps)
            + ([f"schedule:score=confidence,steps={first}"] if llada else [])
            + sweep("factor_rule", "f", factors)
            + [f"klass:steps={first}", f"pc_sampler:lam={pc_lam},steps={first}", f"dus:block={dus_block}"]
            + [f"remdm:steps={remask}", f"rcr:steps={remask}", f"dplm:steps={remask}"])


def newer_sweep(steps, *, llada_steps=None, saber_n=(2, 4, 8), credit_thresholds=(0.9, 0.99, 0.999)):
    """The newer rules' specs for a task's default tier, each beside its ablation: P2 and Prophet at
    ``steps`` against LLaDA's confidence order at the same steps (``llada_steps``: the step counts of
    it to add, default all of ``steps``; leave out those the task runs already), Saber at n in
    ``saber_n`` against backtrack=false, CreditDecoding at ``credit_thresholds`` against alpha=0."""
    llada = steps if llada_steps is None else llada_steps
    return (sweep("p2", "steps", steps) + sweep("prophet", "steps", steps)
            + [f"schedule:score=confidence,steps={s}" for s in llada]
            + sweep("saber", "n", saber_n) + sweep("saber", "n", saber_n, ",backtrack=false")
            + sweep("credit", "threshold", credit_thresholds)
            + sweep("credit", "threshold", credit_thresholds, ",alpha=0"))


def remasking_ablation(steps):
    """The paper tier's run of ReMDM without re-masking (eta 0) at the re-masking samplers' ``steps``;
    RCR's and DPLM's ablation, LLaDA's confidence order there, each task runs already."""
    return [f"remdm:eta=0,steps={steps}"]


def field_quick(steps, *, dus_block, pc_lam=0.25):
    """The quick tier's settings: each strategy of the family once (the vanilla sampler, the factor
    rule at f 1, the others at ``steps``; CreditDecoding at its defaults beside its no-credit ablation).
    P2 and CreditDecoding run in this tier (so in the gate's) on every task and in ``default`` where
    a task's sweep adds ``newer_sweep`` (its committed test and validation runs made first)."""
    return [f"schedule:steps={steps}", "factor_rule:f=1", f"klass:steps={steps}",
            f"pc_sampler:lam={pc_lam},steps={steps}", f"dus:block={dus_block}", f"remdm:steps={steps}",
            f"rcr:steps={steps}", f"dplm:steps={steps}", f"p2:steps={steps}", "credit", "credit:alpha=0"]


def revocable_quick(positions=None, *, wino="wino"):
    """The quick tier's runs of the newer rules (strategies/schedules/revocable.py, prophet.py), each
    beside its ablation: WINO against itself never re-masking (tau2 0), Saber without backtracking,
    Prophet against its base rule (LLaDA's confidence order) at the same steps; steps = the task's
    ``positions``, as Prophet's own evaluation runs (None leaves Prophet out). ``wino``: its spec
    (None leaves WINO out). The tier runs each family once somewhere: WINO's verification pass per
    decoded position and Prophet's pass per position are run where the model is cheap (2026-12-04:
    with them on every task the quick tier was planned at 23.5 minutes on 2 quiet cores)."""
    runs = ["saber", "saber:backtrack=false"]
    if positions:
        runs += [f"prophet:steps={positions}", f"schedule:score=confidence,steps={positions}"]
    if wino:
        runs += [wino, f"{wino},tau2=0" if ":" in wino else f"{wino}:tau2=0"]
    return runs
