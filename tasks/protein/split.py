"""Split the Swiss-Prot 50-100 set by 50%-identity cluster (the UniRef50 recipe).

A quarter of the clusters is held out. Their representatives give three disjoint reference
samples of 500 (A: the reference every run is scored against; B: a second sample whose
distance to A is the floor that sampling noise alone gives, and the validation split's
reference; C: the confirming reference every shown test claim must also hold against); the
held-out clusters after A and B are the validation set (C's 500 representatives are among them;
the validation set trains nothing: the denoiser's validation loss and the MI estimator's held-out
check read it). Training uses every member of the remaining clusters, so no reference has a
relative of >= 50% identity in training.
"""
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.files import MiB, read_text
from tasks.protein.fasta import read_fasta

DATA_DIR = Path(__file__).parent / "data"
SOURCE_FASTA = DATA_DIR / "swissprot_50_100.fasta"
CLUSTERS = DATA_DIR / "clusters_id50.tsv"
REFERENCE_A = DATA_DIR / "reference_a.fasta"
REFERENCE_B = DATA_DIR / "reference_b.fasta"
REFERENCE_C = DATA_DIR / "reference_c.fasta"
SPLIT_SEED, HELDOUT_SHARE, REFERENCE_SIZE = 0, 0.25, 500
CLUSTERS_LIMIT = 64 * MiB   # the cluster table: the shipped one (21,142 sequences) is 391 KB


@dataclass
class Split:
    train: list          # (accession, sequence) of training clusters' members
    validation: list     # members of held-out clusters not used as references
    reference_a: list    # 500 held-out representatives
    reference_b: list    # 500 other held-out representatives
    reference_c: list    # 500 more held-out representatives (the confirming test reference)


def read_clusters(path=CLUSTERS):
    """{representative: [members]} from mmseqs' representative<TAB>member lines."""
    clusters = {}
    for line in read_text(path, "cluster file", CLUSTERS_LIMIT).splitlines():
        rep, member = line.split("\t")
        clusters.setdefault(rep, []).append(member)
    return clusters


def held_out_representatives(clusters, seed=SPLIT_SEED):
    """(held-out, kept) cluster representatives: a seeded shuffle whose first HELDOUT_SHARE is
    held out; the first 2 * REFERENCE_SIZE held-out ones are the two reference samples."""
    reps = sorted(clusters)
    np.random.default_rng(seed).shuffle(reps)
    n_held = int(len(reps) * HELDOUT_SHARE)
    return reps[:n_held], reps[n_held:]


def make_split(seed=SPLIT_SEED):
    source = read_fasta(SOURCE_FASTA)
    sequence_of = dict(zip(source.names, source.sequences))
    clusters = read_clusters()
    held, kept = held_out_representatives(clusters, seed)
    def member_pairs(group):          # (name, sequence) of every member of the group's clusters
        return [(m, sequence_of[m]) for rep in group for m in clusters[rep]]

    def representative_pairs(group):  # (name, sequence) of the group's representatives only
        return [(rep, sequence_of[rep]) for rep in group]

    return Split(train=member_pairs(kept), validation=member_pairs(held[2 * REFERENCE_SIZE:]),
                 reference_a=representative_pairs(held[:REFERENCE_SIZE]),
                 reference_b=representative_pairs(held[REFERENCE_SIZE:2 * REFERENCE_SIZE]),
                 reference_c=representative_pairs(held[2 * REFERENCE_SIZE:3 * REFERENCE_SIZE]))

