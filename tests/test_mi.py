"""Exact MI, the greedy rule, the estimator and the MI strategies."""
import math

import pytest
import torch

from bench.core import ModelOutput, StepState
from bench.decode import decode
from bench.errors import BenchError
from strategies.eb import EBSampler
from strategies.mi.eb_rule import MIEBRule, prefix_pair_mi
from strategies.mi.estimator import EstimatorConfig, MIEstimator, load_estimator, save_estimator
from strategies.mi.exact import exact_mi, symmetric
from strategies.mi.greedy import greedy_select
from strategies.mi.guided import MIGuided
from strategies.mi.oracle import MIOracle


class JointModel:
    """A MaskedModel whose conditionals come from a known joint over 3 binary positions:
    X0 ~ Bernoulli(0.5), X1 = X0 (a copy), X2 ~ Bernoulli(0.3) independent of both.
    Tokens: value v is token v + 1; token 0 is never used."""
    vocab_size = 2
    checkpoint_id = "joint"

    def __init__(self):
        self.value_tokens = torch.tensor([1, 2])
        self.calls = 0
        joint = torch.zeros(2, 2, 2)
        for x0 in range(2):
            for x2 in range(2):
                joint[x0, x0, x2] = 0.5 * (0.3 if x2 == 1 else 0.7)
        self.joint = joint

    def marginals(self, values, masked):
        """[3, 2] p(X_j | the unmasked values) of one row."""
        weights = self.joint.clone()
        for j in range(3):
            if not masked[j]:
                keep = torch.zeros(2)
                keep[int(values[j]) - 1] = 1
                shape = [1, 1, 1]
                shape[j] = 2
                weights = weights * keep.view(shape)
        if weights.sum() == 0:   # an impossible context (probability 0): any conditional will do
            weights = torch.ones(2, 2, 2)
        weights = weights / weights.sum()
        return torch.stack([weights.sum(dim=tuple(d for d in range(3) if d != j)) for j in range(3)])

    def __call__(self, tokens, masked):
        self.calls += tokens.shape[0]
        probs = torch.stack([self.marginals(t, m) for t, m in zip(tokens, masked)])
        return ModelOutput(logits=probs.clamp_min(1e-30).log(), hidden=torch.zeros(tokens.shape[0], 3, 4))


def all_masked(batch=1):
    return torch.ones(batch, 3, dtype=torch.long), torch.ones(batch, 3, dtype=torch.bool)


def test_exact_mi_is_entropy_for_a_copy_and_zero_for_independent_pairs():
    model = JointModel()
    tokens, masked = all_masked()
    mi = exact_mi(model, tokens, masked)[0]
    assert mi[0, 1].item() == pytest.approx(math.log(2), abs=1e-5)
    assert mi[1, 0].item() == pytest.approx(math.log(2), abs=1e-5)
    for i, j in [(0, 2), (2, 0), (1, 2), (2, 1)]:
        assert mi[i, j].item() == pytest.approx(0.0, abs=1e-6)
    assert mi.diagonal().abs().max() == 0
    assert model.calls == 1 + 3 * 2  # one base pass + n_masked * V probing passes


def test_exact_mi_is_zero_once_the_partner_is_known():
    model = JointModel()
    tokens, masked = all_masked()
    masked[0, 0] = False          # X0 revealed: X1 is determined, nothing left to share
    tokens[0, 0] = 2
    mi = exact_mi(model, tokens, masked)[0]
    assert mi.abs().max().item() == pytest.approx(0.0, abs=1e-6)


def test_symmetric_is_the_mean_of_both_directions():
    directed = torch.tensor([[[0.0, 0.2], [0.4, 0.0]]])
    assert torch.allclose(symmetric(directed), torch.tensor([[[0.0, 0.3], [0.3, 0.0]]]))


def fixed_mi(matrix):
    return lambda rows, positions: matrix[rows, positions]


