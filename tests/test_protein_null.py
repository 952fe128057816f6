"""Natural variation at a run's sizes (issue 29 item 6): the null of each protein metric drawn at
n natural sequences against the m references, and the run's flag against its bound."""
import numpy as np
import pytest

from bench.results.summary import mark_natural
from tasks.protein.null import null_distribution

NO_PANEL = lambda sequences: {}   # noqa: E731 (the judge's panel left out: composition and windows only)
REFERENCE = ["ACDEFGHIKLMNPQRSTVWY" * 3] * 12


def test_natural_sequences_identical_to_the_reference_score_zero_on_every_draw():
    null = null_distribution(REFERENCE * 2, REFERENCE, 6, NO_PANEL, draws=20)
    assert set(null) == {"window_jsd", "composition_jsd"}
    for value in null.values():
        assert value["mean"] == pytest.approx(0, abs=1e-12) and value["bound"] == pytest.approx(0, abs=1e-12)
        assert (value["draws"], value["n"], value["m"]) == (20, 6, 12)


def test_the_composition_jsd_of_a_draw_of_one_residue_sequences_is_the_known_value():
    """A pool of poly-A sequences against a reference of all 20 residues equally: JSD between a point
    mass and the uniform distribution over 20, in bits: 1 - (19/40) log2(20/19) ... computed directly."""
    null = null_distribution(["A" * 60] * 10, REFERENCE, 4, NO_PANEL, draws=5)
    p, q = np.eye(20)[0], np.full(20, 1 / 20)
    m = (p + q) / 2
    kl = lambda a: float(np.sum(a[a > 0] * np.log2(a[a > 0] / m[a > 0])))   # noqa: E731
    assert null["composition_jsd"]["mean"] == pytest.approx((kl(p) + kl(q)) / 2, rel=1e-9)


def test_the_null_of_a_smaller_run_is_wider_and_its_bound_lies_above_its_mean():
    rng = np.random.default_rng(0)
    pool = ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), 60)) for _ in range(200)]
    small, large = (null_distribution(pool, pool[:100], n, NO_PANEL, draws=50) for n in (5, 80))
    for name in small:
        assert small[name]["bound"] >= small[name]["mean"] and small[name]["mean"] > large[name]["mean"]


def test_a_custom_reference_is_its_own_pool_against_the_rest_and_too_few_give_none():
    null = null_distribution(None, REFERENCE, 4, NO_PANEL, draws=10)
    assert null["window_jsd"]["m"] == 8 and null["window_jsd"]["n"] == 4
    assert null_distribution(None, REFERENCE[:3], 2, NO_PANEL) is None
    assert null_distribution(["A" * 9] * 3, REFERENCE, 4, NO_PANEL) is None   # pool smaller than the run


@pytest.mark.parametrize("value,higher_is_better,within", [(0.004, False, True), (0.006, False, False),
                                                            (0.006, True, True), (0.004, True, False)])
def test_a_run_is_within_natural_variation_where_it_is_no_worse_than_the_bound(value, higher_is_better, within):
    metrics = [{"name": "window_jsd", "value": value, "higher_is_better": higher_is_better},
               {"name": "passes", "value": 10.0, "higher_is_better": False}]
    marked = mark_natural(metrics, {"window_jsd": {"mean": 0.003, "bound": 0.005, "draws": 50, "n": 5, "m": 8}})
    assert marked[0]["within_natural"] is within and marked[0]["natural_bound"] == 0.005
    assert "within_natural" not in marked[1]
