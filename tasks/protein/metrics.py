"""Distribution metrics of a generated protein set against a reference set."""
import itertools

import numpy as np

from bench.paired import jsd_bits
from tasks.protein.fasta import AMINO_ACIDS

INDEX = {aa: i for i, aa in enumerate(AMINO_ACIDS)}
DIPEPTIDES = {a + b: i for i, (a, b) in enumerate(itertools.product(AMINO_ACIDS, repeat=2))}


def js_divergence(p, q):
    """Jensen-Shannon divergence in bits (in [0, 1]) of two count or probability vectors.

    (scipy.spatial.distance.jensenshannon returns the square root of this.)
    """
    return float(jsd_bits(np.asarray(p, float), np.asarray(q, float)))


def composition_counts(sequence):
    """[20] residue counts of one sequence."""
    return np.bincount([INDEX[aa] for aa in sequence], minlength=20)


def dipeptide_counts(sequence):
    """[400] counts of overlapping residue pairs of one sequence."""
    return np.bincount([DIPEPTIDES[sequence[i:i + 2]] for i in range(len(sequence) - 1)], minlength=400)


def distinct_3mer_share(sequence):
    """Distinct 3-mers over all 3-mers of one sequence (1.0 = no repeats; low = collapse)."""
    kmers = [sequence[i:i + 3] for i in range(len(sequence) - 2)]
    return len(set(kmers)) / max(len(kmers), 1)


def longest_run(sequence):
    """Length of the longest single-residue run."""
    return max(len(list(group)) for _, group in itertools.groupby(sequence))
