"""Issue 47 item 6, the metrics the field reports: d3LLM's AUP per family (bench/report/aup.py), the
ARness of a reveal order (bench/arness.py, recorded by the decode loop as ``reveal_pass``) and the
exact task's token and sequence error rates (arXiv 2502.09622; tasks/hmm/task.py)."""
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
import torch

from bench.arness import arness_metrics, global_arness
from bench.decode import decode, revealed_at
from bench.report.aup import aup, aup_weight, task_aup, write_aup
from bench.results.summary import metric_of
from bench.run.verify import record_difference
from tasks.hmm import chain
from tasks.hmm.task import HMMTask, sequence_error_rate, token_error_rate

# --- AUP ------------------------------------------------------------------------------------------


def test_aup_of_a_flat_curve_at_the_best_accuracy_is_the_rectangle_under_it():
    # W = 1 at y_max: AUP is the plain area from 0 to the last parallelism, 4 x 80
    value, kept = aup([(4.0, 80.0), (1.0, 80.0), (2.0, 80.0)], y_max=80.0)
    assert value == pytest.approx(320.0)
    assert kept == [(1.0, 80.0), (2.0, 80.0), (4.0, 80.0)]


def test_aup_weights_the_trapezoids_by_the_accuracy_lost():
    value, _ = aup([(1.0, 80.0), (3.0, 76.0)], y_max=80.0)
    weight = math.exp(-3 * (1 - 76 / 80))
    assert aup_weight(76.0, 80.0) == pytest.approx(weight)
    assert value == pytest.approx(80.0 + 0.5 * 2 * (76 * weight + 80))
    assert value < 80.0 + 0.5 * 2 * (76 + 80)   # below the unweighted area


def test_aup_leaves_out_points_more_than_five_below_the_least_parallel_one():
    value, kept = aup([(1.0, 80.0), (2.0, 74.9), (3.0, 79.0)], y_max=80.0)
    assert kept == [(1.0, 80.0), (3.0, 79.0)]
    assert value == pytest.approx(80.0 + 0.5 * 2 * (79 * aup_weight(79.0, 80.0) + 80))


def summary(strategy, label, passes, accuracy):
    """A result summary as the report reads it: passes and an accuracy headline."""
    metric = {"name": "acc", "label": "accuracy", "value": accuracy, "ci_low": accuracy, "ci_high": accuracy,
              "higher_is_better": True, "n": 10}
    return {"task": "toy_aup", "strategy": strategy, "label": label, "headline": "acc",
            "config": {"strategy_spec": label, "strategy_params": {}},
            "metrics": [{"name": "passes", "value": passes, "ci_low": passes, "ci_high": passes,
                         "higher_is_better": False, "n": 10}, metric]}


def toy_group():
    # 'one' reveals one position a pass over 12 masked positions: the reference, 12 passes
    return [summary("one", "one", 12.0, 0.80), summary("fast", "fast:k=2", 6.0, 0.80),
            summary("fast", "fast:k=4", 3.0, 0.78), summary("solo", "solo", 4.0, 0.5)]


def test_a_family_curve_is_scored_in_tokens_per_pass_and_a_single_run_gets_no_area(tmp_path):
    rows, y_max, masked, reference = task_aup(toy_group(), "toy_aup")
    assert (masked, y_max, reference["label"]) == (12.0, 80.0, "one")
    by_family = {row.family: row for row in rows}
    fast = by_family["fast"]
    assert [p[1] for p in fast.points] == [2.0, 4.0]        # 12 positions / 6 and / 3 passes
    assert fast.value == pytest.approx(2 * 80 + 0.5 * 2 * (78 * aup_weight(78.0, 80.0) + 80))
    for single in ("one", "solo"):
        assert by_family[single].value is None and by_family[single].note().startswith("single run")
    paths = write_aup(toy_group(), "toy_aup", tmp_path)
    text = paths[0].read_text()
    assert "| solo | - |" in text and "single run: no curve, no area" in text
    assert paths[1].read_text().splitlines()[1].startswith("fast,")   # the family with an area first


def test_no_aup_where_the_headline_is_not_an_accuracy():
    lower_better = toy_group()
    for run in lower_better:
        metric_of(run, "acc")["higher_is_better"] = False
    assert task_aup(lower_better, "toy_aup") is None


# --- ARness ---------------------------------------------------------------------------------------


