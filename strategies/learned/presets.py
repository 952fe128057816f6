"""The learned order's idea, credited only with what the trained policy adds over its untrained
initialisation (issue 16), in each decoding mode (`bench report` reads these)."""
from bench.settings import Ablation, register_ablation, register_drawn_order

MODE_WORD = {"sample": "sampled", "threshold": "thresholded"}
register_drawn_order("learned", {"mode": "sample"})   # P's order drawn at random (Strategy.samples)
for mode, word in MODE_WORD.items():
    register_ablation(f"learned_{mode}", Ablation(
        f"the trained order policy over its untrained initialisation ({word}; learned against "
        f"learned init=true)", "learned", {"init": False, "mode": mode}, "learned", {"init": True, "mode": mode}))


def learned_sweep(budgets, modes=("sample", "threshold")):
    """The learned order at each budget T in each mode, each beside its untrained initialisation
    (init=true: EB-Sampler with the policy's gamma, capped at T)."""
    return [f"learned:T={t},mode={mode}{init}" for init in ("", ",init=true") for mode in modes for t in budgets]
