"""The learned order's idea, credited only with what the trained policy adds over its untrained
initialisation (issue 16), in each decoding mode, and the 2x2 of issue 33: the denoiser trained
jointly with the order (`bench train order ... objective=elbo denoiser=joint`) against the frozen
one, crossed with the learned order against the heuristics it is measured against at equal passes
(`bench report` reads these)."""
from bench.settings import (
    Ablation,
    DenoiserAblation,
    register_ablation,
    register_denoiser_ablation,
    register_drawn_order,
)

MODE_WORD = {"sample": "sampled", "threshold": "thresholded"}
register_drawn_order("learned", {"mode": "sample"})   # P's order drawn at random (Strategy.samples)
for mode, word in MODE_WORD.items():
    register_ablation(f"learned_{mode}", Ablation(
        f"the trained order policy over its untrained initialisation ({word}; learned against "
        f"learned init=true)", "learned", {"init": False, "mode": mode, "policy": ""},
        "learned", {"init": True, "mode": mode, "policy": ""}))   # the shipped policy: not another file's (ELBO, joint)


# Each learned run on the jointly trained denoiser pairs with the frozen denoiser's learned runs of the
# same T and mode whatever their policy file (each denoiser decodes with its own policy).
register_denoiser_ablation("learned_joint", DenoiserAblation(
    "the denoiser fine-tuned jointly with the learned order (objective=elbo, denoiser=joint) against the "
    "frozen one", "learned", {"mode": "sample", "init": False}, ("eb", "margin", "topk"), "joint",
    pair_ignores=("policy",)))


def learned_sweep(budgets, modes=("sample", "threshold")):
    """The learned order at each budget T in each mode, each beside its untrained initialisation
    (init=true: EB-Sampler with the policy's gamma, capped at T)."""
    return [f"learned:T={t},mode={mode}{init}" for init in ("", ",init=true") for mode in modes for t in budgets]
