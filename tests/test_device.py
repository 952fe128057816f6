"""--device and --dtype: checked values, the placed model's contract, what results record, and
(with CUDA only) a CUDA run against the CPU run within stated tolerances."""
import json

import pytest
import torch

from bench.cli import main
from bench.device import Placement, place, placement, resolve_device
from bench.errors import BenchError
from bench.report.compare import settings
from bench.results import read_records
from conftest import run_cli

CUDA = torch.cuda.is_available()


@pytest.mark.parametrize("args,message", [
    (["run", "--device", "tpu"], "--device must be auto, cpu, cuda or cuda:N, got 'tpu'"),
    (["run", "--dtype", "float16"], "--dtype must be float32 or bfloat16, got 'float16'"),
    (["train", "sudoku", "--device", "gpu0"], "--device must be auto, cpu, cuda or cuda:N"),
    (["mi", "labels", "--task", "sudoku", "--device", "cuda:x"], "--device must be auto, cpu, cuda or cuda:N"),
    (["run", "--executor", "dask"], "--executor must be local or ray"),
    (["run", "--shards", "2"], "--shards needs --executor ray"),
])
def test_bad_values_are_one_line_errors(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.skipif(CUDA, reason="checks the message on a machine without CUDA")
def test_cuda_without_cuda_is_one_line(capsys):
    assert main(["run", "--tasks", "sudoku", "--device", "cuda", "--limit", "1"]) == 2
    err = capsys.readouterr().err
    assert "--device cuda: CUDA is not available here" in err and len(err.strip().splitlines()) == 1


def test_device_names_resolve_against_the_gpus_there_are():
    assert resolve_device("auto", gpus=0) == "cpu" and resolve_device("AUTO", gpus=2) == "cuda"
    assert resolve_device("cuda:1", gpus=2) == "cuda:1"
    with pytest.raises(BenchError, match="there are 2 CUDA devices"):
        resolve_device("cuda:2", gpus=2)
    assert Placement().config() == {} and Placement("cuda:3", "bfloat16").config() == {"device": "cuda",
                                                                                        "dtype": "bfloat16"}


def test_a_placed_model_keeps_its_contract(table_model):
    assert place(table_model, placement("cpu", "float32")) is table_model   # the default adds nothing
    placed = place(table_model, placement("cpu", "bfloat16"))
    assert placed.checkpoint_id == "table" and placed.vocab_size == 3 and placed.n_params is None
    assert placed.to("cpu") is placed and torch.equal(placed.value_tokens, table_model.value_tokens)
    tokens, masked = torch.ones(2, 6, dtype=torch.long), torch.ones(2, 6, dtype=torch.bool)
    out = placed(tokens, masked)
    assert out.logits.dtype == torch.float32 and out.logits.shape == (2, 6, 3) and out.hidden.shape == (2, 6, 4)


def test_compare_keeps_devices_and_dtypes_apart():
    base = {"schema_version": 1, "config": {"model_id": "m", "seed": 0}}
    cpu = {"schema_version": 1, "config": {"model_id": "m", "seed": 0, "device": "cpu", "dtype": "float32"}}
    gpu = {"schema_version": 1, "config": {"model_id": "m", "seed": 0, "device": "cuda", "dtype": "float32"}}
    assert settings(base) == settings(cpu) != settings(gpu)   # no device recorded: the CPU in float32


def test_a_bfloat16_run_records_its_device_and_dtype_and_is_its_own_run(tmp_path):
    common = ["run", "--tasks", "sudoku", "--strategies", "topk:k=20", "--limit", 2, "--out", tmp_path]
    assert run_cli(*common).returncode == 0
    proc = run_cli(*common, "--dtype", "bfloat16")
    assert proc.returncode == 0, proc.stderr
    assert "on cpu bfloat16" in proc.stderr
    summaries = {json.loads(p.read_text())["config"].get("dtype"): json.loads(p.read_text())
                 for p in (tmp_path / "sudoku").glob("*.json")}
    assert set(summaries) == {None, "bfloat16"}   # two result files; float32 on the CPU records nothing
    assert summaries["bfloat16"]["config"]["device"] == "cpu"
    assert summaries["bfloat16"]["device"] == {"device": "cpu", "dtype": "bfloat16", "name": "cpu"}
    compared = run_cli("compare", *[p for p in (tmp_path / "sudoku").glob("*.json")])
    assert "not comparable" in compared.stdout and "dtype float32 vs bfloat16" in compared.stdout


# Tolerances of a CUDA run against the CPU run (same commit, same inputs). float32: the model's
# numbers differ in the last bits (other kernels), which can flip a near-tie, so a few outputs may
# differ; bfloat16 has about 3 significant digits, so more do.
TOLERANCES = {"float32": {"same_outputs": 0.98, "exact_accuracy": 0.02, "passes": 0.02},
              "bfloat16": {"same_outputs": 0.80, "exact_accuracy": 0.06, "passes": 0.05}}


def outputs_and_metrics(folder):
    summary_path = next((folder / "sudoku").glob("*[0-9a-f].json"))
    summary = json.loads(summary_path.read_text())
    records = read_records(summary_path.with_suffix(".jsonl"))
    return {r["index"]: r["output"] for r in records}, {m["name"]: m["value"] for m in summary["metrics"]}


@pytest.mark.skipif(not CUDA, reason="needs CUDA")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("strategy", ["eb:gamma=0.3", "mi", "learned:T=10,mode=threshold"])  # helpers on the GPU too
def test_a_cuda_run_matches_the_cpu_run_within_tolerance(tmp_path, dtype, strategy):
    common = ["run", "--tasks", "sudoku", "--strategies", strategy, "--limit", 200]
    assert run_cli(*common, "--out", tmp_path / "cpu").returncode == 0
    proc = run_cli(*common, "--out", tmp_path / "gpu", "--device", "cuda", "--dtype", dtype)
    assert proc.returncode == 0, proc.stderr
    (cpu_out, cpu), (gpu_out, gpu) = outputs_and_metrics(tmp_path / "cpu"), outputs_and_metrics(tmp_path / "gpu")
    limits = TOLERANCES[dtype]
    same = sum(cpu_out[i] == gpu_out[i] for i in cpu_out) / len(cpu_out)
    print(f"{strategy} {dtype}: same outputs {same:.3f}, exact_accuracy {cpu['exact_accuracy']:.3f} cpu "
          f"{gpu['exact_accuracy']:.3f} cuda, passes {cpu['passes']:.2f} cpu {gpu['passes']:.2f} cuda")
    assert same >= limits["same_outputs"]
    assert abs(cpu["exact_accuracy"] - gpu["exact_accuracy"]) <= limits["exact_accuracy"]
    assert abs(cpu["passes"] - gpu["passes"]) <= limits["passes"] * cpu["passes"]


@pytest.mark.skipif(not CUDA, reason="needs CUDA")
def test_a_cuda_protein_run_draws_what_the_cpu_run_draws_within_tolerance(tmp_path):
    """Sampled values: the draws come from the CPU streams either way; only the model's
    probabilities differ in the last bits, so a sequence differs only where a draw falls that close
    to a boundary. Tolerance: at least 90% of the 40 sequences identical, composition JSD within 0.005."""
    common = ["run", "--tasks", "protein", "--strategies", "eb:gamma=1", "--limit", 40]
    assert run_cli(*common, "--out", tmp_path / "cpu").returncode == 0
    proc = run_cli(*common, "--out", tmp_path / "gpu", "--device", "cuda")
    assert proc.returncode == 0, proc.stderr
    found = {}
    for side in ("cpu", "gpu"):
        path = next((tmp_path / side / "protein").glob("*[0-9a-f].json"))
        records = read_records(path.with_suffix(".jsonl"))
        metrics = {m["name"]: m["value"] for m in json.loads(path.read_text())["metrics"]}
        found[side] = ({r["index"]: r["sequence"] for r in records}, metrics["composition_jsd"])
    same = sum(found["cpu"][0][i] == found["gpu"][0][i] for i in found["cpu"][0]) / len(found["cpu"][0])
    print(f"protein float32: same sequences {same:.3f}, composition_jsd {found['cpu'][1]:.5f} cpu "
          f"{found['gpu'][1]:.5f} cuda")
    assert same >= 0.9 and abs(found["cpu"][1] - found["gpu"][1]) <= 0.005
