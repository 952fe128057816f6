"""The gsm task's commands and helper-network data: training its MDM, and the contexts the MI
estimator is labelled on (strategies/mi)."""
import torch

from bench.training import train_and_log


def train_model(settings, out):
    """`bench train gsm KEY=VALUE...`: settings go to the model or the training config by name."""
    from tasks.gsm.model import DEFAULT_WEIGHTS, GSMModelConfig
    from tasks.gsm.train import TrainConfig, train
    train_and_log("gsm", (GSMModelConfig, TrainConfig), train, settings, out, default_weights=DEFAULT_WEIGHTS)


def span_masks(region, generator):
    """bool like ``region`` (each row's answer region): one contiguous span of it masked per row
    (length ~ U(1, region)), the rest revealed."""
    n, length = region.shape
    first, size = region.float().argmax(1, keepdim=True), region.sum(1, keepdim=True)
    span = (torch.rand(n, 1, generator=generator) * size).long() + 1
    start = first + (torch.rand(n, 1, generator=generator) * (size - span + 1)).long()
    where = torch.arange(length)
    return region & (where >= start) & (where < start + span)


def mi_contexts(model, split, n, generator):
    """(tokens [n, N], masked [n, N]) of ``split`` over training problems (a stream seeded from
    ``generator``), the question always given: train and heldout are half states visited by
    decoding runs of ``model`` from the masked answer region, half solved problems with the
    region masked at random (rate ~ U(0.05, 1)); ood masks one contiguous span of the region."""
    from strategies.mi.contexts import random_masks, visited_states
    from tasks.gsm.data import MASK, encode_batch
    from tasks.gsm.generate import problems
    rows = problems("train", n, f"mi-{split}-{int(torch.randint(0, 2 ** 31, (1,), generator=generator))}")
    solved, start = encode_batch(rows, with_answers=True), encode_batch(rows, with_answers=False)
    region = start == MASK
    if split == "ood":
        return solved, span_masks(region, generator)
    n_visited = n // 2
    tokens_v, masked_v = visited_states(model, start[:max(8, n_visited // 8)], region[:max(8, n_visited // 8)],
                                        n_visited, temperature=0.0, generator=generator)
    rest = solved[n_visited:]
    return torch.cat([tokens_v, rest]), torch.cat([masked_v, random_masks(region[n_visited:], generator)])
