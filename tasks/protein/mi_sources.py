"""Where protein MI contexts come from.

- train: members of training clusters (the model's own training data);
- heldout: members of held-out clusters that are not reference sequences;
- ood: held-out sequences with their residues shuffled (composition kept, every natural
  dependency destroyed), a source the estimator never saw.
Half of each set are states visited while generating from all-masked at temperature 1 (lengths
drawn from the split's sequences), half are sequences of the split with a random mask.
"""
import torch

from strategies.mi.contexts import random_masks, visited_states
from tasks.protein.encoding import blank_batch, encode
from tasks.protein.split import make_split

WIDTH = 102  # every context is padded to the longest sequence (100) + BOS + EOS


def pool(split, generator):
    """Amino-acid strings of a split."""
    parts = make_split()
    sequences = [s for _, s in (parts.train if split == "train" else parts.validation)]
    if split == "ood":
        shuffled = []
        for s in sequences:
            order = torch.randperm(len(s), generator=generator).tolist()
            shuffled.append("".join(s[i] for i in order))
        sequences = shuffled
    return sequences


def padded(tokens, residue):
    from tasks.protein.model import PAD_ID
    extra = WIDTH - tokens.shape[1]
    return (torch.nn.functional.pad(tokens, (0, extra), value=PAD_ID),
            torch.nn.functional.pad(residue, (0, extra), value=False))


def contexts(model, split, n, generator):
    """(tokens [n, WIDTH], masked [n, WIDTH]) for ``split``; padding is never masked."""
    sequences = pool(split, generator)
    order = torch.randperm(len(sequences), generator=generator)
    n_visited = n // 2
    lengths = [len(sequences[i]) for i in order[:max(8, n_visited // 16)]]
    tokens_b, residue_b = padded(*blank_batch(lengths))
    tokens_v, masked_v = visited_states(model, tokens_b, residue_b, n_visited, temperature=1.0, generator=generator)
    tokens_r, residue_r = padded(*encode([sequences[i] for i in order[n_visited:n]]))
    masked_r = random_masks(residue_r, generator)
    return torch.cat([tokens_v, tokens_r]), torch.cat([masked_v, masked_r])
