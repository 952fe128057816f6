"""MI-guided unmasking and everything it owns: the greedy rule, exact MI by probing, the neural
estimator, its label sets, training, evaluation, figures and the `bench mi` / `bench train mi`
commands. `cli` and `figures` import no model code: the command line and the report load them alone."""

SPLITS = ("train", "heldout", "ood")   # the MI label sets (labels.py)
