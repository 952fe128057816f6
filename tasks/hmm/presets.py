"""The exact tasks' preset tiers and verdict settings (bench.settings; light: no model code):
``hmm`` decodes with the exact chain, ``hmm_mdm`` with the trained MDM, on the same sweep; on
the chain the MI oracle reads exact MI (no probing). Both are cheap (about 5 minutes together
on 2 cores), so ``default`` runs the full sweep; ``paper`` adds the seeds (bench.presets).
"""
from pathlib import Path

from bench.settings import BudgetCalibration, Knob, Validation, Verdicts, register_task_settings, sweep
from strategies.learned.presets import learned_sweep
from strategies.schedules.presets import (
    PLANNING,
    REMASKING,
    field_quick,
    field_sweep,
    newer_sweep,
    remasking_ablation,
    revocable_quick,
)

GAMMAS = (1, 2, 4, 8)
SWEEP = (["sequential"] + sweep("topk", "k", (2, 4, 8, 16)) + sweep("margin", "k", (2, 4, 8))
         + sweep("eb", "gamma", GAMMAS) + sweep("threshold", "tau", (0.9, 0.7, 0.5))
         + sweep("mi", "gamma", GAMMAS) + sweep("mi", "gamma", GAMMAS, ",lam=0")
         + sweep("mi_eb", "gamma", GAMMAS) + learned_sweep((8, 16, 32))
         + field_sweep((8, 16), dus_block=8, remask_steps=16, factors=(1.0, 1.5))
         + ["schedule:schedule=bernoulli,steps=16", "schedule:score=confidence,steps=16"] + remasking_ablation(16))
# The default keeps of the knob lines' grids only their ends beyond the last budget (32 passes: the
# speed-up's near-sequential runs); their runs calibrated to each budget (CALIBRATION below, added
# by bench.presets) span 8-32 passes, and the budget table compares those.
HIGH = (1,)
DEFAULT = (["sequential"] + sweep("topk", "k", (2, 4, 8, 16)) + sweep("margin", "k", (2, 4, 8))
           + sweep("eb", "gamma", HIGH) + sweep("threshold", "tau", (0.9, 0.7))
           + sweep("mi", "gamma", (1, 2)) + sweep("mi", "gamma", (1, 2), ",lam=0")
           + sweep("mi_eb", "gamma", HIGH) + learned_sweep((8, 16, 32))
           + field_sweep((8, 16), dus_block=8, remask_steps=16, factors=(1.0, 1.5))
           + ["schedule:schedule=bernoulli,steps=16", "schedule:score=confidence,steps=16"])
# The newer rules (issue 47), each beside its ablation over the budgets' range (8-32 passes):
# P2 and Prophet against LLaDA's order at the same steps, Saber against no backtracking,
# CreditDecoding at the threshold rule's grid against alpha 0, WINO at its reference's tau1 0.6,
# tau2 0.9 against tau2 0 (never re-masking).
NEWER = newer_sweep((8, 16, 32), credit_thresholds=(0.5, 0.7, 0.9)) + ["wino", "wino:tau2=0"]
SWEEP += NEWER
DEFAULT += NEWER
# the exact chain's runs cost seconds: hmm runs the family's wider sweep
# Issue 33's 2x2 on the shipped MDM (hmm_mdm only: the policy belongs to that model): the ELBO-trained
# policy (frozen denoiser) and the heuristics' low-pass ends
JOINT_BASE = ["learned:T=8,policy=tasks/hmm/weights/mdm/elbo/order_policy_T8.pt", "eb:gamma=16", "margin:k=16"]
FIELD_EXACT = ["schedule:steps=32", "factor_rule:f=0.7", "schedule:score=ltr,schedule=constant,k=1"]
EXACT = SWEEP + sweep("mi_oracle", "gamma", (2, 4, 8)) + FIELD_EXACT
DEFAULT_EXACT = DEFAULT + sweep("mi_oracle", "gamma", (2,)) + FIELD_EXACT
QUICK = (["sequential", "topk:k=8", "margin:k=8", "eb:gamma=2", "threshold:tau=0.7"]
         + sweep("mi", "gamma", (2,)) + sweep("mi", "gamma", (2,), ",lam=0") + ["mi_eb:gamma=2"]
         + learned_sweep((16,), modes=("sample",)) + field_quick(16, dus_block=8) + revocable_quick(64))
