"""`bench mi curve`: the MI estimator's learning curve (strategies/mi/curve.py) on the exact task's
small label sets, and `bench train mi` unchanged by sharing its training code with the curve."""
import functools
import json
import math

import numpy as np
import pytest
import torch

from conftest import run_cli

SIZES = {"train": 24, "heldout": 16, "ood": 16}   # the exact tasks' label sets, made small
EPOCHS = 3


def random_contexts(task, model, split, n, generator):
    """Samples of the chain under random masks: the tasks' own contexts without their decoding
    runs (most of a small set's time)."""
    from strategies.mi.contexts import random_masks
    from tasks.hmm import chain
    tokens = chain.sample(task.hmm, n, generator)[0] + 1
    return tokens, random_masks(torch.ones_like(tokens, dtype=torch.bool), generator)


@pytest.fixture(scope="module")
def small_sets(tmp_path_factory):
    """A cache with hmm's and hmm_mdm's train (24 contexts) and heldout (16) label sets, those sizes
    being the tasks' defaults while the module runs (hmm_mdm's load draws from torch's generator;
    4 probed positions a context, not 16, for time)."""
    from bench.registry import make_task
    from strategies.mi.labels import make_labels
    from tasks.hmm.task import HMMMDMTask, HMMTask
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("UNMASK_BENCH_CACHE", str(tmp_path_factory.mktemp("cache")))
        patch.setattr(HMMTask, "mi_label_sizes", SIZES)   # hmm_mdm inherits these three
        patch.setattr(HMMTask, "mi_contexts", random_contexts)
        patch.setattr(HMMMDMTask, "mi_probe", 4)
        for name in ("hmm", "hmm_mdm"):
            task = make_task(name)
            model = task.load_model()
            for split in ("train", "heldout"):
                make_labels(task, model, split)
        yield


@pytest.fixture
def few_epochs(monkeypatch):
    """MITrainConfig's default of 40 epochs at 3, for `bench train mi` and `bench mi curve` alike
    (both build their config when they run), so a test's dozen trainings take seconds."""
    import strategies.mi.train
    monkeypatch.setattr(strategies.mi.train, "MITrainConfig",
                        functools.partial(strategies.mi.train.MITrainConfig, epochs=EPOCHS))


def test_label_sets_record_their_probing_time(small_sets):
    from bench.registry import make_task
    from strategies.mi.curve import labelling_cost
    from strategies.mi.labels import label_meta
    task = make_task("hmm_mdm")
    _, meta = label_meta(task, task.load_model().checkpoint_id, "train")
    assert meta["timed_contexts"] == SIZES["train"] and meta["probe_seconds"] > 0
    # both are stored rounded (4 and 2 decimals): equal within that rounding
    assert math.isclose(meta["seconds_per_context"], meta["probe_seconds"] / SIZES["train"],
                        abs_tol=1e-4 + 0.005 / SIZES["train"])
    assert labelling_cost(meta)["source"] == "probing time per chunk"
    older = {k: v for k, v in meta.items() if k not in ("seconds_per_context", "probe_seconds", "timed_contexts")}
    assert labelling_cost(older)["source"].startswith("the set's last labelling run")
    assert labelling_cost({"n": 4}) is None