def test_greedy_takes_positions_while_the_budget_lasts():
    entropy = torch.tensor([[0.1, 0.2, 0.3]])
    masked = torch.ones(1, 3, dtype=torch.bool)
    independent = torch.zeros(1, 3, 3)
    assert greedy_select(entropy, masked, 0.35, 1.0, fixed_mi(independent)).tolist() == [[True, True, False]]


def test_greedy_defers_a_position_that_depends_on_a_chosen_one():
    entropy = torch.tensor([[0.1, 0.2, 0.05]])
    masked = torch.ones(1, 3, dtype=torch.bool)
    mi = torch.zeros(1, 3, 3)
    mi[0, 2, 0] = mi[0, 0, 2] = 0.5          # positions 0 and 2 depend on each other
    pick = greedy_select(entropy, masked, 0.4, 1.0, fixed_mi(mi))
    # order by entropy: 2 (0.05), 0 (0.1 + 0.5 > budget: deferred), 1 (0.2 fits)
    assert pick.tolist() == [[False, True, True]]
    assert greedy_select(entropy, masked, 0.4, 0.0, fixed_mi(mi)).tolist() == [[True, True, True]]


def test_greedy_always_takes_the_first_and_never_an_unmasked_position():
    entropy = torch.tensor([[5.0, 3.0, 0.0], [1.0, 1.0, 1.0]])
    masked = torch.tensor([[True, True, False], [False, True, True]])
    pick = greedy_select(entropy, masked, 0.1, 1.0, fixed_mi(torch.zeros(2, 3, 3)))
    assert pick.tolist() == [[False, True, False], [False, True, False]]


def small_estimator(d_hidden=4, n_values=2):
    torch.manual_seed(0)
    return MIEstimator(EstimatorConfig(d_hidden=d_hidden, n_values=n_values, d_inner=8, n_heads=2, d_head=4))


def test_estimator_output_is_symmetric_bounded_and_zero_off_the_mask():
    network = small_estimator()
    hidden = torch.randn(3, 5, 4)
    probs = torch.softmax(torch.randn(3, 5, 2), -1)
    masked = torch.tensor([[True, True, False, True, False]] * 3)
    mi = network(hidden, probs, masked)
    assert mi.shape == (3, 5, 5)
    assert torch.allclose(mi, mi.transpose(1, 2))
    assert mi[:, 2].abs().max() == 0 and mi[:, :, 4].abs().max() == 0
    assert mi.diagonal(dim1=1, dim2=2).abs().max() == 0
    entropy = torch.special.entr(probs).sum(-1)
    assert (mi <= torch.minimum(entropy[:, :, None], entropy[:, None, :]) + 1e-7).all()


def test_estimator_of_another_model_is_a_clear_error(tmp_path):
    path = tmp_path / "mi_estimator.pt"
    save_estimator(path, small_estimator(), "model-a", {})
    assert load_estimator(path, "model-a", "sudoku") is not None
    with pytest.raises(BenchError, match="trained for model model-a.*bench train mi --task sudoku"):
        load_estimator(path, "model-b", "sudoku")


class Bound:
    """What the runner passes to bind(): a task with a weights folder."""
    name = "sudoku"

    def __init__(self, folder):
        self.weights_dir = folder


def test_mi_strategy_without_estimator_names_the_file_to_train(tmp_path):
    with pytest.raises(BenchError, match="mi_estimator.pt.*bench train mi --task sudoku"):
        MIGuided().bind(Bound(tmp_path), JointModel())


def test_mi_strategy_decodes_with_a_bound_estimator_and_stops_on_nan(tmp_path):
    model = JointModel()
    network = small_estimator()
    save_estimator(tmp_path / "mi_estimator.pt", network, model.checkpoint_id, {})
    strategy = MIGuided(gamma=0.5)
    strategy.bind(Bound(tmp_path), model)
    assert set(strategy.helper_ids()) == {"mi_estimator"}
    tokens, masked = all_masked(4)
    result = decode(model, tokens, masked, strategy)
    assert (result.passes >= 1).all() and (result.passes <= 3).all()
    with torch.no_grad():
        strategy.network.bias.fill_(float("nan"))
    with pytest.raises(BenchError, match="non-finite"):
        decode(model, tokens, masked, strategy)


