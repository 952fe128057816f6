"""FASTA reading with per-record checks: bad records are reported and skipped."""
from dataclasses import dataclass, field
from pathlib import Path

from bench.errors import BenchError
from bench.files import GiB, read_text

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"  # the 20 standard residues
# A FASTA file: the largest the suite reads is the stage-2 training set, 1.8 million windows of
# 50-100 residues (about 200 MB); 1 GiB is five times that, about 5 GB of memory as Python text.
FASTA_LIMIT = 1 * GiB


@dataclass
class FastaSet:
    names: list
    sequences: list
    source: str
    problems: list = field(default_factory=list)


def _records(lines, source):
    """(name, header line number, sequence) triples; text before the first '>' is an error."""
    name, start, chunks = None, 0, []
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        if line.startswith(">"):
            if name is not None:
                yield name, start, "".join(chunks)
            name, start, chunks = line[1:].split()[0] if line[1:].split() else "", number, []
        elif line:
            if name is None:
                raise BenchError(f"{source}:{number}: sequence text before the first '>' header; not FASTA")
            chunks.append(line.upper())
    if name is not None:
        yield name, start, "".join(chunks)


def _problem(sequence, min_len, max_len):
    if not sequence:
        return "empty sequence"
    bad = sorted(set(sequence) - set(AMINO_ACIDS))
    if bad:
        return f"non-standard letters {''.join(bad)!r} (allowed: the 20 standard amino acids {AMINO_ACIDS})"
    if not min_len <= len(sequence) <= max_len:
        return f"length {len(sequence)} outside {min_len}-{max_len}"
    return None


def read_fasta(path, min_len=50, max_len=100, limit=FASTA_LIMIT):
    """Read a FASTA file of at most ``limit`` bytes; records with non-standard letters, no
    residues or a length outside [min_len, max_len] are reported as 'file:line record: reason'
    and skipped."""
    path = Path(path)
    names, sequences, problems = [], [], []
    for name, line, sequence in _records(read_text(path, "FASTA file", limit).splitlines(), path):
        reason = _problem(sequence, min_len, max_len)
        if reason:
            problems.append(f"{path.name}:{line} record {name or '(no name)'}: {reason}")
        else:
            names.append(name)
            sequences.append(sequence)
    if not sequences:
        raise BenchError(f"no usable sequences in {path} ({len(problems)} records skipped)")
    return FastaSet(names, sequences, str(path), problems)


def write_fasta(path, names, sequences, width=80):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for name, sequence in zip(names, sequences):
        lines.append(f">{name}")
        lines += [sequence[i:i + width] for i in range(0, len(sequence), width)]
    path.write_text("\n".join(lines) + "\n")
