"""MI-guided unmasking and everything it owns: the greedy rule, exact MI by probing, the neural
estimator, its label sets, training, evaluation, figures and the `bench mi` / `bench train mi`
commands. `cli` and `figures` import no model code: the command line and the report load them alone."""

SPLITS = ("train", "heldout", "ood")   # the MI label sets (labels.py)

# What a task defines to support the MI estimator (training its labels and reading it): bench
# holds none of it. Optional: mi_probe (probed positions per context, default 0: every masked
# one), mi_peers() (bool [N, N] structural peers the MI report counts), mi_grid() (side of the
# grid MI maps draw). A model with exact MI gives pair_mi(tokens, masked) and mi_rows(...) and is
# read instead of probed.
from bench.protocols import TaskProtocol  # noqa: E402  (after SPLITS: this package's light constants first)

MI_TASK = TaskProtocol(
    "MI estimator", "strategies/mi",
    required=("weights_dir",       # where the task's trained helpers ship (the estimator file)
              "mi_label_sizes",    # split -> number of MI label contexts
              "mi_contexts"),      # (model, split, n, generator) -> (tokens [n, N], masked [n, N])
    optional=("mi_probe",           # probed positions per label context (0: all)
              "mi_pairs",           # "both" (default) or "either": which probed pairs are labels (label_target)
              "mi_peers", "mi_grid"))