def test_oracle_keeps_a_copied_pair_apart_and_counts_probing_passes():
    model = JointModel()
    oracle = MIOracle(gamma=10.0, lam=100.0, target="directed")   # a budget large enough for everything but MI
    oracle.bind(Bound(None), model)
    tokens, masked = all_masked(2)
    state = StepState(tokens, masked, model(tokens, masked), 0)
    pick = oracle.select(state)
    # entropy order: X2 (H 0.61) then X0, X1 (ln 2 each); X0 and X1 share ln 2 nats, so only one goes
    assert pick.tolist() == [[True, False, True]] * 2
    assert state.aux_passes.tolist() == [4, 4]  # two probed positions x 2 values per row
    result = decode(model, tokens, masked, oracle)
    assert result.passes.tolist() == [2, 2]
    assert result.aux_passes.tolist() == [4, 4]  # the second pass has one position left: no probing


def mi_payload(task="sudoku", n=18):
    rng = torch.Generator().manual_seed(0)
    matrix = torch.rand(n, n, generator=rng)
    state = {"index": 0, "n_masked": n - 2, "tokens": [0] * n, "masked": [True] * (n - 2) + [False] * 2,
             "exact": (matrix + matrix.T).tolist(), "predicted": matrix.tolist()}
    split = {"contexts": 3, "pairs": 40, "pearson": 0.5, "spearman": 0.4, "mae": 0.1,
             "bins": [{"bin": "[0, 0.01)", "pairs": 10, "mae": 0.01}, {"bin": "[0.5, inf)", "pairs": 0, "mae": None}],
             "independence": [{"tau": 0.01, "precision": 0.9, "recall": 0.8},
                              {"tau": 0.05, "precision": 0.7, "recall": 0.6}]}
    return {"schema_version": "mi-1", "task": task, "maps": [state], "splits": {"heldout": split, "ood": split},
            "scatter": {"true": [0.0, 0.1, 0.5], "predicted": [0.01, 0.2, 0.4]},
            "latency": {"batch": 3, "threads": 1, "estimator_seconds": 0.001, "forward_seconds": 0.1,
                        "estimator_share_of_forward": 0.01}}


def test_report_draws_mi_maps_scatter_and_table_from_files_only(tmp_path):
    import json

    from bench.results import Store
    from strategies.mi.figures import report_mi
    (tmp_path / "results" / "mi").mkdir(parents=True)
    (tmp_path / "results" / "mi" / "sudoku.mi.json").write_text(json.dumps(mi_payload()))
    (tmp_path / "results" / "mi" / "other.mi.json").write_text(json.dumps({"schema_version": 1}))
    out = tmp_path / "reports"
    out.mkdir()
    paths = report_mi(Store(tmp_path / "results"), out)
    assert sorted(p.name for p in paths) == ["mi_maps_sudoku.pdf", "mi_maps_sudoku.png", "mi_scatter_sudoku.pdf",
                                             "mi_scatter_sudoku.png", "mi_sudoku.md"]
    assert all(p.stat().st_size > 0 for p in paths)
    table = (out / "mi_sudoku.md").read_text()
    assert "| heldout | 3 | 40 | 0.500 | 0.400 |" in table and "0.900 / 0.800" in table


