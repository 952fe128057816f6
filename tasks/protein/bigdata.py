"""`bench data protein`: a large training set from all of UniProtKB/Swiss-Prot 2014_01.

Source: Debian's `metastudent-data` (its MFO/BPO/CCO BLAST databases together hold about
435,000 distinct Swiss-Prot sequences). Every source sequence that aligns to a held-out
sequence (any member of a held-out cluster: references A and B and the validation set) at
>= 50% identity over >= half of the held-out sequence (mmseqs2 easy-search) is dropped whole,
so no reference has a >= 50%-identity relative in training. The rest are cut into windows of
50-100 residues (a sequence of length L > 100 into ceil(L/100) near-equal consecutive pieces,
named ``ACCESSION/j/n`` for piece j of n); windows with a non-standard letter are skipped.
Cached as a FASTA file; not committed. Training encodes a window without BOS / EOS where it was
cut (``window_ends``), so that pieces of long proteins are not taught as whole proteins.
"""
import math
import shutil
import subprocess
import tempfile
from pathlib import Path

from bench.checkpoints import cache_dir
from bench.errors import BenchError
from bench.files import GiB, read_text
from tasks.protein.blastdb import read_blast_db
from tasks.protein.fasta import AMINO_ACIDS, write_fasta
from tasks.protein.split import make_split

SOURCE_DIR = Path("/usr/share/metastudent-data/dataset_201401")
ONTOLOGIES = ("MFO", "BPO", "CCO")
MIN_IDENTITY, MIN_QUERY_COVER = 0.5, 0.5
INSTALL_HINT = "install it with: apt-get install metastudent-data mmseqs2"
HITS_LIMIT = 4 * GiB   # mmseqs' hits of the held-out sequences among 1.8 million windows


def full_set_path():
    return cache_dir() / "protein" / "swissprot2014_windows.fasta"


def distinct_sequences(source_dir=SOURCE_DIR):
    """{sequence: first accession} over the three databases, in a fixed order."""
    if not source_dir.is_dir():
        raise BenchError(f"Swiss-Prot source {source_dir} not found; {INSTALL_HINT}")
    first = {}
    for ontology in ONTOLOGIES:
        for accession, sequence in read_blast_db(source_dir / ontology / "goasp.fasta"):
            first.setdefault(sequence, accession)
    return first


def windows(sequence, longest=100, shortest=50):
    """Consecutive near-equal pieces of at most ``longest`` residues; none shorter than ``shortest``."""
    if len(sequence) < shortest:
        return []
    pieces = math.ceil(len(sequence) / longest)
    bounds = [round(i * len(sequence) / pieces) for i in range(pieces + 1)]
    return [sequence[a:b] for a, b in zip(bounds, bounds[1:])]


def window_ends(name):
    """(has the protein's N-terminus, has its C-terminus) of a window named ``ACC/j/n``."""
    j, n = (int(x) for x in name.rsplit("/", 2)[1:])
    return j == 0, j == n - 1


def relatives_of_heldout(heldout, candidates, workdir):
    """Names in ``candidates`` that mmseqs2 aligns to a held-out sequence (>= 50% id, >= 50% cover)."""
    if shutil.which("mmseqs") is None:
        raise BenchError(f"mmseqs (mmseqs2) not found; {INSTALL_HINT}")
    query, target, hits = (workdir / n for n in ("heldout.fasta", "all.fasta", "hits.m8"))
    write_fasta(query, [f"h{i}" for i in range(len(heldout))], heldout)
    write_fasta(target, list(candidates), list(candidates.values()))
    subprocess.run(["mmseqs", "easy-search", str(query), str(target), str(hits), str(workdir / "tmp"),
                    "--min-seq-id", str(MIN_IDENTITY), "--format-output", "query,target,fident,alnlen,qlen",
                    "--threads", "2", "-v", "1"], check=True)
    related = set()
    for line in read_text(hits, "mmseqs hits file", HITS_LIMIT).splitlines():
        _, target_name, _, alnlen, qlen = line.split("\t")
        if int(alnlen) >= MIN_QUERY_COVER * int(qlen):
            related.add(target_name)
    return related


def build_full_set(out=None):
    """Write the windowed training FASTA; returns (path, counts)."""
    split = make_split()
    heldout = [s for _, s in split.validation + split.reference_a + split.reference_b]
    by_sequence = distinct_sequences()
    candidates = {f"s{i}_{acc}": seq for i, (seq, acc) in enumerate(by_sequence.items())}
    with tempfile.TemporaryDirectory() as tmp:
        related = relatives_of_heldout(heldout, candidates, Path(tmp))
    standard = set(AMINO_ACIDS)
    names, pieces = [], []
    for name, sequence in candidates.items():
        if name in related:
            continue
        pieces_of = windows(sequence)
        for j, piece in enumerate(pieces_of):
            if set(piece) <= standard:
                names.append(f"{name.split('_', 1)[1]}/{j}/{len(pieces_of)}")
                pieces.append(piece)
    out = Path(out or full_set_path())
    out.parent.mkdir(parents=True, exist_ok=True)
    write_fasta(out, names, pieces)
    counts = {"distinct": len(by_sequence), "dropped_relatives": len(related), "windows": len(pieces)}
    return out, counts
