"""Issue 17, item 6: the MI strategies compute only what their rules read (the estimator's rows of
the positions taken, between the positions that can be taken) and the greedy rule stops once a
row is decided. Every pick must be the one the full computation gives: here against the
previous implementation (the whole N x N matrix, the loop over every candidate), kept below."""
import numpy as np
import pytest
import torch

from bench.core import ModelOutput, StepState
from strategies.mi.eb_rule import MIEBRule, prefix_pair_mi, ranked_pair_mi
from strategies.mi.estimator import BLOCK, FILE_NAME, STEP, EstimatorConfig, MIEstimator, load_estimator, ranked_order
from strategies.mi.greedy import greedy_select
from strategies.mi.guided import MIGuided
from strategies.ordering import rank_masked
from tasks.protein.task import ProteinTask
from tasks.sudoku.task import SudokuTask


def reference_greedy(entropy, masked, gamma, lam, mi_row, mi_back=None):
    """The greedy rule as it was: every candidate walked, the MI row of every pick that leaves budget."""
    batch, _ = masked.shape
    order, _ = rank_masked(-entropy, masked)
    n_masked = masked.sum(1)
    rows = torch.arange(batch)
    budget = torch.full((batch,), float(gamma))
    penalty = torch.zeros(entropy.shape)
    pick = torch.zeros_like(masked)
    for t in range(int(n_masked.max())):
        candidate = order[:, t]
        valid = t < n_masked
        cand_entropy = entropy[rows, candidate]
        if not (valid & ((budget > 0) | (cand_entropy <= 0) | (t == 0))).any():
            break
        cost = cand_entropy + lam * penalty[rows, candidate]
        if mi_back is not None and t > 0:
            ask = valid & (cand_entropy <= budget) & pick.any(1)
            if ask.any():
                cost[ask] += lam * mi_back(rows[ask], candidate[ask], pick[ask])
        take = valid & ((cost <= budget) | (t == 0))
        budget = torch.where(take, (budget - cost).clamp_min(0), budget)
        pick[rows[take], candidate[take]] = True
        update = take & (t + 1 < n_masked) & (budget > 0)
        if update.any():
            penalty[rows[update]] += mi_row(rows[update], candidate[update]).clamp_min(0)
    return pick


def reference_eb_rule(mi_hat, state, gamma, lam):
    """MIEBRule.select as it was, on the whole matrix."""
    order, ranks = rank_masked(-state.entropy, state.masked)
    in_order_masked = state.masked.gather(1, order)
    entropy = state.entropy.gather(1, order).masked_fill(~in_order_masked, 0.0)
    pairs = prefix_pair_mi(mi_hat.clamp_min(0), order)
    spent = entropy.cumsum(1) - entropy.cummax(1).values + lam * pairs
    count = ((spent <= gamma) & in_order_masked).sum(1, keepdim=True).clamp_min(1)
    return state.masked & (ranks < count)


def recording(matrix, calls):
    def mi_row(rows, positions):
        calls.append((rows.tolist(), positions.tolist()))
        return matrix[rows, positions]
    return mi_row


def random_case(seed, batch=40, n=30):
    generator = torch.Generator().manual_seed(seed)
    entropy = torch.rand(batch, n, generator=generator) * torch.rand(batch, 1, generator=generator) * 3
    entropy[torch.rand(batch, n, generator=generator) < 0.15] = 0.0                  # saturated positions
    entropy[:, 5] = entropy[:, 4]                                                     # ties
    masked = torch.rand(batch, n, generator=generator) < 0.7
    masked[:, 0] = True
    mi = torch.rand(batch, n, n, generator=generator) ** 4 * 0.5
    mi = mi - 0.01 * (torch.rand(batch, n, n, generator=generator) < 0.05)            # a few negative values
    return entropy, masked, mi


