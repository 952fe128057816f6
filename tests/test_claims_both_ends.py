"""A claim on a run whose headline is only a bound is tested at both ends (bench.report.claims.both_ends):
the p that counts is the larger, 1 where a two-sided difference changes sign; a verdict the ends
disagree on is withdrawn; a claim that no bounded run touches is left as it was."""
from types import SimpleNamespace as NS

from bench.report.claims import both_ends


def difference(diff, p, kind="paired bootstrap"):
    return {"diff": diff, "ci_low": diff - 0.1, "ci_high": diff + 0.1, "p": p, "test": kind}


def lead(budget, t):
    return NS(budget=budget, test=t)


def verdicts(leads, rows=(), ablations=()):
    return NS(leads=list(leads), speedup=list(rows), ablations=list(ablations))


def test_both_ends_counts_the_larger_p_and_one_on_opposite_signs():
    same, flipped, untouched = difference(-1.0, 0.001), difference(-1.0, 0.001), difference(0.3, 0.02)
    v = verdicts([lead(8, same), lead(16, flipped), lead(24, untouched)])
    low = verdicts([lead(8, difference(-0.5, 0.03)), lead(16, difference(0.4, 0.001)), lead(24, difference(0.3, 0.02))])
    assert both_ends(v, low) == 2
    assert same["p"] == 0.03 and same["lower_end"]["diff"] == -0.5
    assert flipped["p"] == 1.0 and flipped["lower_end"]["p"] == 0.001
    assert untouched["p"] == 0.02 and "lower_end" not in untouched


def test_a_speed_up_the_ends_disagree_on_is_not_shown_and_one_sided_ps_take_the_larger():
    row = NS(line="learned", diff=difference(0.05, 0.01, "paired bootstrap, one-sided at the margin"), verdict="yes")
    low_row = NS(line="learned", diff=difference(-0.2, 0.2, "paired bootstrap, one-sided at the margin"),
                 verdict="not shown")
    pair_up, pair_low = {"quality": difference(-0.2, 0.004)}, {"quality": difference(-0.1, 0.04)}
    v = verdicts([], [row], [("idea", [pair_up], [difference(-0.3, 0.01)])])
    low = verdicts([], [low_row], [("idea", [pair_low], [difference(-0.3, 0.01)])])
    assert both_ends(v, low) == 2
    assert row.verdict == "not shown" and row.diff["p"] == 0.2        # one-sided: no sign rule, the larger p
    assert pair_up["quality"]["p"] == 0.04 and v.ablations[0][2][0]["p"] == 0.01


def test_a_claim_the_second_reference_disagrees_with_counts_p_one_under_its_own_key():
    shown_on_a = difference(-0.006, 0.001)
    v = verdicts([lead(12, shown_on_a)])
    assert both_ends(v, verdicts([lead(12, difference(0.001, 0.6))]), "second_reference") == 1
    assert shown_on_a["p"] == 1.0 and shown_on_a["second_reference"]["diff"] == 0.001 and "lower_end" not in shown_on_a
