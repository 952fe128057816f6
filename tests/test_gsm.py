"""The gsm task: the generator is deterministic and its splits disjoint, GSM8K's answer
extraction (strict and flexible) on examples, a malformed --data line is one line and exit 2,
and a tiny model runs end to end with prompts kept and scoring stopped at end-of-text."""
import json

import pytest
import torch

from bench.registry import load_plugins
from conftest import run_cli
from tasks.gsm import generate
from tasks.gsm.data import (
    EOT,
    FIRST_CHAR,
    PROMPT_LENGTH,
    encode,
    flexible_answer,
    generated_text,
    read_problems,
    strict_answer,
)
from tasks.gsm.model import GSMModelConfig, GSMTransformer, save_mdm

load_plugins()


def test_the_generator_is_deterministic_and_the_shipped_sets_are_its_output():
    assert generate.problems("test", 30, 2) == generate.problems("test", 30, 2)
    assert generate.problems("train", 30, "0-5") == generate.problems("train", 30, "0-5")
    assert generate.problems("train", 30, "0-5") != generate.problems("train", 30, "0-6")
    for split, path in (("validation", generate.VALIDATION_SET), ("test", generate.TEST_SET)):
        shipped = [json.loads(line) for line in path.read_text().splitlines()]
        assert len(shipped) == generate.SIZES[split]
        assert shipped == generate.problems(split, generate.SIZES[split], generate.SET_SEEDS[split])


def test_the_splits_are_disjoint_by_signature_and_test_is_never_trained_on():
    test = generate.signed_problems("test", 1000, generate.SET_SEEDS["test"])
    validation = generate.signed_problems("validation", 500, generate.SET_SEEDS["validation"])
    assert len({s for s, _ in test}) == 1000 and len({s for s, _ in validation}) == 500   # distinct problems
    assert not {s for s, _ in test} & {s for s, _ in validation}
    train = generate.signed_problems("train", 3000, "0-0")
    assert all(generate.split_of(*s) == "train" for s, _ in train)
    assert not {s for s, _ in train} & {s for s, _ in test}
    assert len({s[0] for s, _ in test}) == len(generate.TEMPLATES) >= 40   # every template is tested


def test_every_answer_is_gsm8k_shaped_and_its_arithmetic_right():
    for problem in generate.problems("test", 300, 2):
        *steps, final = problem["answer"].split("\n")
        assert 2 <= len(steps) <= 4 and final.startswith("#### ")
        for step in steps:
            expression, value = step.split("=<<")[1].rstrip("0123456789").rstrip(">").split("=")
            assert eval(expression) == int(value)   # noqa: S307 (digits and + - * / only)
        assert steps[-1].endswith(final[5:])


@pytest.mark.parametrize("text,strict,flexible", [
    ("3*4=<<3*4=12>>12\n12-2=<<12-2=10>>10\n#### 10", "10", "10"),
    ("She pays $1,250.\n#### 1,250", "1250", "1250"),
    ("#### -7", "-7", "-7"),
    ("The answer is 42.", None, "42"),
    ("#### 5 apples, not 6", "5", "6"),
    ("no number here", None, None),
    ("#### $5", None, "5"),   # the harness's strict pattern takes no dollar sign
])
def test_gsm8k_answer_extraction(text, strict, flexible):
    assert strict_answer(text) == strict
    assert flexible_answer(text) == flexible


def test_a_malformed_data_line_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "gsm.jsonl"
    good = json.dumps({"question": "Ana has 2 pens. How many?", "answer": "#### 2"})
    path.write_text(good + "\n{\"question\": \"x\"\n" + good + "\n")
    proc = run_cli("run", "--tasks", "gsm", "--data", path, "--strategies", "sequential", "--limit", 1,
                   "--out", tmp_path / "out")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "line 2 is not JSON" in lines[0], proc.stderr
    path.write_text(good + "\n" + json.dumps({"question": "x", "answer": 3}) + "\n")
    with pytest.raises(Exception, match="line 2 lacks a string question and answer"):
        read_problems(path)


