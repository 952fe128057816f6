"""Read protein BLAST v4 databases (.pin index, .psq residues, .phr ASN.1 headers).

The layout (NCBI BLAST v4, big-endian ints): version 4, type 1 (protein), title and date as
length-prefixed strings, the number of sequences N, total residues (8 bytes, little-endian),
the longest length, then N+1 header offsets into .phr and N+1 sequence offsets into .psq.
Residues use NCBIstdaa codes; each sequence ends with a 0 byte. A header is a BER-encoded
Blast-def-line-set whose first visible string here is ``ACCESSION|GO terms``.
"""
import re
from pathlib import Path

import numpy as np

from bench.errors import BenchError
from bench.files import GiB, checked_path, read_bytes

# A BLAST database file: Swiss-Prot's (metastudent-data) are about 200 MB together.
BLAST_FILE_LIMIT = 4 * GiB

NCBISTDAA = "-ABCDEFGHIKLMNPQRSTVWXYZU*OJ"
_DECODE = np.frombuffer(NCBISTDAA.encode().ljust(256, b"?"), dtype=np.uint8)
_ACCESSION = re.compile(rb"([A-Z0-9]{6,10})\|")


def _read_index(pin):
    raw = read_bytes(pin, "BLAST index", BLAST_FILE_LIMIT)
    at = 0

    def take(n):
        nonlocal at
        chunk, at = raw[at:at + n], at + n
        return chunk

    def int4():
        return int.from_bytes(take(4), "big")

    version, db_type = int4(), int4()
    if version != 4 or db_type != 1:
        raise BenchError(f"{pin}: not a protein BLAST v4 index (version {version}, type {db_type}); "
                         "only protein BLAST v4 databases are read")
    take(int4()), take(int4())                     # title, date
    n = int4()
    take(8), int4()                                # total residues, longest sequence
    header_offsets = np.frombuffer(take(4 * (n + 1)), dtype=">u4").astype(np.int64)
    sequence_offsets = np.frombuffer(take(4 * (n + 1)), dtype=">u4").astype(np.int64)
    return header_offsets, sequence_offsets


def read_blast_db(prefix):
    """Yield (accession, sequence) for every entry of the database at ``prefix`` (no suffix)."""
    prefix = Path(prefix)
    paths = [prefix.with_name(prefix.name + s) for s in (".pin", ".psq", ".phr")]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise BenchError(f"missing BLAST database file(s): {', '.join(missing)}")
    header_offsets, sequence_offsets = _read_index(paths[0])
    residues = np.fromfile(checked_path(paths[1], "BLAST sequence file", BLAST_FILE_LIMIT), dtype=np.uint8)
    headers = read_bytes(paths[2], "BLAST header file", BLAST_FILE_LIMIT)
    for i in range(len(sequence_offsets) - 1):
        codes = residues[sequence_offsets[i]:sequence_offsets[i + 1] - 1]
        match = _ACCESSION.search(headers[header_offsets[i]:header_offsets[i + 1]])
        accession = match.group(1).decode() if match else f"entry{i}"
        yield accession, _DECODE[codes].tobytes().decode()