def test_left_to_right_is_the_maximum_reversed_and_random_orders_are_lower():
    n = 16
    assert global_arness(list(range(n))) == 1.0
    assert global_arness([i // 4 for i in range(n)]) == 1.0            # left-to-right blocks of 4 a pass
    assert global_arness([n - 1 - i for i in range(n)]) == pytest.approx(1 / n)
    assert global_arness([n - 1 - i for i in range(n)], k=2) == pytest.approx(2 / n)
    shuffled = np.random.default_rng(0).permutation(n).tolist()
    assert global_arness(shuffled) < 0.5
    mean_random = np.mean([global_arness(np.random.default_rng(s).permutation(n).tolist()) for s in range(400)])
    assert mean_random == pytest.approx(sum(1 / m for m in range(1, n + 1)) / n, abs=0.02)   # H_n / n


def test_given_positions_do_not_count():
    assert global_arness([None, 0, None, 1, 2]) == 1.0
    assert global_arness([None, 1, None, 0]) == 0.5
    assert global_arness([None, None]) is None


@dataclass
class Ends:
    """Reveal the leftmost (or rightmost) masked position each pass."""
    name: ClassVar[str] = "ends"
    right: bool = False

    def select(self, state):
        index = torch.arange(state.masked.shape[1]).expand_as(state.masked)
        score = torch.where(state.masked, -index if not self.right else index, -10 ** 6)
        pick = torch.zeros_like(state.masked)
        pick[torch.arange(len(pick)), score.argmax(1)] = True
        return pick


def test_the_decode_records_each_positions_reveal_pass(table_model):
    masked = torch.tensor([[True] * 6, [False, True, True, False, True, True]])
    tokens = torch.where(masked, 0, 1)
    left = decode(table_model, tokens, masked, Ends())
    assert left.reveal_pass.tolist() == [[0, 1, 2, 3, 4, 5], [-1, 0, 1, -1, 2, 3]]
    right = decode(table_model, tokens, masked, Ends(right=True))
    assert right.reveal_pass.tolist() == [[5, 4, 3, 2, 1, 0], [-1, 3, 2, -1, 1, 0]]
    records = [{"reveal_pass": [p if p >= 0 else None for p in row]} for row in right.reveal_pass.tolist()]
    assert metric_of({"metrics": arness_metrics(records)}, "arness")["value"] == pytest.approx((1 / 6 + 1 / 4) / 2)


def test_a_remasked_position_counts_at_its_final_reveal():
    reveal = torch.tensor([[0, -1, -1]])
    after = revealed_at(reveal, torch.tensor([[False, True, False]]), torch.tensor([[True, False, False]]), 1)
    assert after.tolist() == [[-1, 1, -1]]


def test_runs_made_before_the_order_was_recorded_have_no_arness():
    assert arness_metrics([{"passes": 3}]) == []
    assert record_difference({"passes": 3}, {"passes": 3, "reveal_pass": [0, 1, 2]}, [0.0, None]) == ""
    assert "reveal_pass" in record_difference({"passes": 3, "reveal_pass": [0, 2, 1]},
                                              {"passes": 3, "reveal_pass": [0, 1, 2]}, [0.0, None])


# --- token and sequence error rates on the exact task ---------------------------------------------


def test_token_and_sequence_error_rates_of_a_hand_made_record_set():
    assert token_error_rate([-64.0, -128.0], 64, 64.0)["value"] == pytest.approx(1.5)
    assert token_error_rate([-64.0], 64, 64.0)["optimum"] == pytest.approx(1.0)
    assert sequence_error_rate([-10.0, -20.0, -30.0, -40.0], 25.0)["value"] == pytest.approx(0.5)
    # they measure differently: every sample a little past the bound (low TER, every sequence an
    # error) against one sample far past it (a higher TER, one error in four)
    slightly = [-(70.0 + 1)] * 4
    one_far = [-64.0, -64.0, -64.0, -64.0 - 64 * 4]
    assert token_error_rate(slightly, 64, 64.0)["value"] < token_error_rate(one_far, 64, 64.0)["value"]
    assert sequence_error_rate(slightly, 70.0)["value"] == 1.0 > sequence_error_rate(one_far, 70.0)["value"] == 0.25


def test_the_hmm_summary_carries_both_rates_from_its_records():
    task = HMMTask()
    task._entropy, task._typical = [60.0, 0.0], 70.0    # the cached chain constants, set by hand
    records = [{"index": i, "passes": 64, "log_p": lp, "log_q": lp, "output": "0" * 64}
               for i, lp in enumerate([-64.0, -66.0, -72.0, -80.0])]
    metrics = {m["name"]: m for m in task.summarize(records)}
    assert metrics["token_error_rate"]["value"] == pytest.approx(70.5 / 64)
    assert metrics["token_error_rate"]["optimum"] == pytest.approx(60 / 64)
    assert metrics["sequence_error_rate"]["value"] == pytest.approx(0.5)


def test_the_typical_bound_holds_its_share_of_the_chains_samples():
    hmm = chain.load_hmm(chain.DEFAULT_HMM)
    bound = chain.nll_quantile(hmm, 0.9, n=4000)
    fresh, _ = chain.sample(hmm, 4000, torch.Generator().manual_seed(99))
    inside = float((-chain.log_likelihood(hmm, fresh) <= bound).double().mean())
    assert inside == pytest.approx(0.9, abs=0.02)
