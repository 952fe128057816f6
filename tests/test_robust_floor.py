"""Issue 18, honest floors: with a custom reference FASTA the noise floor compares two halves of
that file (and says so), never the shipped second sample with the user's file; a reference too
small to split has no floor, and the run says that."""
import pytest

from bench.run.cell import print_floor
from tasks.protein import task as protein_task
from tasks.protein.fasta import read_fasta, write_fasta
from tasks.protein.split import REFERENCE_A, REFERENCE_B
from tasks.protein.task import ProteinTask


@pytest.fixture
def compared(monkeypatch, tmp_path):
    """Record what the floor compares instead of scoring it (the judge is not needed); an empty
    cache, so that no floor computed before is read."""
    monkeypatch.setenv("UNMASK_BENCH_CACHE", str(tmp_path / "cache"))
    calls = []

    def fake(sequences, reference, passes):
        calls.append((list(sequences), list(reference)))
        return [{"name": "composition_jsd", "value": 0.5}]
    monkeypatch.setattr(protein_task, "summarize_sequences", fake)
    return calls


def custom_reference(tmp_path, n):
    sequences = read_fasta(REFERENCE_A).sequences[:n]
    write_fasta(tmp_path / "mine.fasta", [f"s{i}" for i in range(n)], sequences)
    return tmp_path / "mine.fasta", sequences


def test_a_custom_reference_floor_compares_its_two_halves(tmp_path, compared, capsys):
    path, sequences = custom_reference(tmp_path, 9)
    task = ProteinTask(data=path)
    assert task.floor() == [{"name": "composition_jsd", "value": 0.5}]
    assert compared == [(sequences[1::2], sequences[0::2])]
    assert not set(read_fasta(REFERENCE_B).sequences) & set(compared[0][0])
    assert "half of the custom reference against the other half" in task.floor_label()
    assert "(4 vs 5;" in task.floor_label()
    print_floor(task, [{"floor": [{"name": "composition_jsd", "value": 0.1}]}])  # made under the old label
    out = capsys.readouterr().out
    assert out.startswith("floor (half of the custom reference") and out.strip().endswith("composition_jsd 0.5000")


def test_the_shipped_reference_keeps_its_second_sample(compared):
    task = ProteinTask()
    task.floor()
    assert compared == [(read_fasta(REFERENCE_B).sequences, read_fasta(REFERENCE_A).sequences)]
    assert task.floor_label() == "a second reference sample against the first"


def test_a_reference_too_small_to_split_has_no_floor_and_says_so(tmp_path, compared, capsys):
    path, _ = custom_reference(tmp_path, 3)
    task = ProteinTask(data=path)
    assert task.floor() is None and compared == []
    print_floor(task, [{"floor": None}])
    assert capsys.readouterr().out.strip() == (
        "floor: none: the custom reference has 3 sequences, too few for two halves of 2")


def test_a_stored_floor_with_the_same_label_is_printed_without_computing(compared, capsys):
    stored = [{"name": "composition_jsd", "value": 0.0004}]
    print_floor(ProteinTask(), [{"floor": stored}])  # committed summaries have no floor_label: the shipped one
    assert capsys.readouterr().out.strip() == (
        "floor (a second reference sample against the first): composition_jsd 0.0004")
    assert compared == []


def test_the_floor_is_computed_once_and_read_from_the_cache_after(compared):
    first = ProteinTask().floor()
    again = ProteinTask().floor()   # another process would make a new task: it reads the cache
    assert first == again == [{"name": "composition_jsd", "value": 0.5}] and len(compared) == 1
    key = protein_task.floor_key(read_fasta(REFERENCE_B).sequences, read_fasta(REFERENCE_A).sequences)
    assert key != protein_task.floor_key(read_fasta(REFERENCE_B).sequences[1:], read_fasta(REFERENCE_A).sequences)


def test_the_references_panel_values_are_computed_once_and_a_damaged_copy_again(tmp_path, monkeypatch):
    import numpy as np
    monkeypatch.setenv("UNMASK_BENCH_CACHE", str(tmp_path / "cache"))
    made = []

    def fake_values(sequences):
        made.append(len(sequences))
        return {name: np.arange(len(sequences), dtype=float) for name in protein_task.PANEL}
    monkeypatch.setattr(protein_task, "panel_values", fake_values)
    reference = ["ACDEFGHIKLMNPQRSTVWY", "MKVLAAGIVG"]
    first = protein_task.reference_panel_values(reference)
    again = protein_task.reference_panel_values(reference)
    assert made == [2] and all(np.array_equal(first[n], again[n]) for n in protein_task.PANEL)
    for path in (tmp_path / "cache" / "protein").glob("reference-panel-*.json"):
        path.write_text("{not json")
    protein_task.reference_panel_values(reference)
    assert made == [2, 2]
