"""`bench calibrate` (issue 29 item 2): a knob bisected until mean passes are within 2% of a budget."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.calibrate import calibrate, knob_spec
from bench.errors import BenchError


def test_a_falling_knob_is_bisected_on_a_log_scale_to_within_two_percent():
    calls = []

    def measure(gamma):                 # passes fall as gamma grows, like EB-Sampler's
        calls.append(gamma)
        return 80.0 / (1.0 + gamma)

    found = calibrate(measure, 0.01, 100.0, 8.0)
    assert found.within and abs(found.passes / 8.0 - 1) <= 0.02 and found.value == pytest.approx(9.0, rel=0.05)
    assert len(calls) == len(found.probes) <= 20


def test_a_rising_knob_and_a_linear_range_including_zero():
    found = calibrate(lambda tau: 2.0 + 40.0 * tau, 0.0, 1.0, 22.0)   # passes rise with tau
    assert found.within and found.value == pytest.approx(0.5, abs=0.02)


def test_a_budget_outside_what_the_range_gives_is_a_one_line_error():
    with pytest.raises(BenchError, match="budget 100 passes is outside what the knob's range gives"):
        calibrate(lambda g: 80.0 / (1.0 + g), 0.1, 10.0, 100.0)
    with pytest.raises(BenchError, match="need low < high"):
        calibrate(lambda g: 1.0, 2.0, 1.0, 5.0)


def test_a_step_function_that_never_comes_within_tolerance_says_so():
    found = calibrate(lambda k: 10.0 if k < 1 else 5.0, 0.1, 10.0, 7.0, max_steps=10)
    assert not found.within and found.passes in (10.0, 5.0)


def test_the_spec_keeps_the_templates_parameters():
    assert knob_spec("eb", "gamma", 0.4371234) == "eb:gamma=0.437123"
    assert knob_spec("mi:lam=0", "gamma", 2) == "mi:lam=0,gamma=2"


def test_the_command_calibrates_eb_on_the_exact_tasks_validation_sequences():
    """A real decode: EB-Sampler's gamma on 100 validation sequences of the exact HMM task (seed 100)."""
    proc = subprocess.run([sys.executable, "-m", "bench", "calibrate", "--task", "hmm", "--strategy", "eb",
                           "--knob", "gamma", "--budget", "16", "--range", "0.5,16", "--limit", "100"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("eb:gamma=") and "on 100 validation inputs of hmm, within 2% of 16" in last
    passes = float(last.split(": ")[1].split()[0])
    assert abs(passes / 16 - 1) <= 0.02


def test_a_task_without_a_validation_split_cannot_be_calibrated():
    """The toy plugin task (tests/toy) declares no settings, so no validation split either."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent), UNMASK_BENCH_PLUGINS="toy")
    proc = subprocess.run([sys.executable, "-m", "bench", "calibrate", "--task", "toy", "--strategy", "eb",
                           "--knob", "gamma", "--budget", "16", "--range", "1,30"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and proc.stderr.strip().startswith("error: task 'toy' declares no validation split")
