"""The Sudoku task's preset tiers and verdict settings (bench.settings; light: no model code).

Tiers: ``paper`` is every strategy's full sweep; ``default`` is what the README's tables and
claims are made from, trimmed to fit 60 minutes on 2 cores with the other tasks (docs/running.md
"Preset tiers" gives what was left out and what each part costs); ``quick`` is every family at
one setting on 200 puzzles; ``ci`` is the regression gate's.
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

EB_GAMMAS = (0.02, 0.05, 0.1, 0.3, 1, 2)
MI_GAMMAS = (0.05, 0.1, 0.3, 0.6, 1, 1.5)
# Each idea runs beside its ablation on the same gammas: mi with lam=0 (the greedy rule alone)
# and mi_eb against eb (the MI term on EB's rule).
PAPER = (["sequential"] + sweep("topk", "k", (2, 3, 5, 7, 10)) + sweep("margin", "k", (2, 5, 10))
         + sweep("eb", "gamma", EB_GAMMAS) + sweep("threshold", "tau", (0.99, 0.95, 0.9, 0.8, 0.7))
         + sweep("mi", "gamma", MI_GAMMAS) + sweep("mi", "gamma", MI_GAMMAS, ",lam=0")
         + sweep("mi_eb", "gamma", EB_GAMMAS) + ["mi_oracle:gamma=0.3,target=directed"]
         + learned_sweep((5, 10, 15)))
# The field's samplers (strategies/schedules): PC-Sampler without its positional decay (its paper's
# Sudoku setting), DUS in blocks of three rows, the re-masking samplers at 8 passes.
FIELD = field_sweep((8,), dus_block=27, pc_lam=0, factors=(1.0, 1.5))
PAPER += FIELD + sweep("schedule", "steps", (16, 24)) + ["factor_rule:f=0.7", "schedule:schedule=bernoulli,steps=16",
                                                     "schedule:score=confidence,schedule=cosine,steps=8"]
# The default leaves out of the paper grid the exact-MI oracle (11 of the 26 minutes the paper
# grid's seed 0 is planned at on a quiet machine: it probes the model about as many passes again
# as it decodes) and the grids of the lines with a continuous knob (eb, threshold, mi at both
# lams, mi_eb): their runs calibrated to each budget (CALIBRATION below, added by bench.presets)
# span the same 5-24 passes, and the budget table compares those.
# The newer rules (issue 47), each beside its ablation: P2 and Prophet at 8, 16 and 24 steps against
# LLaDA's confidence order there (FIELD runs it at 8), Saber at n 2, 4, 8 against no backtracking,
# CreditDecoding at thresholds 0.9, 0.99, 0.999 against no history credit (alpha 0).
NEWER = newer_sweep((8, 16, 24), llada_steps=(16, 24))
DEFAULT = (["sequential"] + sweep("topk", "k", (2, 3, 5, 7, 10)) + sweep("margin", "k", (2, 5, 10))
           + learned_sweep((5, 10, 15)) + FIELD + NEWER)
# LLaDA's confidence order at 16 steps beside the vanilla sampler's (confidence_vs_random) runs in
# NEWER, at 24 for P2's and Prophet's ablations
PAPER += NEWER + remasking_ablation(8)
# Issue 33's 2x2 on the shipped denoiser: the ELBO-trained policy (param=relative, frozen denoiser)
# and the heuristics' low-pass ends that reach T=5's passes (docs/strategies.md, the learned order).
JOINT_BASE = (["learned:T=5,policy=tasks/sudoku/weights/elbo/order_policy_T5.pt"] + sweep("eb", "gamma", (3, 5))
              + sweep("topk", "k", (12, 15, 20)) + sweep("margin", "k", (12, 15, 20)))
# Paper tier only (2026-12-02, to keep the default within 60 minutes when the antibody task gained its
# helpers); their committed runs stay in results/ beside the fine-tuned denoisers' (docs/running.md).
PAPER += JOINT_BASE
QUICK = (["sequential", "topk:k=5", "margin:k=5", "eb:gamma=0.3", "threshold:tau=0.9"]
         + sweep("mi", "gamma", (0.3,)) + sweep("mi", "gamma", (0.3,), ",lam=0") + ["mi_eb:gamma=0.3"]
         + learned_sweep((10,), modes=("sample",)) + field_quick(8, dus_block=27, pc_lam=0)
         + revocable_quick(81, wino=None))   # WINO: 188 verification passes a puzzle; on hmm
# The regression gate runs every family at the quick tier's setting on a few puzzles (issue 52: a
# regression in any family fails CI); the exact-MI oracle runs in `hmm`'s, where it is cheap.
CI = QUICK
# Choices are made on 1,000 other hard puzzles of the same generator (stream 2; data/README.md).
VALIDATION = Validation(seed=0, data=str(Path(__file__).parent / "data" / "validation_hard.csv"))
# The budget table compares each line with a continuous knob at runs calibrated to each budget on
# the validation puzzles (`python -m bench calibrate --task sudoku --budgets` writes the file; the
# default and paper tiers run what it holds).
CALIBRATION = BudgetCalibration(
    (Knob("eb", "gamma", 0.01, 10), Knob("threshold", "tau", 0.5, 0.9999), Knob("mi", "gamma", 0.01, 5),
     Knob("mi:lam=0", "gamma", 0.01, 5), Knob("mi_eb", "gamma", 0.01, 10)),
    str(Path(__file__).parent / "calibration.json"))

register_task_settings(
    "sudoku", {"paper": PAPER, "default": DEFAULT, "quick": QUICK, "ci": CI},
    limits={"quick": 200, "ci": 40},
    figure_references=("eb", "schedule:score=random"), validation=VALIDATION, calibration=CALIBRATION,
    # three seeds for the runs that draw (their orders: 9 runs of 5-15 passes); the others draw nothing
    seeds={"default": (0, 1, 2)},
    verdicts=Verdicts(budgets=(5, 8, 12, 16, 24), margin=0.01, reference="sequential"),
    ablations=("mi_term_greedy", "mi_term_eb", "oracle_symmetric", "oracle_directed", "learned_sample",
               "learned_threshold", "eb_vs_topk", "confidence_vs_random") + REMASKING + PLANNING,
    headline=True)