@pytest.mark.parametrize("sizes, message", [
    ("8,30,40", "--sizes 30,40 exceed the train label set's 24 contexts (hmm-exact-hmm-"),
    ("1,8", "--sizes takes whole numbers of at least 2"),
    ("8,x", "--sizes takes comma-separated whole numbers"),
])
def test_sizes_out_of_range_are_a_one_line_error(small_sets, tmp_path, sizes, message):
    done = run_cli("mi", "curve", "--task", "hmm", "--sizes", sizes, "--out", tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert not list(tmp_path.iterdir())


def test_the_curve_writes_json_markdown_and_a_figure(small_sets, few_epochs, tmp_path):
    from PIL import Image

    from bench.registry import make_task
    from bench.report.canvas import caption_of, layout_problems
    from strategies.mi.curve import curve_figure, subsets
    from strategies.mi.exact import label_target
    from strategies.mi.labels import load_labels
    done = run_cli("mi", "curve", "--task", "hmm", "--sizes", "16,4,8", "--seeds", "0,1", "--out", tmp_path)
    assert done.returncode == 0, done.stderr
    payload = json.loads((tmp_path / "mi_curve_hmm.json").read_text())
    task = make_task("hmm")
    assert payload["model_id"] == task.load_model().checkpoint_id and payload["provenance"]["commit"]
    assert payload["sizes"] == [4, 8, 16] and payload["seeds"] == [0, 1]
    assert payload["label_sets"] == {"train": f"hmm-{payload['model_id']}-train-n24-seed0",
                                     "heldout": f"hmm-{payload['model_id']}-heldout-n16-seed0"}
    _, masked, mi = load_labels(task, payload["model_id"], "train")
    target, picks = label_target(mi), subsets(SIZES["train"], payload["sizes"])
    for point in payload["points"]:
        pick = picks[point["contexts"]]
        pearson = [f["pearson"] for f in point["fits"]]
        assert [f["seed"] for f in point["fits"]] == [0, 1] and all(-1 <= p <= 1 for p in pearson)
        assert math.isclose(point["pearson_mean"], np.mean(pearson)) and all(f["seconds"] > 0 for f in point["fits"])
        both = masked[pick, :, None] & masked[pick, None, :] & ~torch.eye(masked.shape[1], dtype=torch.bool)
        assert point["pairs"] == int((both & ~target[pick].isnan()).sum())   # the exact chain labels every pair
        assert point["rows"] == int(masked[pick].sum()) and point["val_contexts"] == 1
    assert payload["labelling"]["source"] == "probing time per chunk" and payload["train_config"]["epochs"] == EPOCHS
    markdown = (tmp_path / "mi_curve_hmm.md").read_text()
    assert "| 8 | " in markdown and "Pearson 0.75" in markdown and payload["levels"][0]["statement"] in markdown
    png = tmp_path / "mi_curve_hmm.png"
    assert Image.open(png).size[0] > 300 and "0.75 and 0.85 lines" in caption_of(png)
    assert layout_problems(curve_figure(payload)) == []


def test_sizes_take_nested_subsets_of_the_whole_set_in_its_order():
    """A label set keeps its decoding-run states before its random masks: a subset must draw from both."""
    from strategies.mi.curve import subsets
    picks = subsets(160, [20, 40, 160])
    assert [len(p) for p in picks.values()] == [20, 40, 160] and torch.equal(picks[160], torch.arange(160))
    assert set(picks[20].tolist()) <= set(picks[40].tolist()) and torch.equal(picks[40], picks[40].sort().values)
    assert (picks[20] < 80).any() and (picks[20] >= 80).any()


def rising(intercept, slope, sizes=(20, 40, 80, 160)):
    return [intercept + slope * math.log(k) for k in sizes]


def test_the_fit_states_where_a_rising_curve_crosses_and_that_a_flat_one_does_not():
    from strategies.mi.curve import log_fit, reach
    sizes = [20, 40, 80, 160]
    fit = log_fit(sizes, rising(-0.1, 0.1))
    assert np.allclose(fit, (-0.1, 0.1))
    cost = {"seconds_per_context": 2.0, "source": "probing time per chunk", "device": "cpu", "threads": 1}
    found = reach(fit, 0.75, sizes, 3.0, cost)
    assert math.isclose(found["contexts"], math.exp(8.5)) and found["extrapolated"]   # 4,915 contexts
    assert math.isclose(found["rows"], 3 * math.exp(8.5)) and math.isclose(found["label_seconds"], 2 * math.exp(8.5))
    assert ("Pearson 0.75 at about 4,915 contexts: an extrapolation of a log-linear fit over the measured range "
            "(20-160 contexts), not a measurement. That is about 14,744 probe-labelled rows, about 2.7 hours of "
            "labelling") in found["statement"]
    inside = reach(log_fit(sizes, rising(0.3, 0.1)), 0.75, sizes, 3.0, None)
    assert math.isclose(inside["contexts"], math.exp(4.5)) and not inside["extrapolated"]
    assert "inside the measured range" in inside["statement"] and "recorded no labelling time" in inside["statement"]
    for means in ([0.21] * 4, rising(0.5, -0.05)):
        flat = reach(log_fit(sizes, means), 0.75, sizes, 3.0, cost)
        assert flat["contexts"] is None
        assert flat["statement"].startswith("Pearson 0.75 not reached: the fit is flat/decreasing")
    assert log_fit([20], [0.3]) is None and reach(None, 0.75, [20], 3.0, None)["statement"].startswith("No fit")


def test_bench_train_mi_is_the_pre_refactor_training_and_the_curve_s_full_size_point(small_sets, few_epochs,
                                                                                    tmp_path, monkeypatch):
    """`bench train mi`'s weights equal (1) the training sequence train_estimator ran before the
    curve shared its code (written out here) and (2) the curve's fit at the train set's full size
    with the same seed; hmm_mdm's load draws from torch's generator, so both must start after it."""
    import strategies.mi.curve as curve_module
    from bench.registry import make_task
    from strategies.mi.estimator import EstimatorConfig, MIEstimator, load_estimator
    from strategies.mi.exact import label_target
    from strategies.mi.labels import load_labels
    from strategies.mi.train import MITrainConfig, fit, model_features
    fits, fit_point = {}, curve_module.fit_point

    def recording(train, heldout, pick, cfg, state):
        result, network = fit_point(train, heldout, pick, cfg, state)
        fits[len(pick), cfg.seed] = network
        return result, network

    monkeypatch.setattr(curve_module, "fit_point", recording)
    assert run_cli("mi", "curve", "--task", "hmm_mdm", "--sizes", "8,24", "--seeds", "0,1", "--out",
                   tmp_path).returncode == 0
    task = make_task("hmm_mdm")
    for seed in (0, 1):
        done = run_cli("train", "mi", "--task", "hmm_mdm", f"seed={seed}", "--out", tmp_path / f"mi_{seed}.pt")
        assert done.returncode == 0, done.stderr
        trained = load_estimator(tmp_path / f"mi_{seed}.pt", task.load_model().checkpoint_id, task.name).state_dict()
        torch.manual_seed(seed)   # the sequence as train_estimator ran it before the refactor
        model = task.load_model()
        tokens, masked, mi = load_labels(task, model.checkpoint_id, "train")
        hidden, probs = model_features(model, tokens, masked, "cpu")
        target = label_target(mi, "both").clamp_min(0)
        cfg = MITrainConfig(seed=seed, device="cpu", epochs=EPOCHS)
        network = MIEstimator(EstimatorConfig(d_hidden=hidden.shape[-1], n_values=probs.shape[-1]))
        state, _ = fit(network, (hidden[2:], probs[2:], masked[2:], target[2:]),
                       (hidden[:2], probs[:2], masked[:2], target[:2]), cfg)
        for reference in (state, fits[24, seed].state_dict()):
            assert reference.keys() == trained.keys()
            assert all(torch.equal(reference[k], trained[k]) for k in trained)
    assert not torch.equal(fits[8, 0].state_dict()["head_weight"], fits[24, 0].state_dict()["head_weight"])
