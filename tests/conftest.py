import contextlib
import importlib.util
import os
import signal
import sys
from pathlib import Path

import pytest
import torch

from bench.core import ModelOutput
from bench.hf import check_torchvision

# tests build transformers models directly too: keep a torchvision that cannot import out of their way
check_torchvision()

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


# The antibody task's inputs need its extra (`pip install -e '.[antibody]'`: anarci, antiberty);
# its tests skip without it, except where UNMASK_BENCH_REQUIRE_ANTIBODY is set (CI sets it, so they
# cannot silently go missing there). No test needs AntiBERTy's weights.
needs_antibody_extra = pytest.mark.skipif(
    importlib.util.find_spec("anarci") is None and not os.environ.get("UNMASK_BENCH_REQUIRE_ANTIBODY"),
    reason="the antibody task's inputs need its extra: pip install -e '.[antibody]'")


class TableModel:
    """A hand-made MaskedModel: fixed logits per position, for testing the loop itself."""
    vocab_size = 3
    checkpoint_id = "table"

    def __init__(self, logits):
        self.logits = logits  # [N, V]
        self.value_tokens = torch.tensor([1, 2, 3])
        self.calls = 0

    def __call__(self, tokens, masked):
        self.calls += 1
        batch = tokens.shape[0]
        return ModelOutput(logits=self.logits.expand(batch, -1, -1).clone(),
                           hidden=torch.zeros(batch, tokens.shape[1], 4))


@pytest.fixture
def table_model():
    torch.manual_seed(0)
    return TableModel(torch.randn(6, 3))


def run_cli(*args):
    """Run `python -m bench ARGS` in a subprocess; returns CompletedProcess."""
    import subprocess
    return subprocess.run([sys.executable, "-m", "bench", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


@contextlib.contextmanager
def deadline(seconds):
    """Raise TimeoutError after ``seconds``: a call that loops on or blocks (a decode without end, an
    open() on a FIFO) must fail its test, not hang it."""
    def expire(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
