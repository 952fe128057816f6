import math

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from bench.errors import BenchError
from tasks.protein.fasta import read_fasta
from tasks.protein.metrics import composition_counts, dipeptide_counts, distinct_3mer_share, js_divergence, longest_run


def test_jsd_hand_checked_cases():
    assert js_divergence([1, 0], [0, 1]) == pytest.approx(1.0)  # disjoint supports: 1 bit
    assert js_divergence([3, 1], [3, 1]) == 0.0
    # p = (1/2, 1/2), q = (1, 0): m = (3/4, 1/4)
    # KL(p||m) = 1/2 log2(2/3) + 1/2 log2(2);  KL(q||m) = log2(4/3)
    expected = (0.5 * math.log2(2 / 3) + 0.5 + math.log2(4 / 3)) / 2
    assert js_divergence([1, 1], [2, 0]) == pytest.approx(expected)
    assert expected == pytest.approx(0.31128, abs=1e-5)


def test_jsd_is_the_square_of_scipy_in_base_2():
    rng = np.random.default_rng(0)
    p, q = rng.random(20), rng.random(20)
    assert js_divergence(p, q) == pytest.approx(jensenshannon(p, q, base=2) ** 2)


def test_counts_and_diversity():
    assert composition_counts("AAC").tolist()[:2] == [2, 1]
    assert dipeptide_counts("AAA").sum() == 2 and dipeptide_counts("AAA")[0] == 2
    assert distinct_3mer_share("AAAAA") == pytest.approx(1 / 3) and distinct_3mer_share("ACDEF") == 1.0
    assert longest_run("ACCCDD") == 3


def test_fasta_bad_records_are_reported_and_skipped(tmp_path):
    good = "M" + "ACDEFGHIKL" * 6
    path = tmp_path / "x.fasta"
    path.write_text(f">ok1 desc\n{good[:30]}\n{good[30:]}\n>empty\n>weird\n{good[:-1]}X\n>short\nACD\n>ok2\n{good}\n")
    loaded = read_fasta(path)
    assert loaded.names == ["ok1", "ok2"] and loaded.sequences == [good, good]
    assert [p.split(" record ")[1].split(":")[0] for p in loaded.problems] == ["empty", "weird", "short"]
    assert "x.fasta:4" in loaded.problems[0] and "'X'" in loaded.problems[1] and "outside 50-100" in loaded.problems[2]


def test_fasta_without_headers_is_one_error(tmp_path):
    path = tmp_path / "x.fasta"
    path.write_text("ACDEF\n")
    with pytest.raises(BenchError, match="before the first"):
        read_fasta(path)


def test_split_keeps_reference_clusters_out_of_training():
    from tasks.protein.split import REFERENCE_A, REFERENCE_B, REFERENCE_C, make_split, read_clusters
    split = make_split()
    cluster_of = {m: rep for rep, members in read_clusters().items() for m in members}
    train_clusters = {cluster_of[a] for a, _ in split.train}
    for pairs in (split.reference_a, split.reference_b, split.reference_c, split.validation):
        assert not {cluster_of[a] for a, _ in pairs} & train_clusters
    references = [{cluster_of[a] for a, _ in pairs} for pairs in (split.reference_a, split.reference_b,
                                                                  split.reference_c)]
    assert all(len(r) == 500 for r in references) and len(set.union(*references)) == 1500   # disjoint clusters
    assert read_fasta(REFERENCE_A).names == [a for a, _ in split.reference_a]  # committed = regenerated
    assert read_fasta(REFERENCE_B).sequences == [s for _, s in split.reference_b]
    assert read_fasta(REFERENCE_C).names == [a for a, _ in split.reference_c]


def test_kmer_matrix_holds_each_sequences_distinct_kmers_and_nothing_across_sequences():
    """The vectorised k-mer index against a plain loop: every window of k letters inside one
    sequence, coded sum_j index(letter j) 20^j, once per sequence; none spanning two sequences."""
    from tasks.protein.fasta import AMINO_ACIDS
    from tasks.protein.metrics import INDEX, kmer_matrix
    rng = np.random.default_rng(0)
    sequences = ["".join(rng.choice(list(AMINO_ACIDS), size=n)) for n in rng.integers(0, 40, size=60)]
    sequences += ["AAAAAAAAAA", "ACDEF", "ACDE", "", "ACDEFACDEF"]
    for k in (1, 3, 5):
        matrix = kmer_matrix(sequences, k)
        assert matrix.shape == (len(sequences), 20 ** k)
        for row, s in enumerate(sequences):
            expected = sorted({sum(INDEX[c] * 20 ** j for j, c in enumerate(s[i:i + k]))
                               for i in range(len(s) - k + 1)})
            assert matrix.indices[matrix.indptr[row]:matrix.indptr[row + 1]].tolist() == expected
        assert (matrix.data == 1).all()
    with pytest.raises(KeyError, match="XZ"):
        kmer_matrix(["ACDXZ"])


def test_the_training_kmer_index_is_kept_in_the_cache_and_read_back_unchanged(tmp_path, monkeypatch):
    from tasks.protein import metrics, split
    monkeypatch.setenv("UNMASK_BENCH_CACHE", str(tmp_path))
    metrics.training_kmers.cache_clear()
    expected = metrics.kmer_matrix([s for _, s in split.make_split().train])
    made = metrics.training_kmers()
    metrics.training_kmers.cache_clear()
    monkeypatch.setattr(split, "make_split", lambda: pytest.fail("split again"))
    read = metrics.training_kmers()
    metrics.training_kmers.cache_clear()
    for matrix in (made, read):
        assert matrix.shape == expected.shape and (matrix != expected).nnz == 0
        assert matrix.dtype == expected.dtype and matrix.has_sorted_indices


def test_train_identity_is_the_highest_share_of_a_sequences_kmers_in_one_training_sequence(monkeypatch):
    from tasks.protein import metrics
    training = ["ACDEFGHIKLMNPQ", "MKVLAAGGMKVLAA", "WWWWWWWWW", "ACDEFGHIKL"]
    monkeypatch.setattr(metrics, "training_kmers", lambda: metrics.kmer_matrix(training))
    sequences = ["ACDEFGHIKLMNPQRS", "MKVLAAWWWWW", "YYYYYYYY", "ACDE"]

    def kmers(s):
        return {s[i:i + metrics.IDENTITY_K] for i in range(len(s) - metrics.IDENTITY_K + 1)}
    expected = [max(len(kmers(s) & kmers(t)) for t in training) / max(len(kmers(s)), 1) for s in sequences]
    assert metrics.train_identity(sequences).tolist() == pytest.approx(expected, abs=1e-12)
    assert expected[0] == 10 / 12 and expected[2] == 0 and expected[3] == 0
