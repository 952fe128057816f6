"""Antibody variable domains built from real germline genes (IMGT, as ANARCI ships them).

ANARCI's ``anarci.germlines.all_germlines`` holds every V and J allele in gapped IMGT numbering
(128 positions: IMGT 1 at index 0), so each residue's IMGT position, and with it the framework and
CDR it lies in, is known. An input is one V gene's first allele joined to a J gene of the same
species and chain type (the J chosen by a hash of the V allele's name: framework 4), without a D
gene or N additions: CDR3 is only the V gene's end and the J gene's start, as documented in the
task README. The genes are split by name into validation and test halves (no gene in both).
"""
import hashlib
from dataclasses import dataclass

import numpy as np

from bench.errors import BenchError

SPECIES = ("human", "mouse", "rhesus")     # the three AntiBERTy's training data holds most of
# The helpers (MI estimator, order policies) train on the other species ANARCI holds, so no gene of
# the validation or test domains is ever a helper's training input (task README, "Helpers").
HELPER_SPECIES = ("rat", "rabbit", "pig", "alpaca", "cow")
CHAINS = ("H", "K", "L")                   # heavy, kappa and lambda chains
IMGT_LENGTH = 128
AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
FIRST_MASKED = 11        # IMGT position: the region from here to the V gene's end is masked
SPLITS = ("validation", "test")
INSTALL = "pip install -e '.[antibody]'"   # the extra: anarci (these genes) and antiberty (the model)


@dataclass(frozen=True)
class Domain:
    """One input: its V and J alleles, the sequence and each residue's IMGT position."""
    species: str
    chain: str
    v_allele: str
    j_allele: str
    sequence: str
    imgt: tuple          # IMGT position (1-based) of each residue of ``sequence``
    masked: tuple        # bool per residue: inside the masked region (IMGT 11 to the V gene's end)


def digest(text):
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)


def gene_of(allele):
    return allele.split("*")[0]


def split_of(species, chain, allele):
    """'validation' or 'test' by a hash of the gene's name (every allele of a gene goes together)."""
    return SPLITS[digest(f"{species}/{chain}/{gene_of(allele)}") % 2]


def usable_v(gapped):
    """A complete V gene: the 20 amino acids only, residues at IMGT 1, the first cysteine (23),
    the conserved tryptophan (41) and the second cysteine (104). (ANARCI 2026.2.13.2 numbers
    rhesus heavy and kappa V genes one gap off from IMGT, so none of them passes.)"""
    residues = gapped.replace("-", "")
    return (len(gapped) == IMGT_LENGTH and set(residues) <= set(AMINO_ACIDS) and gapped[0] != "-"
            and gapped[22] == "C" and gapped[40] == "W" and gapped[103] == "C")


def usable_j(gapped):
    """A J gene of the 20 amino acids only, reaching IMGT 118 (the J-Trp/Phe that starts FR4)."""
    residues = gapped.replace("-", "")
    return len(gapped) == IMGT_LENGTH and residues and set(residues) <= set(AMINO_ACIDS) and gapped[117] != "-"


def germline_table():
    """ANARCI's germline alleles (imported on first use: a 350 KB module)."""
    try:
        from anarci.germlines import all_germlines
    except ImportError:
        raise BenchError(f"the antibody task's inputs need ANARCI's germline genes: {INSTALL}") from None
    return all_germlines


def v_alleles(species, chain):
    """{allele: gapped V} of the usable alleles of one species and chain type."""
    found = germline_table()["V"].get(chain, {}).get(species, {})
    return {name: seq for name, seq in sorted(found.items()) if usable_v(seq)}


def first_alleles(alleles):
    """Each gene's first usable allele by name (IGHV1-2*02 where *01 is unusable)."""
    kept = {}
    for name in sorted(alleles):
        kept.setdefault(gene_of(name), name)
    return sorted(kept.values())


def join(v_gapped, j_gapped):
    """(sequence, IMGT positions, masked flags) of a V joined to a J: the V's residues, then the
    J's residues at positions the V leaves empty."""
    residues = []
    for index in range(IMGT_LENGTH):
        if v_gapped[index] != "-":
            residues.append((v_gapped[index], index + 1, index + 1 >= FIRST_MASKED))
        elif j_gapped[index] != "-" and index + 1 > last_residue(v_gapped):
            residues.append((j_gapped[index], index + 1, False))
    sequence, imgt, masked = zip(*residues)
    return "".join(sequence), tuple(imgt), tuple(masked)


def last_residue(gapped):
    """The IMGT position of a gapped sequence's last residue."""
    return max(i + 1 for i, c in enumerate(gapped) if c != "-")


def domains(split):
    """Every input of ``split``: one per V gene of each species and chain type, in a fixed
    shuffled order (by a hash of the allele's name) so that a ``--limit`` takes a mix. Split
    "helpers" is every gene of HELPER_SPECIES (the helpers' training inputs)."""
    table, found = germline_table(), []
    for species in HELPER_SPECIES if split == "helpers" else SPECIES:
        for chain in CHAINS:
            j_genes = {n: s for n, s in sorted(table["J"].get(chain, {}).get(species, {}).items()) if usable_j(s)}
            if not j_genes:
                continue
            alleles = v_alleles(species, chain)
            for name in first_alleles(alleles):
                if split != "helpers" and split_of(species, chain, name) != split:
                    continue
                j_name = sorted(j_genes)[digest(name) % len(j_genes)]
                sequence, imgt, masked = join(alleles[name], j_genes[j_name])
                found.append(Domain(species, chain, name, j_name, sequence, imgt, masked))
    return sorted(found, key=lambda d: digest(f"order/{d.species}/{d.chain}/{d.v_allele}"))


def allele_matrix(species, chain):
    """(allele names, uint8 [A, 128] gapped V alleles) of one species and chain type: every
    usable allele, what a filled region is compared with (the nearest germline)."""
    alleles = v_alleles(species, chain)
    names = sorted(alleles)
    return names, np.frombuffer("".join(alleles[n] for n in names).encode(), dtype=np.uint8).reshape(len(names), -1)