# KL in nats per sequence; sequential is exact (KL 0) on the chain
VERDICTS = Verdicts(budgets=(8, 16, 24, 32), margin=0.1, reference="sequential")
# For an order drawn at random, log q sums the values' log-probabilities given the drawn order: its
# mean minus log p bounds KL(q||p) from above (Jensen over the orders) and 0 bounds it below; the
# share of samples over 1 nat is not estimated for such an order at all.
FIGURE_REFERENCES = ("eb", "schedule:score=random")   # grey in every family's panel: EB and the vanilla sampler
ORDER_BOUNDS = {"kl_nats": 0.0, "kl_bits_per_position": 0.0, "share_over_1nat": None}
# ... and where `bench orders` made it (tasks/hmm/orders.py), a lower estimate: the log-mean-exp of
# q(x | order) over M orders drawn afresh; a claim on such a run must hold at both ends
ORDER_LOWER = {"kl_nats": "kl_nats_orders"}
LEARNED = ("learned_sample", "learned_threshold")
# the orderings every task is asked, the model trained elsewhere included (bench.report.transfer)
COMPARISONS = ("eb_vs_topk", "confidence_vs_random") + REMASKING + PLANNING + ("remasking_wino",)
# Issue 29 item 9: the chain's MI estimator and order policies retrained under seeds 1 and 2
# (tasks/hmm/weights/exact/seeds/<seed>/, each with its log), run on the test inputs into retrained/
# (`bench run --preset retrained`); `bench report` checks each ablation on each of them. The MI
# lines span 8-32 passes on the shipped estimator (its calibrated gammas: 13.6 to 2.8; mi_eb 12.6 to 1.5).
RETRAINED_FOLDERS = [f"tasks/hmm/weights/exact/seeds/{seed}" for seed in (1, 2)]
# lam=0 reads no estimator: its runs here repeat the task's own at these gammas, so the MI term is
# compared on one grid through every budget (the task's own lam=0 line starts above 8 passes on test).
MI_RETRAINED = (2, 3, 4, 6, 10, 16)
RETRAINED = [spec for folder in RETRAINED_FOLDERS for spec in
             sweep("mi", "gamma", MI_RETRAINED, f",estimator={folder}/mi_estimator.pt")
             + sweep("mi", "gamma", MI_RETRAINED, f",lam=0,estimator={folder}/mi_estimator.pt")
             + sweep("mi_eb", "gamma", (1, 1.5, 2.5, 4, 8, 16), f",estimator={folder}/mi_estimator.pt")
             + [f"{spec},policy={folder}/order_policy_T{spec.split('T=')[1].split(',')[0]}.pt"
                for spec in learned_sweep((8, 16, 32))]]

# Every input is a fully masked sequence whose values the run's seed draws: the validation split
# is the same sweep under a seed no tier runs.
VALIDATION = Validation(seed=100)
# The budget tables compare runs calibrated to each budget on validation (`python -m bench calibrate
# --task hmm --budgets`, then hmm_mdm): each line with a continuous knob, at 8, 16, 24 and 32 passes.
KNOBS = (Knob("eb", "gamma", 0.5, 64), Knob("threshold", "tau", 0.2, 0.95), Knob("mi", "gamma", 0.5, 64),
         Knob("mi:lam=0", "gamma", 0.5, 64), Knob("mi_eb", "gamma", 0.5, 64))
CALIBRATION = Path(__file__).parent / "calibration"


def calibration(task, knobs=KNOBS):
    return BudgetCalibration(knobs, str(CALIBRATION / f"{task}.json"))


register_task_settings(
    "hmm", {"paper": EXACT, "default": DEFAULT_EXACT, "quick": QUICK + ["mi_oracle:gamma=2"],
            "ci": QUICK + ["mi_oracle:gamma=2"], "retrained": RETRAINED},
    limits={"ci": 200}, verdicts=VERDICTS, figure_references=FIGURE_REFERENCES,
    order_bounds=ORDER_BOUNDS, order_lower=ORDER_LOWER, validation=VALIDATION,
    calibration=calibration("hmm", KNOBS + (Knob("mi_oracle", "gamma", 0.5, 64),)),
    # every run samples its values; the chain makes three seeds cheap
    seeds={"default": (0, 1, 2), "retrained": (0, 1, 2)},
    ablations=("mi_term_greedy", "mi_term_eb", "oracle_symmetric", "oracle_directed", "mi_vs_eb") + LEARNED
    + COMPARISONS)
# The oracle probes the trained MDM (V = 8 passes per probed row: about 12 minutes for 1,000
# sequences on 2 cores), so the hmm_mdm tiers leave it out; the chain's exact oracle is in `hmm`.
register_task_settings(
    "hmm_mdm", {"paper": SWEEP + JOINT_BASE, "default": DEFAULT + JOINT_BASE, "quick": QUICK,
                "ci": QUICK},
    limits={"quick": 500, "ci": 200}, verdicts=VERDICTS, figure_references=FIGURE_REFERENCES,
    order_bounds=ORDER_BOUNDS, order_lower=ORDER_LOWER, validation=VALIDATION, calibration=calibration("hmm_mdm"),
    ablations=("mi_term_greedy", "mi_term_eb", "mi_vs_eb") + LEARNED + COMPARISONS)
