"""What the antibody task's helpers (the MI estimator, the order policies) train and are measured on.

- train: domains of the helper species (``germlines.HELPER_SPECIES``: rat, rabbit, pig, alpaca,
  cow), so no gene of the validation or test domains is ever a helper's training input;
- heldout: the validation domains (human, mouse and rhesus genes apart from test's);
- ood: the validation domains with the masked region's residues shuffled (composition kept,
  every dependency between them destroyed), a source the estimator never saw.
Half of each MI context set are states visited while AntiBERTy fills the region (argmax values,
the strategies of ``strategies.mi.contexts``), half are the domains with a random part of the
region masked. Every context is padded to one width, so label sets concatenate.
"""
import torch

from strategies.mi.contexts import random_masks, visited_states
from tasks.antibody.encoding import MASK_ID, PAD_ID, VALUE_IDS, encode
from tasks.antibody.germlines import AMINO_ACIDS, IMGT_LENGTH, domains

WIDTH = IMGT_LENGTH + 2          # the longest joined domain fits IMGT's 128 positions, plus [CLS] and [SEP]
SOURCES = {"train": "helpers", "heldout": "validation", "ood": "validation"}


def padded_encoding(domain_list, mask=True, chain_starts=False):
    """(tokens, masked) of ``domain_list`` (``encode``) padded to WIDTH; padding is never masked."""
    tokens, masked = encode(domain_list, mask, chain_starts)
    extra = WIDTH - tokens.shape[1]
    return torch.nn.functional.pad(tokens, (0, extra), value=PAD_ID), torch.nn.functional.pad(masked, (0, extra))


def shuffled_regions(tokens, region, generator):
    """``tokens`` with each row's region residues permuted (the ood source)."""
    tokens = tokens.clone()
    for row in range(len(tokens)):
        where = region[row].nonzero().squeeze(1)
        tokens[row, where] = tokens[row, where[torch.randperm(len(where), generator=generator)]]
    return tokens


def truth_tokens(domain_list, chain_starts=False):
    """(x0 tokens with the region's own residues, region bool) of ``domain_list``, padded to WIDTH.
    ``chain_starts``: light chains start with their own token (a model with a network per chain)."""
    return padded_encoding(domain_list, mask=False, chain_starts=chain_starts)


def helper_domains(source, species=None):
    """The domains of ``source`` (a split or "helpers"), of ``species`` only where given (Sapiens
    reads human validation domains only; the helper species are never filtered: they are no input)."""
    return [d for d in domains(source) if species is None or source == "helpers" or d.species in species]


def mi_contexts(model, split, n, generator, species=None, chain_starts=False):
    """(tokens [n, WIDTH], masked [n, WIDTH]) of the MI label set ``split`` (module docstring)."""
    pool = helper_domains(SOURCES[split], species)
    order = torch.randperm(len(pool), generator=generator).tolist()
    picked = [pool[order[i % len(pool)]] for i in range(n)]       # a pool smaller than n is cycled
    tokens, region = truth_tokens(picked, chain_starts)
    if split == "ood":
        tokens = shuffled_regions(tokens, region, generator)
    n_visited = n // 2
    rows = max(8, n_visited // 16)
    start = tokens[:rows].masked_fill(region[:rows], MASK_ID)
    tokens_v, masked_v = visited_states(model, start, region[:rows], n_visited, temperature=0.0, generator=generator)
    masked_r = random_masks(region[n_visited:], generator)
    return torch.cat([tokens_v, tokens[n_visited:]]), torch.cat([masked_v, masked_r])


def order_examples(chain_starts=False):
    """(x0, start tokens, start masked) of the helper species' domains, the region masked at the start."""
    x0, region = truth_tokens(domains("helpers"), chain_starts)
    return x0, x0.masked_fill(region, MASK_ID), region


def residue_recovery(x0, tokens):
    """[B] share of each row's residues equal to x0's (the order policies' reward). The given
    residues always match, so within one input this is the region's recovery rescaled, which is
    all a policy gradient with a per-input baseline sees."""
    residues = (x0 >= int(VALUE_IDS[0])) & (x0 <= int(VALUE_IDS[-1]))
    return ((tokens == x0) & residues).sum(1).float() / residues.sum(1).clamp(min=1).float()


def residue_frequencies():
    """[20] each amino acid's share of the residues of the helper species' domains."""
    text = "".join(d.sequence for d in domains("helpers"))
    return [text.count(a) / len(text) for a in AMINO_ACIDS]
