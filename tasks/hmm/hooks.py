"""The exact task's commands and helper-network data: MI contexts, order-training examples,
training its MDM. Everything is drawn from the chain itself, so no data file is needed."""
import torch

from bench.training import train_and_log
from strategies.mi.contexts import random_masks, visited_states
from tasks.hmm import chain

ORDER_EXAMPLES = 4096   # fully masked training sequences for order policies


def block_masks(shape, generator):
    """bool [n, N]: one contiguous span masked per row (length ~ U(1, N)), the rest revealed."""
    n, length = shape
    span = torch.randint(1, length + 1, (n, 1), generator=generator)
    start = (torch.rand(n, 1, generator=generator) * (length - span + 1)).long()
    where = torch.arange(length)
    return (where >= start) & (where < start + span)


def mi_contexts(hmm, model, split, n, generator):
    """(tokens [n, N], masked [n, N]) of ``split``: train and heldout are half states visited by
    decoding runs of ``model`` from the fully masked start, half fresh samples with random masks
    (rate ~ U(0.05, 1)); ood masks one contiguous span of a fresh sample (a pattern neither
    decoding nor the random masks produce). Each split draws from its own generator."""
    values, _ = chain.sample(hmm, n, generator)
    tokens = values + 1
    if split == "ood":
        return tokens, block_masks(tokens.shape, generator)
    n_visited = n // 2
    starts = torch.zeros(max(8, n_visited // 8), hmm.length, dtype=torch.long)
    tokens_v, masked_v = visited_states(model, starts, torch.ones_like(starts, dtype=torch.bool), n_visited,
                                        temperature=1.0, generator=generator)
    rest = tokens[:n - n_visited]
    masked_r = random_masks(torch.ones_like(rest, dtype=torch.bool), generator)
    return torch.cat([tokens_v, rest]), torch.cat([masked_v, masked_r])


def order_examples(hmm):
    """(x0 tokens, start tokens, start masked): fully masked samples of the chain (seed 7)."""
    values, _ = chain.sample(hmm, ORDER_EXAMPLES, torch.Generator().manual_seed(7))
    start = torch.zeros_like(values)
    return values + 1, start, torch.ones_like(values, dtype=torch.bool)


def train_model(settings, out):
    """`bench train hmm_mdm KEY=VALUE...`: settings go to the model or the training config by name."""
    from tasks.hmm.model import DEFAULT_MDM, HMMModelConfig
    from tasks.hmm.train import TrainConfig, train
    train_and_log("hmm_mdm", (HMMModelConfig, TrainConfig), train, settings, out, default_weights=DEFAULT_MDM)
