"""The ideas of the MI family, each credited only against the same rule without it (`bench report`
reads these; tasks name the keys that apply to them in their presets modules)."""
from bench.settings import Ablation, register_ablation

register_ablation("mi_term_greedy", Ablation(
    "the MI term on the greedy rule (mi, lam=1 against lam=0)", "mi", {"lam": 1.0}, "mi", {"lam": 0.0}))
register_ablation("mi_term_eb", Ablation(
    "the MI term on EB's rule (mi_eb against eb)", "mi_eb", {"lam": 1.0}, "eb", {"order": "entropy"}))
# The symmetric oracle (the estimator's own target) probes every candidate that fits, several
# times the directed one's passes; its comparison appears wherever both runs exist.
register_ablation("oracle_symmetric", Ablation(
    "exact symmetric MI by probing instead of the estimator (mi_oracle against mi, same target)",
    "mi_oracle", {"target": "symmetric"}, "mi", {"lam": 1.0}))
register_ablation("oracle_directed", Ablation(
    "exact directed MI by probing instead of the estimator (mi_oracle target=directed against mi; "
    "the estimator learns the symmetric mean)", "mi_oracle", {"target": "directed"}, "mi", {"lam": 1.0}))
# Not an ablation but the exact task's question (issue 13): the two rules at equal passes.
register_ablation("mi_vs_eb", Ablation(
    "MI-guided decoding against EB-Sampler at equal passes (mi, lam=1 against eb; a comparison of "
    "two rules, not an ablation)", "mi", {"lam": 1.0}, "eb", {"order": "entropy"}))
