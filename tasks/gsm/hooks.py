"""The gsm task's commands: training its MDM."""
from bench.training import train_and_log


def train_model(settings, out):
    """`bench train gsm KEY=VALUE...`: settings go to the model or the training config by name."""
    from tasks.gsm.model import DEFAULT_WEIGHTS, GSMModelConfig
    from tasks.gsm.train import TrainConfig, train
    train_and_log("gsm", (GSMModelConfig, TrainConfig), train, settings, out, default_weights=DEFAULT_WEIGHTS)
