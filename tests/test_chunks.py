"""Issue 17, item 6: the shipped models run large batches in chunks of rows on the CPU, which must
give bit-identical outputs (so no record changes)."""
import pytest
import torch

from tasks.protein.task import ProteinTask
from tasks.sudoku.task import SudokuTask


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def threads(request):
    """At 2 threads the chunks run side by side (bench.chunks): check at 1 and 2."""
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


@pytest.mark.parametrize("task_class", [SudokuTask, ProteinTask])
def test_chunked_forward_passes_are_bit_identical_to_one_call(task_class, threads):
    task = task_class()
    model = task.load_model()
    eval_set = task.eval_set(None, 0)
    chunk = model.chunk_rows
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


def test_chunks_run_side_by_side_at_one_torch_thread_each_in_order():
    """At 2 threads each chunk runs on a worker thread at one torch thread, under the caller's
    grad and inference modes; the outputs keep the rows' order and the setting comes back."""
    import threading

    from bench.chunks import in_chunks
    from bench.core import ModelOutput
    seen = []

    def forward(tokens, masked):
        seen.append((threading.current_thread().name, torch.get_num_threads(), torch.is_grad_enabled(),
                     torch.is_inference_mode_enabled()))
        return ModelOutput(logits=tokens[..., None].float() * 2, hidden=None)
    tokens, masked = torch.arange(20).view(10, 2), torch.zeros(10, 2, dtype=torch.bool)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with torch.inference_mode():
            out = in_chunks(forward, tokens, masked, 3)
        assert torch.equal(out.logits[..., 0], tokens.float() * 2) and out.hidden is None
        assert len(seen) == 4 and all(name.startswith("bench-chunks") and threads == 1 and not grad and inference
                                      for name, threads, grad, inference in seen)
        assert torch.get_num_threads() == 2
        seen.clear()
        with torch.autocast("cpu", dtype=torch.bfloat16):   # autocast is per thread: stay in the caller's
            in_chunks(forward, tokens, masked, 3)
        assert [name for name, *_ in seen] == [threading.current_thread().name] * 4
    finally:
        torch.set_num_threads(before)


def test_protein_rotary_tables_grow_only_in_the_callers_thread():
    """ESM-C's rotary tables grow lazily; with chunks side by side they must grow before the
    worker threads start, or a worker can read a table another is still growing."""
    import threading

    from esm.layers.rotary import RotaryEmbedding
    task = ProteinTask()
    model = task.load_model()
    for module in model.network.modules():                  # as a fresh model: no table yet
        if isinstance(module, RotaryEmbedding):
            module._seq_len_cached, module._cos_cached, module._sin_cached = 0, None, None
    grown, update = [], RotaryEmbedding._update_cos_sin_cache

    def recording(self, seqlen, device=None, dtype=None):
        if seqlen > self._seq_len_cached or self._cos_cached is None:
            grown.append(threading.current_thread().name)
        return update(self, seqlen, device=device, dtype=dtype)
    eval_set = task.eval_set(None, 0)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    RotaryEmbedding._update_cos_sin_cache = recording
    try:
        model(eval_set.tokens[:3 * model.chunk_rows], eval_set.masked[:3 * model.chunk_rows])
    finally:
        RotaryEmbedding._update_cos_sin_cache = update
        torch.set_num_threads(before)
    assert grown and set(grown) == {threading.current_thread().name}