def test_problems_the_task_cannot_hold_are_named_and_skipped(tmp_path):
    path = tmp_path / "gsm.jsonl"
    rows = [{"question": "Ana has 2 pens. How many?", "answer": "#### 2"},
            {"question": "Ana has 2 pens\u00e9?", "answer": "#### 2"},
            {"question": "x" * (PROMPT_LENGTH + 1), "answer": "#### 2"},
            {"question": "How many?", "answer": "2"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    problems, skipped = read_problems(path)
    assert [p["line"] for p in problems] == [1]
    assert [s.split(":")[0] for s in skipped] == ["gsm.jsonl line 2", "gsm.jsonl line 3", "gsm.jsonl line 4"]


def test_the_answer_region_reads_up_to_the_first_end_of_text():
    row = encode("How many?", "#### 12")[PROMPT_LENGTH:]
    assert generated_text(row) == "#### 12" and row[7] == EOT and set(row[7:]) == {EOT}
    row[8] = FIRST_CHAR   # a character after the end-of-text is not read
    assert generated_text(row) == "#### 12"


def test_a_tiny_model_runs_every_strategy_without_helpers_end_to_end_with_the_prompt_kept(tmp_path):
    """Every registered strategy that needs no trained helper (mi_oracle aside: it probes the
    model 86 passes per probed position; pc_sampler reads the task's value frequencies) decodes
    through `bench run`, and a model of another length is refused in one line."""
    from bench.registry import STRATEGIES
    torch.manual_seed(0)
    network = GSMTransformer(GSMModelConfig(n_layers=1, d_model=24, n_heads=2, d_ff=48))
    model_path = tmp_path / "tiny.pt"
    save_mdm(model_path, network, {"test": True})
    data = tmp_path / "gsm.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in generate.problems("test", 3, 2)))
    helpers = ("learned", "mi", "mi_eb")   # they read networks trained on the model
    others = [n for n in sorted(STRATEGIES) if n not in helpers + ("sequential", "topk", "mi_oracle")]
    specs = ["sequential", "topk:k=4"] + others
    proc = run_cli("run", "--tasks", "gsm", "--data", data, "--model", model_path,
                   "--strategies", ",".join(specs), "--limit", 2, "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    summaries = [json.loads(p.read_text()) for p in (tmp_path / "out" / "gsm").glob("*[0-9a-f].json")]
    assert len(summaries) == len(specs) and all(s["n_samples"] == 2 for s in summaries)
    passes = {s["strategy"]: next(m["value"] for m in s["metrics"] if m["name"] == "passes") for s in summaries}
    # one pass per position of the generation region only: the prompt is given, never decoded
    assert (passes["sequential"], passes["topk"]) == (generate.GEN_LENGTH, generate.GEN_LENGTH / 4)
    longer = GSMTransformer(GSMModelConfig(length=generate.PROMPT_LENGTH + generate.GEN_LENGTH + 8, n_layers=1,
                                           d_model=24, n_heads=2, d_ff=48))
    save_mdm(model_path, longer, {"test": True})
    proc = run_cli("run", "--tasks", "gsm", "--data", data, "--model", model_path, "--strategies", "sequential",
                   "--limit", 1, "--out", tmp_path / "out2")
    assert proc.returncode == 2 and "was trained on 232 positions" in proc.stderr.strip().splitlines()[-1]


def test_the_task_is_in_no_preset_tier_until_its_model_is_ready_but_runs_by_name():
    from bench.presets import PRESETS, plan, preset_tasks
    assert all("gsm" not in preset_tasks(PRESETS[tier]) for tier in ("quick", "default", "paper", "ci"))
    (gsm,) = plan("quick", tasks="gsm", strategies="sequential,topk:k=4", limit=20)
    assert (gsm.task, gsm.specs, gsm.limit) == ("gsm", ["sequential", "topk:k=4"], 20)


def test_mi_contexts_keep_the_question_given_and_mask_only_the_answer_region():
    from tasks.gsm.model import GSMMDM
    from tasks.gsm.task import GSMTask
    torch.manual_seed(0)
    model = GSMMDM(GSMTransformer(GSMModelConfig(n_layers=1, d_model=24, n_heads=2, d_ff=48)), "tiny")
    for split in ("train", "heldout", "ood"):
        tokens, masked = GSMTask().mi_contexts(model, split, 16, torch.Generator().manual_seed(3))
        assert tokens.shape == masked.shape == (16, PROMPT_LENGTH + generate.GEN_LENGTH)
        assert not masked[:, :PROMPT_LENGTH].any() and masked.any(1).all()
        assert (tokens[:, :PROMPT_LENGTH] > 0).all()   # the question (or its padding), never a mask id


def test_training_checkpoints_and_resumes_and_refuses_another_models_state(tmp_path):
    from bench.errors import BenchError
    from tasks.gsm.train import TrainConfig, resume_path, train
    tiny, out = GSMModelConfig(n_layers=1, d_model=24, n_heads=2, d_ff=48), tmp_path / "m.pt"
    train(tiny, TrainConfig(steps=2, eval_every=0, checkpoint_minutes=0), out)
    assert torch.load(out, weights_only=True)["meta"]["step"] == 2 and resume_path(out).is_file()
    train(tiny, TrainConfig(steps=3, eval_every=0, checkpoint_minutes=0), out)   # resumes at step 2
    assert torch.load(resume_path(out), weights_only=True)["step"] == 3
    with pytest.raises(BenchError, match="holds the state of another model"):
        train(GSMModelConfig(n_layers=2, d_model=24, n_heads=2, d_ff=48), TrainConfig(steps=4, eval_every=0), out)