@pytest.mark.parametrize("seed", range(6))
def test_the_greedy_rule_picks_what_it_picked_and_an_oracle_probes_the_same_rows(seed):
    entropy, masked, mi = random_case(seed)
    def half_mi_back(rows, positions, chosen):
        return 0.5 * (mi[rows, positions] * chosen).sum(1)

    for gamma in (0.0, 0.05, 0.3, 1.0, 3.0, 100.0):
        for lam in (0.0, 0.3, 1.0, 4.0):
            for mi_back in (None, half_mi_back):
                old_calls, new_calls = [], []
                expected = reference_greedy(entropy, masked, gamma, lam, recording(mi, old_calls), mi_back)
                assert torch.equal(greedy_select(entropy, masked, gamma, lam, mi_row=lambda r, p: mi[r, p],
                                                 mi_back=mi_back), expected)
                probed = greedy_select(entropy, masked, gamma, lam, recording(mi, new_calls), mi_back, read_ahead=False)
                assert torch.equal(probed, expected) and new_calls == old_calls   # probe_passes unchanged


def model_states(task, n, seed=0):
    """Partly decoded states of the task's inputs: some masked positions revealed at random."""
    model = task.load_model()
    eval_set = task.eval_set(None, 0)
    generator = torch.Generator().manual_seed(seed)
    tokens, start = eval_set.tokens[:n].clone(), eval_set.masked[:n]
    share = torch.rand(n, 1, generator=generator) * 0.9 + 0.05
    masked = start & (torch.rand(start.shape, generator=generator) < share)
    masked[torch.arange(n), start.float().argmax(1)] = True                            # a masked position per row
    values = model.value_tokens[torch.randint(model.vocab_size, start.shape, generator=generator)]
    tokens = torch.where(start & ~masked, values, tokens)
    return model, StepState(tokens, masked, model(tokens, masked), 0)


def estimator_of(task, model):
    return load_estimator(task.weights_dir / FILE_NAME, model.checkpoint_id, task.name)


@pytest.mark.parametrize("task_class,gammas", [(SudokuTask, (0.05, 0.1, 0.3, 0.6, 1.0, 1.5)),
                                               (ProteinTask, (2.0, 6.0, 12.0, 24.0))])
def test_the_shipped_estimators_strategies_pick_what_the_whole_matrix_picked(task_class, gammas):
    task = task_class()
    model, state = model_states(task, 48 if task_class is SudokuTask else 24)
    network = estimator_of(task, model)
    with torch.inference_mode():
        whole = network(state.out.hidden, state.probs, state.masked)                  # the full N x N matrix
    for gamma in gammas:
        for lam in (0.0, 1.0):
            strategy = MIGuided(gamma=gamma, lam=lam)
            strategy.network, strategy.estimator_path = network, "shipped"
            expected = reference_greedy(state.entropy, state.masked, gamma, lam, lambda r, p: whole[r, p])
            assert torch.equal(strategy.select(state), expected), (gamma, lam)
            eb_rule = MIEBRule(gamma=gamma / 3, lam=lam)
            eb_rule.network, eb_rule.estimator_path = network, "shipped"
            assert torch.equal(eb_rule.select(state), reference_eb_rule(whole, state, gamma / 3, lam)), (gamma, lam)