def test_probed_labels_keep_exact_rows_and_mark_the_rest_unlabelled():
    from strategies.mi.labels import probed_mi
    from strategies.mi.metrics import pair_values
    from strategies.mi.train import pair_loss
    tokens, masked = all_masked(batch=4)
    full = exact_mi(JointModel(), tokens, masked)
    model = JointModel()
    mi = probed_mi(model, tokens, masked, probe=2, generator=torch.Generator().manual_seed(0))
    probed = ~mi.isnan().all(-1)
    assert (probed.sum(1) == 2).all() and model.calls == 4 + 4 * 2 * 2   # base rows + 2 probed rows x V
    assert torch.equal(mi[probed], full[probed])
    target = symmetric(mi)
    pred, true = pair_values(target, target, masked)
    assert len(true) == 4 and not torch.tensor(true).isnan().any()       # one probed pair per context
    network = small_estimator(d_hidden=4, n_values=2)
    hidden, probs = torch.randn(4, 3, 4), torch.full((4, 3, 2), 0.5)
    loss = pair_loss(network, hidden, probs, masked, target.clamp_min(0))
    loss.backward()
    assert torch.isfinite(loss) and all(torch.isfinite(p.grad).all() for p in network.parameters())


class FixedNetwork:
    """Stands in for a trained estimator: returns a fixed MI matrix (what the rule reads)."""

    def __init__(self, matrix):
        self.matrix = matrix

    def __call__(self, hidden, probs, masked):
        return self.matrix.expand(masked.shape[0], -1, -1).clone()


def random_state(batch=32, n=12, values=4, seed=0):
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, n, values, generator=generator) * 3
    masked = torch.rand(batch, n, generator=generator) < 0.7
    masked[:, 0] = True
    out = ModelOutput(logits=logits, hidden=torch.zeros(batch, n, 4))
    return StepState(torch.zeros(batch, n, dtype=torch.long), masked, out, 0)


def test_eb_rule_with_the_mi_term_off_is_exactly_eb():
    state = random_state()
    for gamma in (0.0, 0.3, 1.0, 3.0):
        strategy = MIEBRule(gamma=gamma, lam=0.0)
        strategy.network, strategy.estimator_path = FixedNetwork(torch.rand(12, 12)), "fixed"
        assert torch.equal(strategy.select(state), EBSampler(gamma=gamma, order="entropy").select(state))


def test_eb_rule_with_the_mi_term_reveals_no_more_and_pays_for_pairs():
    state = random_state(seed=1)
    mi = torch.full((12, 12), 0.2).fill_diagonal_(0)
    plain, guided = MIEBRule(gamma=2.0, lam=0.0), MIEBRule(gamma=2.0, lam=1.0)
    for strategy in (plain, guided):
        strategy.network, strategy.estimator_path = FixedNetwork(mi), "fixed"
    without, with_mi = plain.select(state), guided.select(state)
    assert (with_mi <= without).all() and with_mi.sum() < without.sum() and with_mi.any(1).all()
    assert prefix_pair_mi(mi.expand(1, -1, -1), torch.arange(12)[None]).tolist()[0][:3] == pytest.approx([0, 0.2, 0.6])


def test_symmetric_oracle_probes_the_candidates_too_and_keeps_the_pair_apart():
    model = JointModel()
    oracle = MIOracle(gamma=10.0, lam=100.0)
    assert oracle.target == "symmetric"
    oracle.bind(Bound(None), model)
    tokens, masked = all_masked(2)
    state = StepState(tokens, masked, model(tokens, masked), 0)
    assert oracle.select(state).tolist() == [[True, False, True]] * 2
    # X2 probed when taken; X0 and X1 probed as candidates (X0's row reused once taken): 3 x 2 values
    assert state.aux_passes.tolist() == [6, 6]


def test_greedy_adds_the_candidate_side_penalty():
    entropy, masked = torch.tensor([[0.1, 0.2, 0.3]]), torch.ones(1, 3, dtype=torch.bool)
    def zero_mi_row(rows, positions):
        return torch.zeros(len(rows), 3)

    def unit_mi_back(rows, positions, chosen):
        return torch.full((len(rows),), 1.0)

    assert greedy_select(entropy, masked, 1.0, 1.0, zero_mi_row).tolist() == [[True, True, True]]
    assert greedy_select(entropy, masked, 1.0, 1.0, zero_mi_row, unit_mi_back).tolist() == [[True, False, False]]
