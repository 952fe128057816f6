"""Distribution metrics of a generated protein set against a reference set.

The headline is ``window_jsd`` (docs/protein_metrics.md): every sequence gets the mean JSD of its
sliding 20-residue compositions against the reference's pooled composition, and the metric is the
Wasserstein-1 distance between the generated and the reference sets' distributions of that
value. Pooled composition JSD cannot be the headline: drawing each revealed residue from its
marginal keeps the pooled composition whatever the order (tasks/protein/ladder.py shows it
failing the degradation ladder).
"""
import functools
import itertools

import numpy as np
from scipy import sparse

from bench.checkpoints import cached_arrays
from tasks.protein.fasta import AMINO_ACIDS
from tasks.protein.statistics import jsd_bits, stat_w1, window_jsd

INDEX = {aa: i for i, aa in enumerate(AMINO_ACIDS)}
LETTER_CODES = np.full(256, -1, dtype=np.int64)                    # byte -> amino-acid index, -1 elsewhere
LETTER_CODES[[ord(aa) for aa in AMINO_ACIDS]] = np.arange(len(AMINO_ACIDS))
DIPEPTIDES = {a + b: i for i, (a, b) in enumerate(itertools.product(AMINO_ACIDS, repeat=2))}
WINDOW = 20          # residues per window of the headline: local order and per-sequence composition both show
LOW_COMPLEXITY = (12, 2.2)   # SEG's trigger window and entropy (bits): below it a window is low-complexity
IDENTITY_K = 5       # k-mer length of the identity proxy (20^5 = 3.2M k-mers: a shared one is rarely chance)
POSITIONS = 50       # leading positions of the per-position JSD (every sequence has at least 50)


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


def distinct_kmer_share(sequence, k=3):
    """Distinct k-mers over all k-mers of one sequence (1.0 = no repeats; low = collapse)."""
    kmers = [sequence[i:i + k] for i in range(len(sequence) - k + 1)]
    return len(set(kmers)) / max(len(kmers), 1)


def distinct_3mer_share(sequence):
    return distinct_kmer_share(sequence, 3)


def longest_run(sequence):
    """Length of the longest single-residue run."""
    return max(len(list(group)) for _, group in itertools.groupby(sequence))


def low_complexity_share(sequence, window=LOW_COMPLEXITY[0], threshold=LOW_COMPLEXITY[1]):
    """Share of residues inside some window whose Shannon entropy (bits) is below ``threshold``
    (SEG's first pass, without its merging): repeats and runs show, diverse sequences score 0."""
    onehot = np.eye(20)[[INDEX[aa] for aa in sequence]]
    totals = np.vstack([np.zeros(20), np.cumsum(onehot, 0)])
    counts = (totals[window:] - totals[:-window]) / window            # [windows, 20]
    entropy = -(counts * np.log2(np.where(counts > 0, counts, 1))).sum(1)
    covered = np.zeros(len(sequence), bool)
    for start in np.flatnonzero(entropy < threshold):
        covered[start:start + window] = True
    return float(covered.mean())


def window_values(sequences, reference_composition, window=WINDOW):
    """[n] per-sequence mean windowed-composition JSD (bits) against the reference composition."""
    return window_jsd(sequences, AMINO_ACIDS, window, reference_composition)


def value_w1(values, reference_values):
    """Wasserstein-1 between per-sequence values and the reference's (the headline and the panel)."""
    return float(stat_w1(np.asarray(values, float), reference_values))


def position_profiles(sequences, positions=POSITIONS):
    """[n, positions, 20] one-hot residues of each sequence's leading positions."""
    return np.eye(20)[[[INDEX[aa] for aa in s[:positions]] for s in sequences]]


def position_jsd(profiles, reference_profile):
    """Mean over positions of the JSD between pooled per-position compositions ([..., n, P, 20]
    summed over n) and the reference's ([P, 20])."""
    return jsd_bits(profiles.sum(-3), reference_profile).mean(-1)


def kmer_matrix(sequences, k=IDENTITY_K):
    """Sparse [n, 20^k] 0/1 presence of each sequence's distinct k-mers; a k-mer's code is
    sum_j index(letter j) 20^j. All sequences at once: codes of the concatenation, those that
    cross from one sequence into the next dropped, duplicates within a sequence merged."""
    lengths = np.array([len(s) for s in sequences], dtype=np.int64)
    letters = LETTER_CODES[np.frombuffer("".join(sequences).encode("latin-1"), dtype=np.uint8)]
    if (letters < 0).any():
        bad = sorted({c for s in sequences for c in s} - set(INDEX))
        raise KeyError(f"not an amino-acid letter: {''.join(bad)!r}")
    count = max(len(letters) - k + 1, 0)
    codes = sum(letters[j:j + count] * 20 ** j for j in range(k))                # [count] every window
    starts = np.cumsum(lengths) - lengths                                        # each sequence's first letter
    row = np.repeat(np.arange(len(sequences)), lengths)[:count]
    inside = np.arange(count) + k <= (starts + lengths)[row]                     # the window ends in its sequence
    keys = np.sort(row[inside] * 20 ** k + codes[inside])                        # by row, then code
    keys = keys[np.append(True, keys[1:] != keys[:-1])[:len(keys)]]              # distinct (np.unique hashes: slower)
    indptr = np.searchsorted(keys // 20 ** k, np.arange(len(sequences) + 1))     # keys are sorted by row
    return sparse.csr_matrix((np.ones(len(keys)), keys % 20 ** k, indptr), shape=(len(sequences), 20 ** k))


def containment(left, right):
    """[n, m] share of each left sequence's distinct k-mers found in each right sequence: a proxy
    for sequence identity that needs no alignment (an exact copy scores 1, unrelated about 0)."""
    shared = (left @ right.T).toarray()
    return shared / np.maximum(np.asarray(left.sum(1)), 1)


def pairwise_identity_matrix(sequences):
    """[n, n] k-mer containment between the sequences of one set, NaN on the diagonal."""
    matrix = kmer_matrix(sequences)
    ident = containment(matrix, matrix)
    np.fill_diagonal(ident, np.nan)
    return ident


@functools.lru_cache(maxsize=1)
def training_kmers():
    """The k-mer matrix of the shipped model's training sequences (split.py: the training clusters),
    kept in the cache (making it reads and splits the source set: 0.4-1 s of a one-input run)."""
    from tasks.protein import split
    arrays = cached_arrays("protein/train-kmers", [split.SOURCE_FASTA, split.CLUSTERS, split.__file__, __file__],
                           lambda: csr_arrays(kmer_matrix([sequence for _, sequence in split.make_split().train])))
    return sparse.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=tuple(arrays["shape"]))


def csr_arrays(matrix):
    return {"data": matrix.data, "indices": matrix.indices, "indptr": matrix.indptr, "shape": np.array(matrix.shape)}


def train_identity(sequences):
    """[n] highest k-mer containment of each sequence in one training sequence (novelty: low is new)."""
    left = kmer_matrix(sequences)   # the maximum stays sparse: a dense [train, n] product is ~1 GB;
    best = (training_kmers() @ left.T).max(0).toarray().ravel()   # [train, n]: the large matrix is not transposed
    return best / np.maximum(np.asarray(left.sum(1)).ravel(), 1)