@pytest.mark.parametrize("task_class", [SudokuTask, ProteinTask])
def test_every_value_read_is_the_whole_matrixs_bit_for_bit(task_class):
    """The MI the greedy rule reads (made a block at a time), MI-EB's prefix matrix and its pair
    sums equal, bit for bit, what the whole N x N matrix gives."""
    task = task_class()
    model, state = model_states(task, 20, seed=1)
    network = estimator_of(task, model)
    with torch.inference_mode():
        whole = network(state.out.hidden, state.probs, state.masked).numpy()
    need = state.masked & (state.entropy <= state.entropy[state.masked].median())
    order, _ = rank_masked(-state.entropy, state.masked)
    counts = need.sum(1)
    reader = network.reader(state.out.hidden, state.probs, state.entropy, state.masked, need)
    rows = np.arange(len(counts))
    bounded = (state.entropy * state.masked).gather(1, order).numpy()
    whole_ranked = torch.from_numpy(whole)
    whole_ranked = whole_ranked.gather(1, order[:, :, None].expand_as(whole_ranked)).gather(
        2, order[:, None, :].expand_as(whole_ranked)).numpy()
    for step in range(-(-int(counts.max()) // STEP)):
        reader.extend(rows[counts.numpy() > step * STEP], step)
    assert reader.frontier.max() * STEP > BLOCK            # more than one block of the rank order was made
    for row, count in enumerate(counts.tolist()):
        upper = np.triu(np.ones((count, count), dtype=bool), 1)                          # taken before candidate
        read = np.minimum(reader.ranked_mi[row, :count, :count],
                          np.minimum(bounded[row, :count, None], bounded[row, None, :count]))
        assert np.array_equal(read[upper], whole_ranked[row, :count, :count][upper])

    fresh = network.reader(state.out.hidden, state.probs, state.entropy, state.masked, need)
    ranked = fresh.prefix(int(counts.max()))
    whole_ranked = torch.from_numpy(whole_ranked)
    sums, whole_sums = ranked_pair_mi(ranked), prefix_pair_mi(torch.from_numpy(whole), order)
    for row, count in enumerate(counts.tolist()):
        assert torch.equal(ranked[row, :count, :count], whole_ranked[row, :count, :count])
        assert torch.equal(sums[row, :count], whole_sums[row, :count])
    full = network.reader(state.out.hidden, state.probs, state.entropy, state.masked)
    assert np.array_equal(full.matrix().numpy(), whole)


def test_a_small_random_estimator_too():
    torch.manual_seed(3)
    network = MIEstimator(EstimatorConfig(d_hidden=8, n_values=5, d_inner=16, n_heads=2, d_head=4)).eval()
    generator = torch.Generator().manual_seed(4)
    logits = torch.randn(40, 33, 5, generator=generator) * torch.rand(40, 33, 1, generator=generator) * 4
    masked = torch.rand(40, 33, generator=generator) < 0.6
    masked[:, 0] = True
    out = ModelOutput(logits=logits, hidden=torch.randn(40, 33, 8, generator=generator))
    state = StepState(torch.zeros(40, 33, dtype=torch.long), masked, out, 0)
    with torch.inference_mode():
        whole = network(out.hidden, state.probs, masked)
    for gamma in (0.01, 0.2, 0.7, 2.0, 10.0):
        for lam in (0.0, 1.0, 10.0):
            strategy = MIGuided(gamma=gamma, lam=lam)
            strategy.network, strategy.estimator_path = network, "random"
            expected = reference_greedy(state.entropy, masked, gamma, lam, lambda r, p: whole[r, p])
            assert torch.equal(strategy.select(state), expected), (gamma, lam)


@pytest.mark.parametrize("threads", [1, 2, 16])
def test_features_of_any_few_positions_are_the_whole_batchs_bit_for_bit(threads):
    """position_features pads its rows to a multiple of ROW_MULTIPLE: without it MKL rounds 1-3
    rows (at 1 thread) or a few rows per thread (more threads) differently from a large product."""
    task = ProteinTask()
    model, state = model_states(task, 8, seed=2)
    network = estimator_of(task, model)
    flat = [t.reshape(-1, *t.shape[2:]) for t in (state.out.hidden, state.probs, state.entropy, state.masked)]
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.inference_mode():
            whole = network.position_features(*flat)
            for count in range(1, 30):
                for start in (0, 37):
                    part = network.position_features(*(t[start:start + count] for t in flat))
                    assert torch.equal(part, whole[start:start + count]), (count, start)
    finally:
        torch.set_num_threads(previous)


def test_the_rank_order_is_rank_masked_s():
    entropy, masked, _ = random_case(7)
    entropy[:, 7] = -0.0                                                              # entr(1) is -0.0
    assert np.array_equal(ranked_order(entropy.numpy(), masked.numpy()), rank_masked(-entropy, masked)[0].numpy())
