"""The antibody task: germline V domains from ANARCI's IMGT tables, split by gene, the masked
region, records scored against the own germline and the nearest allele, and the ladder."""
import pytest
import torch

from bench.errors import BenchError
from conftest import needs_antibody_extra
from tasks.antibody.germlines import FIRST_MASKED, domains, gene_of, usable_v
from tasks.antibody.ladder import ladder, substituted, verdicts
from tasks.antibody.task import MASK_ID, VALUE_IDS, AntibodyTask, encode, truth_region

pytestmark = needs_antibody_extra


@pytest.fixture(scope="module")
def splits():
    return {split: domains(split) for split in ("validation", "test")}


def test_validation_and_test_share_no_gene_and_hold_every_species_and_chain(splits):
    genes = {split: {(d.species, d.chain, gene_of(d.v_allele)) for d in found} for split, found in splits.items()}
    assert not genes["validation"] & genes["test"]
    assert all(len(found) > 250 for found in splits.values())
    assert {(d.species, d.chain) for d in splits["test"]} >= {("human", "H"), ("human", "K"), ("human", "L"),
                                                             ("mouse", "H"), ("mouse", "K"), ("rhesus", "L")}


def test_a_domain_is_its_v_gene_then_its_j_gene_with_imgt_11_to_the_v_gene_s_end_masked(splits):
    for d in splits["test"][:50]:
        assert list(d.imgt) == sorted(d.imgt) and len(d.imgt) == len(d.sequence)
        masked_positions = [p for p, m in zip(d.imgt, d.masked) if m]
        assert min(masked_positions) == min(p for p in d.imgt if p >= FIRST_MASKED)
        assert all(not m for p, m in zip(d.imgt, d.masked) if p > max(masked_positions))  # framework 4 given
        assert d.sequence[d.imgt.index(23)] == "C" and d.sequence[d.imgt.index(104)] == "C"
    assert not usable_v("Q" * 22 + "S" + "-" * 105)


def test_inputs_hold_the_mask_at_the_region_and_the_residues_elsewhere(splits):
    tokens, masked = encode(splits["test"][:4])
    assert bool((tokens[masked] == MASK_ID).all())
    given = tokens[~masked]
    assert set(given.tolist()) <= set(VALUE_IDS.tolist()) | {0, 2, 3}
    assert int(masked[0].sum()) == len(truth_region(splits["test"][0]))


def test_records_of_the_truth_and_of_a_substituted_fill():
    task = AntibodyTask()
    eval_set = task.eval_set(limit=3)
    truth = eval_set.tokens.clone()
    for row, d in enumerate(eval_set.extras["domains"]):
        ids = VALUE_IDS[["ACDEFGHIKLMNPQRSTVWY".index(c) for c in d.sequence]]
        truth[row, 1:len(ids) + 1] = ids
    records = task.records(truth, torch.tensor([1, 2, 3]), torch.arange(3), eval_set)
    assert all(r["recovery"] == 1 and r["identity"] == 1 and r["exact"] == 1 for r in records)
    assert all(r["nearest_allele"].split("*")[0] == r["v_allele"].split("*")[0] or r["identity"] == 1
               for r in records)
    wrong = truth.clone()
    wrong[eval_set.masked] = VALUE_IDS[0]           # every masked residue an alanine
    worse = task.records(wrong, torch.tensor([1, 2, 3]), torch.arange(3), eval_set)
    assert all(r["recovery"] < 0.5 and r["exact"] == 0 for r in worse)
    assert [m["name"] for m in task.summarize(records)] == ["recovery", "identity", "exact_share", "passes"]


def test_a_split_that_is_not_one_is_one_line():
    with pytest.raises(BenchError, match="one of validation, test"):
        AntibodyTask(data="train")


def test_the_ladder_without_the_model_ranks_every_degradation_below_the_truth():
    import numpy as np
    assert sum(a != b for a, b in zip("ACDEFGHIKL", substituted("ACDEFGHIKL", 0.3, np.random.default_rng(0)))) == 3
    task = AntibodyTask(data="validation")
    table = ladder(task, task.eval_set(limit=30), with_model=False)
    kept = verdicts(table)
    assert kept["recovery"] == (True, True) and kept["identity"] == (True, True)
    assert kept["exact"][0] and not kept["exact"][1]   # every substitution breaks exactness alike


def test_the_helpers_train_on_other_species_than_the_test_and_validation_domains(splits):
    from tasks.antibody.germlines import HELPER_SPECIES, SPECIES
    helpers = domains("helpers")
    assert len(helpers) > 150 and {d.species for d in helpers} <= set(HELPER_SPECIES)
    assert not set(HELPER_SPECIES) & set(SPECIES)
    assert not {d.species for d in splits["test"] + splits["validation"]} & set(HELPER_SPECIES)


def test_order_examples_and_their_reward():
    """x0 holds the region's residues, the start masks exactly the region, and the reward ranks a
    fill by its residues right (the given ones always are)."""
    from tasks.antibody.helpers import residue_recovery, shuffled_regions
    task = AntibodyTask()
    x0, start, region = task.order_examples()
    assert bool((start[region] == MASK_ID).all()) and bool((start[~region] == x0[~region]).all())
    assert torch.equal(task.order_reward(x0, x0, None), torch.ones(len(x0)))
    half = x0.clone()
    half[region & (torch.arange(x0.shape[1]) % 2 == 0)] = int(VALUE_IDS[0])
    reward = residue_recovery(x0, half)
    assert bool((reward < 1).all()) and bool((reward > task.order_reward(x0, start, None)).all())
    shuffled = shuffled_regions(x0[:4], region[:4], torch.Generator().manual_seed(0))
    assert torch.equal(shuffled.sort(1).values, x0[:4].sort(1).values) and not torch.equal(shuffled, x0[:4])


def test_pc_samplers_background_is_the_helper_species_residue_frequencies():
    frequencies = AntibodyTask().value_frequencies()
    assert len(frequencies) == 20 and abs(sum(frequencies) - 1) < 1e-9 and min(frequencies) > 0
