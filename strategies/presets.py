"""Comparisons of the single-file strategies (light: no model code; `bench report` reads them).
Not ablations: two rules at equal passes, the orderings the suite asks every task, including one
whose model nobody here trained, to confirm (bench.report.transfer)."""
from bench.settings import Ablation, register_ablation

register_ablation("eb_vs_topk", Ablation(
    "EB-Sampler against top-k at equal passes (eb against topk; a comparison of two rules, not an "
    "ablation)", "eb", {"order": "entropy"}, "topk", {"order": "confidence"}))
