"""Issue 17, item 6: the shipped models run large batches in chunks of rows on the CPU, which must
give bit-identical outputs (so no record changes)."""
import pytest
import torch

from tasks.protein.task import ProteinTask
from tasks.sudoku.task import SudokuTask


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def threads(request):
    """Protein's rows per call grow with torch's threads: check at 1 and 2."""
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


@pytest.mark.parametrize("task_class", [SudokuTask, ProteinTask])
def test_chunked_forward_passes_are_bit_identical_to_one_call(task_class, threads):
    task = task_class()
    model = task.load_model()
    eval_set = task.eval_set(None, 0)
    chunk = model.rows_per_call() if hasattr(model, "rows_per_call") else model.chunk_rows
    n = 2 * chunk + 5   # two full chunks and a short one
    generator = torch.Generator().manual_seed(0)
    tokens, start = eval_set.tokens[:n].clone(), eval_set.masked[:n]
    masked = start & (torch.rand(start.shape, generator=generator) < 0.6)   # partly revealed states
    values = model.value_tokens[torch.randint(model.vocab_size, start.shape, generator=generator)]
    tokens = torch.where(start & ~masked, values, tokens)
    chunked = model(tokens, masked)
    whole = model.forward(tokens, masked)   # one call on every row
    assert torch.equal(chunked.logits, whole.logits) and torch.equal(chunked.hidden, whole.hidden)
    rows = torch.tensor([n - 1, 3, chunk])   # any rows alone: what the decode loop's active rows are
    assert torch.equal(model(tokens[rows], masked[rows]).logits, whole.logits[rows])
