"""MI-guided unmasking and everything it owns: the greedy rule, exact MI by probing, the neural
estimator, its label sets, training, evaluation, figures and the `bench mi` / `bench train mi`
commands. Modules import torch only where they need it, so `figures` loads without it."""
