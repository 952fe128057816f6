"""`bench run --executor ray` on a local Ray cluster of 2 CPUs: the records of a sharded run are
those of `--executor local`, and a rerun skips finished runs and finished shards.

Needs Ray (`pip install -e '.[ray]'`); skipped without it, except where UNMASK_BENCH_REQUIRE_RAY
is set (CI sets it, so the test cannot silently go missing there)."""
import json
import os

import pytest

from bench.cli import main
from bench.results import batch_line, read_records, run_id
from bench.run.ray_executor import shard_ranges

if os.environ.get("UNMASK_BENCH_REQUIRE_RAY"):
    import ray
else:
    ray = pytest.importorskip("ray", reason="the Ray executor's test needs Ray: pip install -e '.[ray]'")

RUN = ["run", "--tasks", "sudoku", "--strategies", "sequential,topk:k=3", "--limit", 8, "--batch-size", 2]


def records(folder):
    """{file name: records without their wall times} of every run in ``folder``."""
    return {p.name: [{k: v for k, v in json.loads(line).items() if k != "batch_seconds"}
                     for line in p.read_text().splitlines()]
            for p in sorted((folder / "sudoku").glob("*.jsonl")) if "partial" not in p.name}


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_shards_are_contiguous_whole_batches():
    assert shard_ranges([0, 1, 2, 3], 3) == [[0], [1], [2, 3]]
    assert shard_ranges([2, 5], 4) == [[2], [5]]
    assert shard_ranges(list(range(10)), 1) == [list(range(10))]


def test_ray_shards_give_the_local_records_and_reruns_skip_finished_work(tmp_path, local_ray, capsys):
    assert main([*map(str, RUN), "--out", str(tmp_path / "local")]) == 0
    assert main([*map(str, RUN), "--out", str(tmp_path / "ray"), "--executor", "ray", "--shards", "3"]) == 0
    local = records(tmp_path / "local")
    assert len(local) == 2 and records(tmp_path / "ray") == local
    summaries = [json.loads(p.read_text()) for p in sorted((tmp_path / "ray" / "sudoku").glob("*[0-9a-f].json"))]
    assert all(s["n_samples"] == 8 and "device" not in s["config"] for s in summaries)

    # a run cut short: the batch of inputs 0-1 merged, that of 2-3 in a shard file (with half a
    # line of the batch of 4-5), the rest never made; batches are keyed by their first input
    folder = tmp_path / "ray" / "sudoku"
    jsonl = next(folder.glob("topk*.jsonl"))
    stem = jsonl.name.removesuffix(".jsonl")
    done = read_records(jsonl)
    config_id = run_id(json.loads((folder / f"{stem}.json").read_text())["config"])
    batch = {first: [r for r in done if r["batch"] == first] for first in (0, 2, 4)}
    assert all(len(records) == 2 for records in batch.values())
    (folder / f"{stem}.partial.jsonl").write_text(batch_line(config_id, batch[0]))
    (folder / f"{stem}.shard-2-4.partial.jsonl").write_text(batch_line(config_id, batch[2])
                                                           + batch_line(config_id, batch[4])[:40])
    jsonl.unlink()
    (folder / f"{stem}.json").unlink()
    capsys.readouterr()
    assert main([*map(str, RUN), "--out", str(tmp_path / "ray"), "--executor", "ray", "--shards", "2"]) == 0
    err = capsys.readouterr().err
    assert "sequential: complete already" in err and "4 inputs decoded again reproduce it" in err
    assert "topk:k=3: inputs 4-5 done" in err and "topk:k=3: inputs 6-7 done" in err   # only what was missing
    assert records(tmp_path / "ray") == local
    left = sorted(p.name for p in folder.iterdir())   # no shard, partial or lock file is left behind
    assert left == sorted([*local, *(name.replace(".jsonl", ".json") for name in local)])
