"""The protein task's second test reference (reference C, tasks/protein/split.py): 500 held-out
cluster representatives disjoint from reference A, from reference B and from training, drawn by the
same seeded shuffle, so of the same length distribution. `bench report` measures every test run's
headline against it too (``second_reference``) and shows a claim only where both references agree:
a verdict between two runs must not hang on which natural sample happened to be the reference.

Imports no model code: the report loads it beside the statistics.
"""
import functools
import hashlib

import numpy as np

from tasks.protein.fasta import AMINO_ACIDS, read_fasta
from tasks.protein.split import REFERENCE_A, REFERENCE_C
from tasks.protein.statistics import window_jsd

HEADLINE = "window_jsd"


def data_id(path):
    """The data id a run scored against the FASTA ``path`` records (ProteinTask.eval_set's digest)."""
    return hashlib.sha256("\n".join(read_fasta(path).sequences).encode()).hexdigest()[:12]


@functools.lru_cache(maxsize=1)
def reference_c_recipe():
    """(data id of reference A, the headline's per-input recipe against reference C): C's pooled
    composition and its sequences' own windowed-composition JSDs against it."""
    sequences = read_fasta(REFERENCE_C).sequences
    composition = np.zeros(len(AMINO_ACIDS))
    for sequence in sequences:
        composition += [sequence.count(letter) for letter in AMINO_ACIDS]
    return data_id(REFERENCE_A), composition


def second_reference(summary):
    """``summary``'s headline metric measured against reference C (a copy of its dict with the recipe's
    reference composition and reference values replaced), or None for a run not scored against
    reference A (the validation split's, a user's --data) or without a per-input headline."""
    metric = next((m for m in summary.get("metrics", []) if m.get("name") == HEADLINE), None)
    recipe = (metric or {}).get("per_input")
    first_id, composition = reference_c_recipe()
    if recipe is None or summary["config"].get("data_id") != first_id:
        return None
    values = reference_c_values("".join(recipe["alphabet"]), int(recipe["window"]))
    return dict(metric, per_input=dict(recipe, reference=composition.tolist(), reference_values=values.tolist()))


@functools.lru_cache(maxsize=2)
def reference_c_values(alphabet, window):
    """[500] reference C's windowed-composition JSDs against its own pooled composition."""
    return window_jsd(read_fasta(REFERENCE_C).sequences, alphabet, window, reference_c_recipe()[1])
