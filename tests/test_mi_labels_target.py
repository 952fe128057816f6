"""Which probed pairs an estimator learns from (strategies.mi.exact.label_target)."""
import math

import torch


def test_both_keeps_pairs_probed_both_ways_and_either_takes_one_direction_too():
    from strategies.mi.exact import label_target
    nan = float("nan")
    mi = torch.tensor([[[0.0, 0.2, 0.4], [0.1, 0.0, 0.3], [nan, nan, nan]]])   # rows 0, 1 probed, row 2 not
    both = label_target(mi, "both")
    assert math.isclose(float(both[0, 0, 1]), 0.15, rel_tol=1e-6) and both[0, 0, 2].isnan()
    either = label_target(mi, "either")
    assert math.isclose(float(either[0, 0, 1]), 0.15, rel_tol=1e-6)
    assert math.isclose(float(either[0, 0, 2]), 0.4, rel_tol=1e-6) and math.isclose(float(either[0, 2, 1]), 0.3,
                                                                                  rel_tol=1e-6)
    assert torch.allclose(either, either.transpose(-1, -2), equal_nan=True) and either[0, 2, 2].isnan()
