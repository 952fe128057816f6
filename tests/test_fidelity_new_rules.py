"""Issue 47 item 5: WINO, Saber and Prophet beside short transcriptions of their reference code.

Each transcription follows the reference's selection function line by line (batch of one,
temperature 0: values are the argmax, confidence its probability, as the references compute at
temperature 0). Our strategy is driven pass by pass on the same logits; the positions masked
after each pass and the tokens must be equal. Where we deviate on purpose (Saber's top-k taking
positions of confidence -inf, docs/strategies.md) the transcription records it and the test
asserts it happened only where documented. Then each rule decodes real tasks to completion and a
parameter out of its range is a one-line error.
"""
import math

import numpy as np
import pytest
import torch

from bench.cli import main
from bench.core import ModelOutput, Selection, StepState
from bench.decode import decode
from bench.errors import BenchError
from bench.registry import load_plugins, parse_strategy
from conftest import loaded_task

load_plugins()
MASK = 0           # the token of a masked position; value v is token v + 1
INF = float("inf")


class ShadowModel:
    """The model WINO's leave-one-out passes call: at pass ``t`` every position's logits are
    ``hidden[t]`` (what the reference's shadow block reads for that position)."""

    def __init__(self, hidden):
        self.hidden, self.t = hidden, 0
        self.value_tokens = torch.arange(1, hidden.shape[-1] + 1)
        self.vocab_size = hidden.shape[-1]

    def __call__(self, tokens, masked):
        return ModelOutput(logits=self.hidden[self.t].expand(tokens.shape[0], -1, -1).clone())


def run_ours(strategy, logits, start, given, model=None):
    """[(masked after the pass, tokens after the pass)] of our strategy driven on ``logits``
    [T, N, V], as bench.decode applies a Selection (re-masked positions back to the mask)."""
    tokens = torch.where(start, MASK, given + 1).unsqueeze(0)
    masked = start.clone().unsqueeze(0)
    memory = strategy.start_memory(tokens, masked)
    trail = []
    for t in range(len(logits)):
        if not masked.any():
            break
        if model is not None:
            model.t = t
        state = StepState(tokens.clone(), masked.clone(), ModelOutput(logits[t].unsqueeze(0)), t, None,
                          start.unsqueeze(0), memory)
        chosen = strategy.select(state)
        reveal, remask = (chosen.reveal, chosen.remask) if isinstance(chosen, Selection) else (chosen, None)
        memory = state.memory
        tokens = torch.where(reveal, logits[t].argmax(-1) + 1, tokens)
        masked = masked & ~reveal
        if remask is not None:
            assert not (remask & (state.masked | ~start)).any()      # only decoded positions
            tokens, masked = tokens.masked_fill(remask, MASK), masked | remask
        trail.append((masked[0].clone(), tokens[0].clone()))
    return trail


def probs64(logits):
    return torch.softmax(logits.double(), -1)


# --- WINO: Feng-Hong/WINO-DLLM LLaDA/decoding.py, decoding_wino, lines 126-194 -------------------

