"""Tasks: one package per task (data, model, metrics, training, shipped weights, README). Each
registers itself with ``bench.registry.register_task`` when ``load_plugins`` imports it."""
