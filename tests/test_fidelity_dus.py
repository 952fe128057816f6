"""DUS against a transcription of its reference's schedule (Jianguo99/OpenDLM,
opendlm/sampler/scheduler/dus.py, DetailedUnmaskingScheduler._precompute_transfer_indices, alpha 2,
no skip threshold): the same rounds for every block size, powers of 2 or not."""
import math

import pytest

from strategies.schedules.dus import dilated_rounds


def reference_rounds(block, alpha=2.0):
    """The reference's transfer indices per step (0-indexed offsets), transcribed."""
    steps, revealed, out = math.ceil(math.log(block) / math.log(alpha)), set(), []
    for t in range(1, steps + 1):
        stride = max(1, int(block // (alpha ** t)))
        new = [k - 1 for k in range(1, block + 1) if k not in revealed and (k - 1) % stride == 0]
        if t == steps and out and len(new) < len(out[-1]):
            out[-1].extend(new)
            continue
        out.append(new)
        revealed.update(k + 1 for k in new)
    return out


@pytest.mark.parametrize("block", range(2, 65))
def test_dus_rounds_are_the_references(block):
    rounds = dilated_rounds(block).tolist()
    ours = [sorted(i for i, r in enumerate(rounds) if r == t) for t in range(max(rounds) + 1)]
    assert ours == [sorted(step) for step in reference_rounds(block)]


def test_sudokus_block_of_27_takes_four_rounds():
    assert [len(step) for step in reference_rounds(27)] == [3, 4, 4, 16]
    assert int(dilated_rounds(27).max()) + 1 == 4
