"""Protein strings <-> ESM token tensors ([BOS] residues [EOS] then padding)."""
import torch

from tasks.protein.fasta import AMINO_ACIDS
from tasks.protein.model import AA_IDS, BOS_ID, EOS_ID, PAD_ID

ID_OF = {aa: int(i) for aa, i in zip(AMINO_ACIDS, AA_IDS)}
AA_OF = {int(i): aa for aa, i in zip(AMINO_ACIDS, AA_IDS)}


def blank_batch(lengths):
    """(tokens [B, max+2] with residue slots set to PAD, residue mask [B, max+2])."""
    lengths = torch.as_tensor(lengths)
    width = int(lengths.max()) + 2
    positions = torch.arange(width)
    residue = (positions >= 1) & (positions <= lengths[:, None])          # [B, W]
    tokens = torch.full((len(lengths), width), PAD_ID, dtype=torch.long)
    tokens[:, 0] = BOS_ID
    tokens[torch.arange(len(lengths)), lengths + 1] = EOS_ID
    return tokens, residue


def encode(sequences, has_start=None, has_end=None):
    """(tokens [B, W], residue mask [B, W]) for a list of amino-acid strings.

    ``has_start`` / ``has_end`` (lists of bools, default all True) say whether a row holds the
    protein's real N- / C-terminus; a window cut inside a protein gets PAD (ignored by the
    attention) instead of BOS / EOS at the cut, so it is never taught as a whole protein.
    """
    lengths = [len(s) for s in sequences]
    tokens, residue = blank_batch(lengths)
    tokens[residue] = torch.tensor([ID_OF[aa] for s in sequences for aa in s])
    rows = torch.arange(len(sequences))
    if has_start is not None:
        tokens[rows[~torch.as_tensor(has_start)], 0] = PAD_ID
    if has_end is not None:
        cut = ~torch.as_tensor(has_end)
        tokens[rows[cut], torch.as_tensor(lengths)[cut] + 1] = PAD_ID
    return tokens, residue


def decode_sequences(tokens, residue):
    """Amino-acid strings of the residue positions of each row."""
    return ["".join(AA_OF[int(t)] for t in row[mask]) for row, mask in zip(tokens, residue)]
