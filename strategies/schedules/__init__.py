"""Step schedules, position scores and blocks as shared parts, and the samplers of the field built
from them (vanilla MDM, MDLM, LLaDA, ESM3/MaskGIT, the Fast-dLLM factor rule, KLASS, PC-Sampler,
DUS), the re-masking ones (ReMDM, RCR, DPLM, P2), the revocable ones (WINO, Saber), Prophet
and CreditDecoding. docs/strategies.md gives each rule's reference."""

from bench.protocols import TaskProtocol  # noqa: E402

# What a task defines for PC-Sampler: value_frequencies() -> [V] float, each value's frequency in
# the task's training data (the background distribution f_bg of the reference).
BACKGROUND_TASK = TaskProtocol(
    "background frequencies", "strategies/schedules",
    required=("value_frequencies",))
