"""AntiBERTy's token ids for the antibody task's inputs (trained_models/vocab.txt), and the encoding
of domains into tokens: what the task and its helpers' data share."""
import torch

from tasks.antibody.germlines import AMINO_ACIDS

PAD_ID, CLS_ID, SEP_ID, MASK_ID = 0, 2, 3, 4      # AntiBERTy's vocabulary (trained_models/vocab.txt)
# A light chain's row starts with this id instead of CLS_ID where the model has one network per
# chain type (Sapiens): the row tells which network reads it. (AntiBERTy's [UNK], never an input.)
LIGHT_CLS_ID = 1
VALUE_IDS = torch.arange(5, 25)                     # A C D ... Y, in AMINO_ACIDS order


def encode(domain_list, mask=True, chain_starts=False):
    """(tokens [n, W]: [CLS] residues [SEP] then padding, masked region as [MASK] unless ``mask`` is
    False (the truth, x0); masked [n, W]). ``chain_starts``: light chains (kappa, lambda) start
    with LIGHT_CLS_ID."""
    width = max(len(d.sequence) for d in domain_list) + 2
    tokens = torch.full((len(domain_list), width), PAD_ID, dtype=torch.long)
    masked = torch.zeros_like(tokens, dtype=torch.bool)
    for row, d in enumerate(domain_list):
        ids = VALUE_IDS[[AMINO_ACIDS.index(c) for c in d.sequence]]
        start = LIGHT_CLS_ID if chain_starts and d.chain != "H" else CLS_ID
        tokens[row, 0], tokens[row, 1:len(ids) + 1], tokens[row, len(ids) + 1] = start, ids, SEP_ID
        masked[row, 1:len(ids) + 1] = torch.tensor(d.masked)
    if mask:
        tokens[masked] = MASK_ID
    return tokens, masked
