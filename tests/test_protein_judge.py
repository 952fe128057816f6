"""The UniRep judge: the mLSTM recurrence, causality, file errors, and the real weights' check."""
import numpy as np
import pytest

from bench.errors import BenchError
from tasks.protein.fasta import read_fasta
from tasks.protein.judge import HEAD_COLUMN, START, TOKEN, UniRepJudge, weights_path
from tasks.protein.split import REFERENCE_A


def tiny_unirep(path, hidden=6, cells=2, seed=0):
    """A random npz with UniRep's keys and shapes (26x10 embedding, stacked cells, 25-way head)."""
    rng = np.random.default_rng(seed)
    arrays = {"embedding": rng.normal(size=(26, 10)), "dense.w": rng.normal(size=(hidden, 25)),
              "dense.b": rng.normal(size=25)}
    width = 10
    for i in range(cells):
        arrays.update({f"mlstm.{i}.wx": rng.normal(size=(width, 4 * hidden)),
                       f"mlstm.{i}.wh": rng.normal(size=(hidden, 4 * hidden)),
                       f"mlstm.{i}.wmx": rng.normal(size=(width, hidden)),
                       f"mlstm.{i}.wmh": rng.normal(size=(hidden, hidden)),
                       f"mlstm.{i}.gx": rng.uniform(0.5, 2, 4 * hidden),
                       f"mlstm.{i}.gh": rng.uniform(0.5, 2, 4 * hidden),
                       f"mlstm.{i}.gmx": rng.uniform(0.5, 2, hidden), f"mlstm.{i}.gmh": rng.uniform(0.5, 2, hidden),
                       f"mlstm.{i}.b": rng.normal(size=4 * hidden)})
        width = hidden
    np.savez(path, **arrays)
    return arrays


def naive_nll(arrays, sequence):
    """One sequence, one step at a time, float64, straight from the UniRep equations."""
    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    def normalised(w, g):             # weight normalisation: each column of w scaled to norm g
        return w / np.linalg.norm(w, axis=0) * g

    n_cells = len({k.split(".")[1] for k in arrays if k.startswith("mlstm.")})
    states = [(np.zeros(arrays["mlstm.0.wmh"].shape[0]),) * 2 for _ in range(n_cells)]
    nll, previous = [], START
    for residue in sequence:
        x = arrays["embedding"][previous]
        for i in range(n_cells):
            cell = {k.split(".")[2]: v for k, v in arrays.items() if k.startswith(f"mlstm.{i}.")}  # cell i's arrays
            h, c = states[i]
            m = (x @ normalised(cell["wmx"], cell["gmx"])) * (h @ normalised(cell["wmh"], cell["gmh"]))
            gates = x @ normalised(cell["wx"], cell["gx"]) + m @ normalised(cell["wh"], cell["gh"]) + cell["b"]
            gi, gf, go, gu = np.split(gates, 4)
            c = sigmoid(gf) * c + sigmoid(gi) * np.tanh(gu)
            h = sigmoid(go) * np.tanh(c)
            states[i], x = (h, c), h
        logits = (x @ arrays["dense.w"] + arrays["dense.b"])[HEAD_COLUMN]
        log_z = np.log(np.exp(logits - logits.max()).sum()) + logits.max()
        nll.append(log_z - logits["ACDEFGHIKLMNPQRSTVWY".index(residue)])
        previous = TOKEN[residue]
    return np.array(nll)


def test_batched_judge_matches_a_step_by_step_reference(tmp_path):
    arrays = tiny_unirep(tmp_path / "u.npz")
    sequences = ["MKV", "ACDEFGHIKLMNPQRSTVWY", "WW", "GPGPGPGPGAAK"]
    got = UniRepJudge(tmp_path / "u.npz").residue_nll(sequences, batch_size=3)
    for sequence, nll in zip(sequences, got):
        assert nll.shape == (len(sequence),)
        np.testing.assert_allclose(nll, naive_nll(arrays, sequence), rtol=1e-4, atol=1e-5)


def test_judge_is_causal(tmp_path):
    tiny_unirep(tmp_path / "u.npz")
    judge = UniRepJudge(tmp_path / "u.npz")
    a, b = judge.residue_nll(["MKVLAAG", "MKVWAAG"])
    assert np.allclose(a[:3], b[:3]) and not np.isclose(a[3:], b[3:]).any()  # residue 3 differs


def test_missing_or_foreign_judge_file_is_one_line(tmp_path):
    with pytest.raises(BenchError, match="bench data unirep"):
        UniRepJudge(tmp_path / "absent.npz")
    np.savez(tmp_path / "other.npz", something=np.zeros(3))
    with pytest.raises(BenchError, match="not a UniRep npz"):
        UniRepJudge(tmp_path / "other.npz")


@pytest.mark.skipif(not weights_path().is_file(), reason="UniRep weights not fetched (python -m bench data unirep)")
def test_real_judge_prefers_natural_sequences_to_shuffled_ones():
    natural = read_fasta(REFERENCE_A).sequences[:60]
    rng = np.random.default_rng(0)
    shuffled = ["".join(rng.permutation(list(s))) for s in natural]
    judge = UniRepJudge()
    ppl = [np.exp(np.concatenate(judge.residue_nll(group)).mean()) for group in (natural, shuffled)]
    assert ppl[0] < 16.5 < ppl[1] < 20


def test_the_normalised_weights_are_kept_in_the_cache_and_a_damaged_copy_is_made_again(tmp_path, monkeypatch):
    monkeypatch.setenv("UNMASK_BENCH_CACHE", str(tmp_path / "cache"))
    tiny_unirep(tmp_path / "u.npz")
    sequences = ["MKV", "ACDEFGHIKLMNPQRSTVWY"]
    fresh = UniRepJudge(tmp_path / "u.npz").residue_nll(sequences)
    (kept,) = (tmp_path / "cache" / "protein").glob("unirep-normalised-*.npz")
    monkeypatch.setattr(UniRepJudge, "_read_weights", lambda *args: pytest.fail("normalised again"))
    for got, want in zip(UniRepJudge(tmp_path / "u.npz").residue_nll(sequences), fresh):
        assert np.array_equal(got, want)                     # read back: the same arrays, bit for bit
    kept.write_bytes(kept.read_bytes()[:100])
    monkeypatch.undo()
    monkeypatch.setenv("UNMASK_BENCH_CACHE", str(tmp_path / "cache"))
    for got, want in zip(UniRepJudge(tmp_path / "u.npz").residue_nll(sequences), fresh):
        assert np.array_equal(got, want)
    assert kept.stat().st_size > 100                         # made and written again
