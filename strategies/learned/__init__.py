"""A learned generation order: the strategy, its policy network, and `bench train order`."""

from bench.protocols import TaskProtocol  # noqa: E402

# What a task defines to support a learned order. Optional: order_reward(x0, tokens, log_q) -> [B]
# per-input quality, higher better (objective=reward; without it only objective=elbo trains), and
# save_denoiser(model, path, meta) (denoiser=joint: the fine-tuned model saved as the task loads it).
ORDER_TASK = TaskProtocol(
    "learned order", "strategies/learned",
    required=("weights_dir",       # where the task's trained policies ship
              "order_examples",    # () -> (x0 [n, N], start tokens [n, N], start masked [n, N])
              "order_training"),   # defaults: batch, step_units, n_eval, init_gamma {T: gamma}, objective
    optional=("order_reward",      # per-input quality for objective=reward
              "save_denoiser"))    # (model, path, meta): writes the model as --model PATH loads it (denoiser=joint)
