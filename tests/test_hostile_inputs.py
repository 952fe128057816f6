"""Issue 52, hostile inputs: corrupt model folders, absurd strategy parameters and training
settings, --limit beyond the data, missing calibration folders, `train --same-as` misuse, a
split's data in another split's folder, and commands run from another working directory. Each
is a valid result or one line `error: ...` with exit 2: no traceback, no hang, no files left."""
import os
import subprocess
import sys
from dataclasses import fields

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.cli import main
from bench.decode import decode
from bench.errors import BenchError
from bench.registry import PASSES_PER_POSITION, STRATEGIES, field_type_name, load_plugins, parse_strategy
from conftest import ROOT, deadline

FUZZ = settings(max_examples=40, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def one_line_error(capsys, argv, *says):
    """Run the CLI in-process; it must exit 2 with one line naming each of ``says``."""
    status = main(list(map(str, argv)))
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for text in says:
        assert text in err, err
    return err


# --- model folders: a corrupt weights file, a config that is not an object (item 3) -------------

@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    from test_hf_model import tiny_bert
    pytest.importorskip("transformers")
    return tiny_bert(tmp_path_factory.mktemp("hf") / "bert")


def copy_folder(source, target):
    target.mkdir(parents=True)
    for path in source.iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    return target


@pytest.mark.parametrize("damage,file,says", [
    (lambda f: (f / "model.safetensors").write_bytes(b"\xff" * 64), "model.safetensors", "not a readable safetensors"),
    (lambda f: (f / "model.safetensors").write_bytes((f / "model.safetensors").read_bytes()[:100]),
     "model.safetensors", "not a readable safetensors"),
    (lambda f: (f / "config.json").write_text("[1, 2]"), "config.json", "holds a JSON list"),
    (lambda f: (f / "config.json").write_text('{"model_type": "bert", '), "config.json", "is not JSON"),
    (lambda f: (f / "config.json").write_text('{"model_type": "bert", "hidden_size": "big"}'), "", "do not load"),
])
def test_a_damaged_model_folder_is_one_line_naming_the_file(bert_folder, tmp_path, capsys, damage, file, says):
    folder = copy_folder(bert_folder, tmp_path / "model")
    damage(folder)
    one_line_error(capsys, ["run", "--tasks", "antibody", "--model", f"hf:{folder}", "--strategies", "sequential",
                            "--limit", 1, "--out", tmp_path / "out"], f"{folder / file}" if file else "hf:", says)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content", [b"", b"not a checkpoint", b"PK\x03\x04broken zip"])
def test_a_damaged_checkpoint_compared_by_same_as_is_one_line(tmp_path, content):
    from bench.checkpoints import weight_tensors
    path = tmp_path / "damaged.pt"
    path.write_bytes(content)
    with pytest.raises(BenchError, match=f"checkpoint {path} is corrupt or not a checkpoint"):
        weight_tensors(path)


# --- strategy parameters: a stated range, checked before any allocation or pass (item 4) -------

def int_parameters():
    """(strategy name, int parameter) of every registered strategy that needs no trained helper."""
    load_plugins()
    return [(name, f.name) for name, cls in sorted(STRATEGIES.items()) if not name.startswith(("mi", "learned"))
            for f in fields(cls) if field_type_name(f) == "int"]


@pytest.fixture(scope="module")
def sudoku_inputs():
    from tasks.sudoku.task import SudokuTask
    task = SudokuTask()
    eval_set = task.eval_set(1, 0)
    return task, task.load_model(), eval_set.tokens, eval_set.masked


@pytest.mark.parametrize("spec", ["dus:block=1099511627776", "schedule:schedule=bernoulli,steps=1000000000",
                                  "remdm:steps=1000000000000", "klass:history=100000000", "rcr:steps=5000",
                                  "dplm:steps=1297", "schedule:steps=2000000"])
def test_the_issue_s_absurd_parameters_are_refused_before_any_pass(sudoku_inputs, spec):
    task, model, tokens, masked = sudoku_inputs
    calls = []
    counting = type("Counting", (), {"__call__": lambda self, t, m: calls.append(1) or model(t, m),
                                     "value_tokens": model.value_tokens, "vocab_size": model.vocab_size})()
    with deadline(60), pytest.raises(BenchError, match="out of range|more than inputs of 81 positions can use"):
        decode(counting, tokens, masked, parse_strategy(spec), task.temperature, seed=0)
    assert calls == []


@FUZZ
@given(where=st.sampled_from(int_parameters()),
       value=st.one_of(st.integers(-3, 40), st.integers(PASSES_PER_POSITION * 81 + 1, PASSES_PER_POSITION * 81 + 3),
                       st.integers(2 ** 20 - 1, 2 ** 62)))
def test_any_int_parameter_is_a_decode_or_a_one_line_error(sudoku_inputs, where, value):
    """Fuzzed strategy specs: parsed and decoded within seconds, or refused in one line before
    decoding (never a traceback, an allocation of terabytes or a loop without end)."""
    task, model, tokens, masked = sudoku_inputs
    name, key = where
    try:
        strategy = parse_strategy(f"{name}:{key}={value}")
        with deadline(120):
            result = decode(model, tokens, masked, strategy, task.temperature, seed=0)
    except BenchError as err:
        assert len(str(err).splitlines()) == 1 and str(err)
        return
    assert int(result.passes.max()) >= 1 and value <= 2 ** 20   # what decodes is within the ranges


def test_a_step_count_a_long_input_can_use_is_kept(sudoku_inputs):
    task, model, tokens, masked = sudoku_inputs
    result = decode(model, tokens, masked, parse_strategy("remdm:steps=100"), task.temperature, seed=0)
    assert int(result.passes.max()) <= 100


@pytest.mark.parametrize("setting", ["steps=-1", "steps=0", "batch_size=0", "steps=99999999999"])
def test_a_training_number_out_of_range_is_refused_before_training(tmp_path, capsys, setting):
    out = tmp_path / "hmm_mdm.pt"
    one_line_error(capsys, ["train", "hmm_mdm", setting, "--out", out], setting.split("=")[0], "out of range")
    assert not list(tmp_path.iterdir())


# --- bench train --same-as: the file checked first, shipped files never overwritten (item 5) -----

SHIPPED_MDM = ROOT / "tasks" / "hmm" / "weights" / "hmm_mdm.pt"


def shipped_bytes():
    return SHIPPED_MDM.read_bytes(), SHIPPED_MDM.with_suffix(".log").read_bytes()


@pytest.mark.parametrize("argv,says", [
    (["--out", SHIPPED_MDM, "--same-as", SHIPPED_MDM], "is the --same-as file"),
    (["--out", SHIPPED_MDM], "is a shipped file"),
    (["--out", "{tmp}/hmm_mdm.pt", "--same-as", "{tmp}/missing.pt"], "not found"),
    (["--out", "{tmp}/hmm_mdm.pt", "--same-as", "/etc/passwd"], "/etc/passwd is corrupt or not a checkpoint"),
    (["--out", "{tmp}/hmm_mdm.pt", "--same-as", ROOT / "tasks" / "protein" / "weights" / "mi_estimator.pt"],
     "is not a checkpoint of the hmm_mdm network"),
    (["--out", "{tmp}/hmm_mdm.pt", "--same-as", SHIPPED_MDM, "n_layers=2"], "is not a checkpoint of the hmm_mdm"),
])
def test_train_same_as_is_checked_before_training(tmp_path, capsys, argv, says):
    before = shipped_bytes()
    argv = [str(a).replace("{tmp}", str(tmp_path)) for a in argv]
    with deadline(120):
        one_line_error(capsys, ["train", "hmm_mdm", "steps=1", *argv], says)
    assert shipped_bytes() == before and not list(tmp_path.iterdir())
    assert not os.path.exists("/etc/passwd.pt")


# --- --limit beyond the data, missing calibration folders (item 4) ------------------------------

def test_a_limit_beyond_the_data_says_how_many_inputs_exist(tmp_path, capsys):
    with deadline(300):
        err = one_line_error(capsys, ["run", "--tasks", "hmm", "--strategies", "sequential", "--limit", 100000,
                                      "--out", tmp_path / "out"], "--limit 100000", "holds")
    assert not (tmp_path / "out").exists() and "give --limit" in err


def test_the_antibody_limit_beyond_its_domains_does_not_hang(tmp_path, capsys):
    from conftest import needs_antibody_extra
    needs_antibody_extra()
    with deadline(300):
        one_line_error(capsys, ["run", "--tasks", "antibody", "--strategies", "sequential", "--limit", 100000,
                                "--out", tmp_path / "out"], "task antibody's data holds")


@pytest.mark.parametrize("argv,says", [
    (["calibrate", "--task", "hmm", "--budgets", "--validation", "MISSING"], "--validation MISSING: no such folder"),
    (["calibrate", "--task", "hmm", "--strategy", "eb", "--knob", "gamma", "--budget", "16", "--range", "0,1",
      "--validation", "MISSING"], "--validation is read only with --budgets"),
])
def test_calibrate_with_a_missing_validation_folder_is_one_line(tmp_path, capsys, monkeypatch, argv, says):
    monkeypatch.chdir(tmp_path)
    with deadline(60):
        one_line_error(capsys, argv, says)
    assert not list(tmp_path.iterdir())


# --- a split's folder holds only that split; explicit strategies run the seed asked for (item 6) -

@pytest.mark.parametrize("argv,says", [
    (["--preset", "validation", "--tasks", "sudoku", "--data", "tasks/sudoku/data/test_hard.csv"],
     "runs task sudoku's validation split"),
    (["--preset", "validation", "--tasks", "antibody", "--data", "test"], "runs task antibody's validation split"),
    (["--tasks", "sudoku", "--data", "tasks/sudoku/data/validation_hard.csv"], "is task sudoku's validation split"),
    (["--tasks", "antibody", "--data", "validation"], "is task antibody's validation split"),
])
def test_one_split_s_data_is_never_written_into_another_split_s_folder(tmp_path, capsys, monkeypatch, argv, says):
    monkeypatch.chdir(ROOT)
    one_line_error(capsys, ["run", *argv, "--strategies", "topk:k=8", "--limit", 2, "--out", tmp_path / "out"], says)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("task", ["sudoku", "hmm"])
def test_explicit_strategies_without_a_preset_run_the_seed_asked_for(task):
    """Both tasks' default tier runs seeds 0, 1 and 2; runs named on the command line run one."""
    from bench.presets import plan
    assert plan(None, task)[0].seeds == (0, 1, 2)
    assert plan(None, task, "remdm:steps=8")[0].seeds == (0,)
    assert plan(None, task, "remdm:steps=8", seed=5)[0].seeds == (5,)
    assert plan("paper", task, "remdm:steps=8")[0].seeds == (0, 1, 2)   # a preset named keeps its seeds


# --- commands from another working directory (item 7) -------------------------------------------

def test_plan_of_the_retrained_preset_runs_from_any_folder(tmp_path):
    """Shipped weights, helpers and data resolve from the package, not the working directory."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "bench", "plan", "--preset", "retrained", "--tasks", "hmm"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "not found" not in proc.stderr and "error" not in proc.stderr


def test_helper_paths_resolve_from_the_checkout_in_any_folder(tmp_path, monkeypatch):
    """The fast twin of the plan above (slow: tests/conftest.py SLOW): every helper file the
    retrained tier names resolves from the checkout when the working directory is elsewhere."""
    from bench.checkpoints import helper_file
    from bench.presets import sweep_of
    monkeypatch.chdir(tmp_path)
    named = {part.split("=", 1)[1] for spec in sweep_of("hmm", "retrained") for part in spec.split(",")
             if part.startswith(("estimator=", "policy="))}
    assert named and all(helper_file(path).is_file() for path in named)
    assert helper_file(tmp_path / "mine.pt") == tmp_path / "mine.pt"   # a user's own file is read where it is
