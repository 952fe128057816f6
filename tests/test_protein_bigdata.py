"""`bench data protein`: the BLAST v4 reader, windows, and the training-data switches."""
import struct

import pytest
import torch

from bench.errors import BenchError
from tasks.protein.bigdata import SOURCE_DIR, distinct_sequences, windows
from tasks.protein.blastdb import NCBISTDAA, read_blast_db
from tasks.protein.fasta import AMINO_ACIDS, read_fasta
from tasks.protein.split import SOURCE_FASTA


def write_blast_db(prefix, entries, version=4):
    """A protein BLAST v4 database in the documented layout (headers: a BER-like blob with ACC|GO)."""
    headers = [b"\x30\x80\x1a" + bytes([len(a) + 3]) + f"{a}|GO".encode() + b"\x00\x00" for a, _ in entries]
    residues = [bytes(NCBISTDAA.index(c) for c in s) + b"\x00" for _, s in entries]
    def offsets(blobs):               # where each blob starts, and the end of the last
        return [sum(len(b) for b in blobs[:i]) for i in range(len(blobs) + 1)]

    title, date = b"test db", b"today"
    index = struct.pack(">II", version, 1) + struct.pack(">I", len(title)) + title + struct.pack(">I", len(date))
    index += date + struct.pack(">I", len(entries)) + struct.pack("<Q", 0) + struct.pack(">I", 0)
    index += struct.pack(f">{len(entries) + 1}I", *offsets(headers))
    index += struct.pack(f">{len(entries) + 1}I", *offsets(residues))
    prefix.with_name(prefix.name + ".pin").write_bytes(index)
    prefix.with_name(prefix.name + ".phr").write_bytes(b"".join(headers))
    prefix.with_name(prefix.name + ".psq").write_bytes(b"".join(residues))


def test_blast_reader_round_trips_sequences_and_accessions(tmp_path):
    entries = [("P12345", "MKVLAAGW"), ("Q9XYZ1", AMINO_ACIDS + "XBZU"), ("A0A001", "C")]
    write_blast_db(tmp_path / "db", entries)
    assert list(read_blast_db(tmp_path / "db")) == entries


def test_blast_reader_rejects_other_versions_and_missing_files(tmp_path):
    write_blast_db(tmp_path / "db", [("P12345", "MK")], version=5)
    with pytest.raises(BenchError, match="not a protein BLAST v4"):
        list(read_blast_db(tmp_path / "db"))
    with pytest.raises(BenchError, match="missing BLAST database"):
        list(read_blast_db(tmp_path / "nothing"))


def test_windows_cover_the_sequence_in_pieces_of_50_to_100():
    assert windows("A" * 49) == [] and windows("A" * 50) == ["A" * 50] and windows("A" * 100) == ["A" * 100]
    for length in (101, 150, 199, 201, 1234):
        sequence = "".join(AMINO_ACIDS[i % 20] for i in range(length))
        pieces = windows(sequence)
        assert "".join(pieces) == sequence and all(50 <= len(p) <= 100 for p in pieces)


@pytest.mark.skipif(not SOURCE_DIR.is_dir(), reason="metastudent-data is not installed")
def test_the_real_databases_hold_the_committed_50_to_100_set():
    standard = set(AMINO_ACIDS)
    mine = {s for s in distinct_sequences() if 50 <= len(s) <= 100 and set(s) <= standard}
    assert mine == set(read_fasta(SOURCE_FASTA).sequences)


def test_unknown_training_data_and_missing_full_set_are_one_line(tmp_path, monkeypatch):
    from tasks.protein.split import make_split
    from tasks.protein.train import training_sequences
    with pytest.raises(BenchError, match="allowed: small, full, mix"):
        training_sequences("huge", make_split())
    monkeypatch.setenv("UNMASK_BENCH_CACHE", str(tmp_path))
    with pytest.raises(BenchError, match="bench data protein"):
        training_sequences("full", make_split())


def test_windows_cut_inside_a_protein_get_no_start_or_end_token():
    from tasks.protein.bigdata import window_ends
    from tasks.protein.encoding import encode
    from tasks.protein.model import BOS_ID, EOS_ID, PAD_ID
    assert [window_ends(f"P12345/{j}/3") for j in range(3)] == [(True, False), (False, False), (False, True)]
    assert window_ends("P12345/0/1") == (True, True)
    tokens, residue = encode(["MKV", "ACDE", "WY"], [True, False, True], [False, True, True])
    assert tokens[:, 0].tolist() == [BOS_ID, PAD_ID, BOS_ID]
    assert tokens[0, 4] == PAD_ID and tokens[1, 5] == EOS_ID and tokens[2, 3] == EOS_ID
    assert torch.equal(encode(["MKV", "ACDE", "WY"])[1], residue)
    assert torch.equal(encode(["MKV"], [True], [True])[0], encode(["MKV"])[0])
