"""Adding a task (one folder) and a strategy (one file): the toy in tests/toy, registered the way
tasks/ and strategies/ are, runs through the real CLI, results and report."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent


def bench(*args, tmp_path):
    """`bench ARGS` with the toy plugin, in this process (the toy_plugin fixture registers it and
    restores every registry after)."""
    return run_cli(*args, cwd=tmp_path)


def test_the_toy_task_and_strategy_run_through_the_cli(tmp_path, toy_plugin):
    listed = bench("list", tmp_path=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "toy " in listed.stdout and "leftmost" in listed.stdout
    run = bench("run", "--tasks", "toy", "--strategies", "sequential,leftmost,leftmost:k=2,topk:k=6",
                "--out", tmp_path / "results", tmp_path=tmp_path)
    assert run.returncode == 0, run.stderr
    summaries = {json.loads(p.read_text())["label"]: json.loads(p.read_text())
                 for p in (tmp_path / "results" / "toy").glob("*.json")}
    def metric_value(label, name):
        return next(m["value"] for m in summaries[label]["metrics"] if m["name"] == name)

    assert metric_value("leftmost", "exact_match") == 1.0 and metric_value("leftmost", "passes") == 6
    assert metric_value("sequential", "exact_match") == 1.0   # the confident position is always the next one
    assert metric_value("leftmost:k=2", "exact_match") == 0.0 and metric_value("leftmost:k=2", "passes") == 3
    assert metric_value("topk:k=6", "exact_match") == 0.0 and metric_value("topk:k=6", "passes") == 1
    report = bench("report", "--results", tmp_path / "results", "--out", tmp_path / "reports", tmp_path=tmp_path)
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "reports" / "pareto_toy.png").exists() and (tmp_path / "reports" / "table_toy.md").exists()


def test_a_missing_plugin_is_a_one_line_error(tmp_path):
    env = dict(os.environ, UNMASK_BENCH_PLUGINS="no_such_plugin")
    proc = subprocess.run([sys.executable, "-m", "bench", "list"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no_such_plugin" in proc.stderr


def test_nothing_outside_the_toy_folder_names_it():
    # the plugin's name as a word ("toy", "tests.toy", "toy_"), not inside another ("toys" in a word problem)
    sources = [p for folder in ("bench", "strategies", "tasks") for p in (ROOT / folder).rglob("*.py")]
    assert [p for p in sources if re.search(r"\btoy(?!s\b)", p.read_text().lower())] == []


def test_a_strategy_on_a_task_without_its_protocol_is_a_one_line_error(tmp_path, toy_plugin):
    """The toy task implements neither the MI estimator's protocol nor the learned order's:
    `bench list` says so, and running either family on it names what is missing, before decoding."""
    listed = bench("list", tmp_path=tmp_path)
    toy_lines = listed.stdout.split("  toy ", 1)[1].splitlines()
    assert any("supports: no helper protocol" in line for line in toy_lines[:4])
    for spec, protocol in (("mi:gamma=0.3", "MI estimator"), ("learned:T=5", "learned order")):
        run = bench("run", "--tasks", "toy", "--strategies", spec, "--out", tmp_path / "results", tmp_path=tmp_path)
        assert run.returncode == 2
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: strategy {spec.partition(':')[0]} needs task toy "
                                                       f"to support the {protocol}")
        assert "lacks weights_dir" in lines[0]
        assert not list((tmp_path / "results").rglob("*.json*"))
