"""The exact task: a known hidden Markov model, an exact denoiser and a trained one (task.py)."""
