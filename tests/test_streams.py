"""Issue 17, item 2: results do not depend on how the work is cut. Every random number drawn for
an input comes from its own stream (bench.streams), so records are the same for any batch size
and for any cut of the inputs into shards, on Sudoku (a sampling strategy) and protein (sampled
values)."""
import json

import numpy as np
import pytest
import torch

from bench.registry import parse_strategy
from bench.results import read_records
from bench.run.cell import Run, decode_rows
from bench.run.local import run_one
from bench.run.verify import VOLATILE
from bench.streams import GOLDEN, MASK64, Streams, absorb, as_uint64, categorical, mix, purpose_key
from tasks.protein.task import ProteinTask
from tasks.sudoku.task import SudokuTask


def test_an_inputs_uniforms_do_not_depend_on_its_batch():
    together = Streams(7, torch.tensor([4, 11, 0])).uniform_grid(3, "values", 9)
    alone = Streams(7, torch.tensor([11])).uniform_grid(3, "values", 9)
    assert torch.equal(together[1], alone[0])
    assert torch.equal(Streams(7, torch.tensor([4, 11, 0])).take(torch.tensor([2, 0])).uniform_grid(3, "values", 9),
                       together[[2, 0]])
    picked = Streams(7, torch.tensor([4, 11])).uniform(3, "values", torch.tensor([1, 1]), torch.tensor([2, 8]))
    assert torch.equal(picked, together[1, [2, 8]])
    others = [Streams(8, torch.tensor([11])).uniform_grid(3, "values", 9),      # another seed
              Streams(7, torch.tensor([11])).uniform_grid(4, "values", 9),      # another pass
              Streams(7, torch.tensor([11])).uniform_grid(3, "learned:0", 9),   # another purpose
              Streams(7, torch.tensor([12])).uniform_grid(3, "values", 9)]      # another input
    assert all(not torch.equal(alone, other) for other in others)
    many = Streams(0, torch.arange(20000)).uniform_grid(0, "values", 5)
    assert 0 <= many.min() and many.max() < 1 and abs(many.mean() - 0.5) < 0.01


def test_categorical_draws_follow_the_probabilities_and_never_a_zero_one():
    probs = torch.tensor([0.2, 0.0, 0.5, 0.3, 0.0]).expand(40000, 5)
    uniforms = Streams(1, torch.arange(40000)).uniform(0, "values", torch.arange(40000),
                                                       torch.zeros(40000, dtype=torch.long))
    counts = torch.bincount(categorical(probs, uniforms), minlength=5) / 40000
    assert counts[1] == 0 and counts[4] == 0
    assert torch.allclose(counts, probs[0], atol=0.01)
    assert categorical(torch.tensor([[0.5, 0.5, 0.0]]), torch.tensor([1 - 2 ** -53])).item() == 1


def reference_uniform(seed, index, step, purpose, rows, positions):
    """Streams.uniform as first written (every hash made from the seed on, each call)."""
    head = (seed * GOLDEN + purpose_key(purpose)) & MASK64
    state = absorb(absorb(mix(np.array([head], dtype=np.uint64)), as_uint64(index)), [step])
    bits = absorb(state[as_uint64(rows)], as_uint64(positions)) >> np.uint64(11)
    return torch.from_numpy(bits.astype(np.float64) * 2.0 ** -53)


def reference_categorical(probs, uniforms):
    """categorical as first written, in torch."""
    cdf = probs.double().cumsum(-1)
    drawn = (cdf <= (uniforms.to(cdf.dtype) * cdf[:, -1])[:, None]).sum(-1)
    return torch.minimum(drawn, (probs > 0).long().cumsum(-1).argmax(-1))


def test_streams_taken_from_streams_draw_the_first_versions_numbers():
    generator = torch.Generator().manual_seed(5)
    streams = Streams(2 ** 40 + 3, torch.randperm(300, generator=generator)[:40])
    for step in range(4):                         # rows leave the batch pass by pass, as in the loop
        rows = torch.randperm(len(streams), generator=generator)[:max(1, len(streams) - 9)].sort().values
        streams = streams.take(rows)
        for purpose in ("values", "learned:0"):
            picked = torch.randint(len(streams), (50,), generator=generator)
            positions = torch.randint(100, (50,), generator=generator)
            assert torch.equal(streams.uniform(step, purpose, picked, positions),
                               reference_uniform(2 ** 40 + 3, streams.index, step, purpose, picked, positions))


@pytest.mark.parametrize("values", [9, 20, 33, 1000])
def test_categorical_draws_what_the_first_version_drew(values):
    generator = torch.Generator().manual_seed(values)
    for _ in range(50):
        count = int(torch.randint(1, 300, (1,), generator=generator))
        probs = torch.softmax(torch.randn(count, values, generator=generator) * 4, -1)
        probs[torch.rand(count, values, generator=generator) < 0.2] = 0.0
        probs[:, 0] += 1e-3
        uniforms = torch.rand(count, generator=generator, dtype=torch.float64)
        uniforms[::7] = 1 - 2 ** -53
        assert torch.equal(categorical(probs, uniforms), reference_categorical(probs, uniforms))


def records_of(task, model, eval_set, spec, limit, batch_size, out):
    strategy = parse_strategy(spec)
    run = Run(task, model, eval_set, strategy, spec, 0, limit, batch_size=batch_size, out=out)
    run_one(run)
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in read_records(run.paths[1])]


def shard_records(task, model, eval_set, spec, cuts):
    """Records of the inputs decoded in the given groups of rows (shards of any shape)."""
    strategy = parse_strategy(spec)
    strategy.bind(task, model)
    run = Run(task, model, eval_set, strategy, spec, 0)
    records = [r for rows in cuts for r in decode_rows(run, torch.tensor(rows))[0]]
    return sorted((json.loads(json.dumps(r)) for r in records), key=lambda r: r["index"])


CASES = [(SudokuTask, "learned:T=5,mode=sample", 20), (ProteinTask, "topk:k=12", 8),
         (ProteinTask, "learned:T=5,mode=sample", 8)]   # batches of 7 still split the 8 proteins


@pytest.mark.parametrize("task_class,spec,limit", CASES,
                         ids=["sudoku-learned-sample", "protein-topk", "protein-learned-sample"])
def test_records_do_not_depend_on_the_batch_size_or_the_shards(task_class, spec, limit, tmp_path):
    task = task_class()
    model, eval_set = task.load_model(), task.eval_set(limit, 0)
    whole = records_of(task, model, eval_set, spec, limit, 250, tmp_path / "b250")
    assert records_of(task, model, eval_set, spec, limit, 7, tmp_path / "b7") == whole
    assert len(whole) == limit and len({json.dumps(r, sort_keys=True) for r in whole}) == limit
    halves = [range(0, limit // 2), range(limit // 2, limit)]
    odd_even = [range(1, limit, 2), range(0, limit, 2)]
    one_by_one = [[i] for i in reversed(range(limit))]
    for cuts in (halves, odd_even, one_by_one):
        assert shard_records(task, model, eval_set, spec, cuts) == whole


def test_another_seed_draws_otherwise():
    task = ProteinTask()
    model, eval_set = task.load_model(), task.eval_set(4, 0)
    strategy = parse_strategy("topk:k=12")
    first = decode_rows(Run(task, model, eval_set, strategy, "", 0), torch.arange(4))[0]
    other = decode_rows(Run(task, model, eval_set, strategy, "", 1), torch.arange(4))[0]
    assert [r["sequence"] for r in first] != [r["sequence"] for r in other]
    assert all(r["log_q"] < 0 for r in first)