def wino_reference(logits, hidden, block, tau1, tau2):
    """decoding_wino at temperature 0 on one input whose every position is generated. The shadow
    block's probability of a decoded token (lines 144-153) is read from ``hidden`` (the pass with
    that position alone masked)."""
    n = logits.shape[1]
    block = block or n
    x = torch.full((n,), MASK)
    trail, t = [], 0
    for b in range(n // block):                                             # 126
        inside = torch.zeros(n, dtype=torch.bool)
        inside[b * block:(b + 1) * block] = True
        mask_block = inside & (x == MASK)                                   # 128-129
        unmask_block = torch.zeros(n, dtype=torch.bool)                     # 131-132 (no decoded yet)
        last_accept = 30                                                    # 138
        while mask_block.any():                                             # 139
            if t == len(logits):
                return trail
            max_accept = min(max(int(mask_block.sum() * 0.7), 5), 20)       # 140
            p = probs64(logits[t])
            x0 = p.argmax(-1)                                               # 143
            x0_p = p.gather(1, x0.unsqueeze(1)).squeeze(1)                  # 149-150
            back_p = probs64(hidden[t]).gather(1, (x - 1).clamp_min(0).unsqueeze(1)).squeeze(1)   # 146-150
            confidence = torch.where(mask_block, x0_p, -INF)                # 152
            confidence_back = torch.where(unmask_block, back_p, INF)        # 153
            transfer = confidence > tau1                                    # 156
            if transfer.sum() > max_accept:                                 # 157-161
                transfer = torch.zeros(n, dtype=torch.bool)
                transfer[torch.topk(confidence, k=max_accept).indices] = True
            elif not transfer.any():                                        # 164-167
                transfer[torch.argmax(confidence)] = True
            x[transfer] = x0[transfer] + 1                                  # 168
            num_accept = int(transfer.sum())                                # 170
            remask = torch.zeros(n, dtype=torch.bool)
            if num_accept > 1:                                              # 172-180
                remask = confidence_back < tau2
                if remask.sum() >= last_accept:
                    remask = torch.zeros(n, dtype=torch.bool)
                    remask[torch.topk(confidence_back, k=last_accept - 1, largest=False).indices] = True
            x[remask] = MASK                                                # 186
            mask_block[transfer], mask_block[remask] = False, True          # 187-188
            unmask_block[transfer], unmask_block[remask] = True, False      # 192-193
            last_accept = num_accept                                        # 194
            trail.append((x == MASK, x.clone()))
            t += 1
    return trail


def random_logits(gen, passes, n, values):
    """[T, N, V] logits whose top probabilities spread over (0.2, 1): each position its own scale."""
    scale = torch.rand(passes, n, 1, generator=gen) * 7 + 0.3
    return torch.randn(passes, n, values, generator=gen) * scale


@pytest.mark.parametrize("block,tau1,tau2", [(0, 0.6, 0.9), (8, 0.7, 0.9), (4, 0.5, 0.8)])
def test_wino_picks_and_re_masks_as_its_reference(block, tau1, tau2):
    gen = torch.Generator().manual_seed(47 + block)
    remasked = 0
    for _ in range(40):
        n, values, passes = 16, 4, 24
        logits, hidden = random_logits(gen, passes, n, values), random_logits(gen, passes, n, values)
        start = torch.ones(n, dtype=torch.bool)
        expected = wino_reference(logits, hidden, block, tau1, tau2)
        strategy = parse_strategy(f"wino:tau1={tau1},tau2={tau2},block={block}")
        model = ShadowModel(hidden)
        strategy.bind(None, model)
        ours = run_ours(strategy, logits, start, torch.zeros(n, dtype=torch.long), model)
        assert len(ours) == len(expected)
        for (masked, tokens), (ref_masked, ref_tokens) in zip(ours, expected):
            assert torch.equal(masked, ref_masked) and torch.equal(tokens, ref_tokens)
        remasked += sum(int((b & ~a).sum()) for (a, _), (b, _) in zip(ours, ours[1:]))
    assert remasked > 10     # the verification path ran, not only the accept path


def test_wino_seen_verifies_with_the_loop_s_own_pass():
    """verify=seen is the reference's rule with the shadow probabilities taken from the pass
    itself (a documented deviation): equal to the transcription fed the same logits twice."""
    gen = torch.Generator().manual_seed(5)
    for _ in range(40):
        logits = random_logits(gen, 24, 16, 4)
        start = torch.ones(16, dtype=torch.bool)
        strategy = parse_strategy("wino:verify=seen")
        strategy.bind(None, ShadowModel(logits))
        ours = run_ours(strategy, logits, start, torch.zeros(16, dtype=torch.long))
        expected = wino_reference(logits, logits, 0, 0.6, 0.9)
        assert [torch.equal(a[1], b[1]) for a, b in zip(ours, expected)] == [True] * len(expected)


# --- Saber: zhaoyMa/Saber decoding.py, generate_with_saber, lines 484-556 ------------------------

def saber_reference(logits, start, given, n, block):
    """generate_with_saber at temperature 0; given positions play the prompt. Where torch.topk
    would take entries of value +-inf (ties its implementation orders), our documented rule is
    applied instead and the case is recorded in ``deviations``: 'floor' (fewer than n masked
    positions left in the reached blocks, lines 516-517) or 'remask' (fewer than k finite
    candidates, line 553)."""
    size = logits.shape[1]
    block = block or size
    x = torch.where(start, MASK, given + 1)
    mask_index = start.clone()                                              # 477
    transferred = torch.zeros(size, dtype=torch.bool)                       # 480
    final = torch.full((size,), -INF)                                       # 482
    last = torch.zeros(size)                                                # 483
    trail, deviations, t = [], [], 0
    for b in range(size // block):                                          # 484
        block_end = (b + 1) * block
        for _ in range(1024):                                               # 486
            if t == len(logits):
                return trail, deviations
            p = probs64(logits[t]).float()
            x0 = p.argmax(-1)
            x0_p = p.max(-1).values                                         # 492-495
            x0_p[block_end:] = -INF                                         # 497
            confidence = torch.where(mask_index, x0_p, -INF)                # 500
            delta = confidence - last                                       # 501-503
            delta = torch.where(torch.isfinite(delta), delta, INF)
            last = confidence                                               # 504
            confidence = torch.where(transferred, -INF, confidence)         # 505
            generated = final[:block_end][final[:block_end] > -INF]         # 509-514
            threshold = generated.mean() if generated.numel() > 0 else 1
            select = torch.where(confidence > threshold)[0]                 # 515
            if select.numel() < n:                                          # 516-517
                finite = int(torch.isfinite(confidence).sum())
                if finite < n:
                    deviations.append("floor")
                select = torch.topk(confidence, k=min(n, finite)).indices
            fix = max(n, select.numel())                                    # 519
            transfer = torch.zeros(size, dtype=torch.bool)
            transfer[select] = True                                         # 521-522
            transferred[select] = True
            x[transfer] = x0[transfer] + 1                                  # 523
            final = torch.where(transfer, x0_p, final)                      # 529
            if transferred[mask_index].all() or (x[:block_end] != MASK).all():   # 531-537
                trail.append((x == MASK, x.clone()))
                t += 1
                if transferred[mask_index].all():
                    return trail, deviations
                break
            removal = torch.where(mask_index, delta, INF)                   # 538-545
            removal[block_end:] = INF
            removal[x == MASK] = INF
            k = min(max(n // 2, (fix + 7) // 8), fix - 1)                   # 548-551
            if int(torch.isfinite(removal).sum()) < k:
                deviations.append("remask")      # ours: the decoded ones, +inf changes last, lower index first
                decoded = [i for i in range(size) if mask_index[i] and x[i] != MASK and i < block_end]
                remove = torch.tensor(sorted(decoded, key=lambda i: (float(removal[i]), i))[:k], dtype=torch.long)
            else:
                remove = torch.topk(removal, k=k, largest=False).indices    # 553
            x[remove] = MASK                                                # 554
            transferred[remove] = False                                     # 556
            trail.append((x == MASK, x.clone()))
            t += 1
    return trail, deviations


@pytest.mark.parametrize("block,n", [(0, 2), (8, 2), (4, 3), (0, 1)])
def test_saber_picks_and_re_masks_as_its_reference(block, n):
    gen = torch.Generator().manual_seed(11 + block + n)
    remasked, deviations = 0, []
    for _ in range(40):
        size, values = 16, 4
        logits = random_logits(gen, 40, size, values)
        start = torch.rand(size, generator=gen) < 0.75
        given = torch.randint(values, (size,), generator=gen)
        expected, deviated = saber_reference(logits, start, given, n, block)
        deviations += deviated
        ours = run_ours(parse_strategy(f"saber:n={n},block={block}"), logits, start, given)
        assert len(ours) == len(expected)
        for (masked, tokens), (ref_masked, ref_tokens) in zip(ours, expected):
            assert torch.equal(masked, ref_masked) and torch.equal(tokens, ref_tokens)
        assert not ours or not ours[-1][0].any()                    # it finishes within 40 passes
        assert len(ours) <= int(start.sum())                        # at most one pass a masked position
        remasked += sum(int((b & ~a).sum()) for (a, _), (b, _) in zip(ours, ours[1:]))
    assert remasked > 20 or n == 1
    assert set(deviations) <= {"floor", "remask"} and (deviations.count("floor") > 0) == (block == 4)


def test_a_candidate_of_infinite_change_ranks_before_every_non_candidate():
    """Saber's documented 'remask' case: with fewer finite candidates than k, the decoded ones of
    +inf change are taken next (lower index first), never a position that is not a candidate."""
    from strategies.schedules.revocable import lowest
    fell = torch.tensor([[INF, 0.5, INF, INF, -0.2]])
    candidates = torch.tensor([[False, True, False, True, True]])
    assert lowest(fell, candidates, torch.tensor([3])).tolist() == [[False, True, False, True, True]]
    assert lowest(fell, candidates, torch.tensor([1])).tolist() == [[False, False, False, False, True]]


# --- Prophet: pixeli99/Prophet generate_earlyexit.py, generate, lines 8-25 and 83-171 -------------

def should_early_exit(current_step, max_steps, answer_gap, thresholds):
    """generate_earlyexit.py lines 8-25."""
    progress = current_step / max_steps
    if progress < 0.33:
        return answer_gap >= thresholds["early"]
    if progress < 0.67:
        return answer_gap >= thresholds["mid"]
    return answer_gap >= thresholds["late"]


def prophet_reference(logits, start, given, steps, block, thresholds, region):
    """generate at temperature 0 with LLaDA's low_confidence rule; the answer region (lines 117-134)
    is ours (docs/strategies.md): the positions masked now, or every one masked at the start."""
    size = logits.shape[1]
    block = block or size
    x = torch.where(start, MASK, given + 1)
    steps_per_block = steps // (size // block)                              # 76-78
    trail, global_step = [], 0
    for b in range(size // block):                                          # 83
        block_start, block_end = b * block, (b + 1) * block
        mask_num = int((x[block_start:block_end] == MASK).sum())            # 86-87 (get_num_transfer_tokens)
        counts = [mask_num // steps_per_block + (i < mask_num % steps_per_block) for i in range(steps_per_block)]
        for i in range(steps_per_block):                                    # 89
            if not (x == MASK).any():
                return trail, False
            global_step += 1
            mask_index = x == MASK
            top2 = torch.topk(logits[global_step - 1], k=2, dim=-1).values  # 131-133
            answer = mask_index if region == "masked" else start
            gap = float((top2[answer, 0] - top2[answer, 1]).mean())         # 138
            x0 = logits[global_step - 1].argmax(-1)
            if should_early_exit(global_step, steps, gap, thresholds):      # 140-148
                x[mask_index] = x0[mask_index] + 1
                trail.append((x == MASK, x.clone()))
                return trail, True
            x0_p = probs64(logits[global_step - 1]).max(-1).values          # 109-110
            x0_p[block_end:] = -INF                                         # 151
            confidence = torch.where(mask_index, x0_p, -INF)                # 154
            transfer = torch.zeros(size, dtype=torch.bool)
            if counts[i] > 0:                                               # 157-162
                transfer[torch.topk(confidence, k=counts[i]).indices] = True
            x[transfer] = x0[transfer] + 1                                  # 164
            trail.append((x == MASK, x.clone()))
    return trail, False


@pytest.mark.parametrize("steps,block,region", [(16, 0, "masked"), (8, 0, "start"), (12, 4, "masked"),
                                                (16, 8, "start")])
def test_prophet_commits_as_its_reference(steps, block, region):
    gen = torch.Generator().manual_seed(3 + steps + block)
    thresholds = {"early": 7.5, "mid": 5.0, "late": 2.5}
    exits = 0
    for _ in range(40):
        size, values = 16, 5
        logits = random_logits(gen, steps, size, values)
        start = torch.rand(size, generator=gen) < 0.8
        if block:   # every block holds as many masked positions as its steps (the documented regime)
            per_block = steps // (size // block)
            for b in range(size // block):
                start[b * block:b * block + min(per_block, block)] = True
        given = torch.randint(values, (size,), generator=gen)
        expected, exited = prophet_reference(logits, start, given, steps, block, thresholds, region)
        ours = run_ours(parse_strategy(f"prophet:steps={steps},block={block},region={region}"), logits, start, given)
        assert len(ours) == len(expected)
        for (masked, tokens), (ref_masked, ref_tokens) in zip(ours, expected):
            assert torch.equal(masked, ref_masked) and torch.equal(tokens, ref_tokens)
        exits += exited
    assert 5 < exits < 60      # early commits happened, and the base rule ran to the end too


# --- end to end: real tasks, the loop, hostile parameters ----------------------------------------

def loaded(task_name, n=2):
    return loaded_task(task_name, n)


@pytest.mark.parametrize("task_name", ["sudoku", "hmm"])
@pytest.mark.parametrize("spec", ["wino:block=9", "wino:verify=seen", "saber", "saber:n=3,block=27",
                                  "prophet:steps=8", "prophet:steps=12,block=27"])
def test_each_rule_decodes_a_task_to_completion(task_name, spec):
    """Every mask filled, given positions kept, within one pass a masked position (the re-masking
    rules' net progress); Saber did mask decoded positions again, and WINO's
    leave-one-out passes are counted apart from decoding passes."""
    task, model, eval_set = loaded(task_name)
    strategy = parse_strategy(spec)
    strategy.bind(task, model)
    result = decode(model, eval_set.tokens, eval_set.masked, strategy, task.temperature, seed=3)
    assert not (result.tokens == eval_set.tokens).logical_and(eval_set.masked).any()
    assert torch.equal(result.tokens[~eval_set.masked], eval_set.tokens[~eval_set.masked])
    assert (result.passes <= eval_set.masked.sum(1)).all()
    if spec.startswith("prophet"):
        assert (result.passes <= 12).all() and result.remasked is None
    if spec == "saber":   # WINO's re-masking is exercised beside its reference above
        assert int(result.remasked.sum()) > 0
    assert (result.aux_passes > 0).all() == (spec == "wino:block=9")
    records = task.records(result.tokens, result.passes, np.arange(len(eval_set)), eval_set)
    assert len(records) == len(eval_set)


def test_wino_needs_its_model_in_one_line():
    task, model, eval_set = loaded("sudoku")
    with pytest.raises(BenchError, match="no model to verify with"):
        decode(model, eval_set.tokens, eval_set.masked, parse_strategy("wino"), 0.0)


@pytest.mark.parametrize("spec,says", [("wino:tau1=1.5", "tau1=1.5 is out of range"),
                                       ("wino:tau2=-0.1", "tau2=-0.1 is out of range"),
                                       ("wino:verify=both", "verify='both' is not allowed"),
                                       ("saber:n=0", "n=0 is out of range"),
                                       ("prophet:early=-1", "early=-1 is out of range"),
                                       ("prophet:late=nan", "not a finite float")])
def test_an_out_of_range_parameter_is_a_one_line_error(capsys, spec, says):
    status = main(["run", "--tasks", "sudoku", "--strategies", spec, "--limit", "1", "--out", "unused"])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert says in err, err


def test_saber_s_n_is_bounded_by_the_input_s_positions():
    task, model, eval_set = loaded("sudoku")
    with pytest.raises(BenchError, match="n=82 is more than inputs of 81 positions can use"):
        decode(model, eval_set.tokens, eval_set.masked, parse_strategy("saber:n=82"), 0.0)
    assert math.isfinite(parse_strategy("saber:n=81").pass_budget())


@pytest.mark.parametrize("spec,ablation", [("wino:block=9", "wino:block=9,tau2=0"), ("saber", "saber:backtrack=false")])
def test_the_no_re_mask_ablations_mask_nothing_again_and_skip_verification(spec, ablation):
    """Each re-masking rule beside its ablation: the same accept rule, nothing masked again (and
    WINO's ablation spends no verification passes)."""
    task, model, eval_set = loaded("hmm")
    runs = {}
    for name in (spec, ablation):
        strategy = parse_strategy(name)
        strategy.bind(task, model)
        runs[name] = decode(model, eval_set.tokens, eval_set.masked, strategy, 1.0, seed=2)
    assert int(runs[ablation].remasked.sum()) == 0 and int(runs[ablation].aux_passes.sum()) == 0
    assert not torch.equal(runs[spec].tokens, runs[ablation].tokens)
