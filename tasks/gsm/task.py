"""The gsm task: grade-school word problems in GSM8K's format, answered by a text MDM.

Each input is a question (the prompt: given, never masked) and a generation region of
``GEN_LENGTH`` masked positions that the model fills with a worked solution and end-of-text
to the region's end. Scoring reads the region up to its first end-of-text and extracts the
answer as lm-evaluation-harness's gsm8k task does: ``strict`` takes the number after ``####``
(the headline), ``flexible`` the last number in the text; each compares with the reference's
number after ``####``, commas and dollar signs removed.
"""
import hashlib
from pathlib import Path

import numpy as np

from bench.core import EvalSet, Task
from bench.files import read_bytes
from bench.provenance import portable_path
from bench.registry import register_task
from bench.stats import mean_metric
from tasks.gsm.data import (
    DATA_LIMIT,
    EOT,
    N_VALUES,
    PROMPT_LENGTH,
    encode_batch,
    flexible_answer,
    generated_text,
    read_problems,
    strict_answer,
)
from tasks.gsm.generate import TEST_SET

HERE = Path(__file__).parent


@register_task
class GSMTask(Task):
    """GSM8K-format word problems (1,000 generated test problems); strict GSM8K accuracy."""
    name = "gsm"
    headline = "accuracy"
    weights_dir = HERE / "weights"
    extra_figures = ("accuracy_flexible",)
    mi_label_sizes = {"train": 4000, "heldout": 500, "ood": 500}
    mi_probe = 16   # probed positions per MI context: the answer region has 96
    in_presets = False   # not in the preset tiers until its model is trained and its cost measured (README)
    options = {"data": "GSM8K-format jsonl, {\"question\", \"answer\"} per line (default: the shipped "
                       "generated test set, tasks/gsm/data/test.jsonl)",
               "model": "checkpoint path (default: the shipped text MDM, tasks/gsm/weights/gsm_mdm.pt)"}

    def __init__(self, data=None, model=None):
        from tasks.gsm.model import DEFAULT_WEIGHTS
        self.data_path = Path(data) if data else TEST_SET
        self.model_path = Path(model) if model else DEFAULT_WEIGHTS
        self._problems = None
        self._skipped = []

    def config(self):
        return {"data": portable_path(self.data_path), "model": portable_path(self.model_path)}

    def load_model(self):
        from tasks.gsm.model import load_mdm
        return load_mdm(self.model_path)

    def problems_read(self):
        if self._problems is None:
            self._problems, self._skipped = read_problems(self.data_path)
        return self._problems

    def problems(self):
        self.problems_read()
        return self._skipped

    def eval_set(self, limit=None, seed=0):
        rows = self.problems_read()[:limit]
        tokens = encode_batch(rows, with_answers=False)
        digest = hashlib.sha256(read_bytes(self.data_path, "GSM8K-format file", DATA_LIMIT)).hexdigest()[:12]
        return EvalSet(tokens=tokens, masked=tokens == 0, data_id=digest,
                       extras={"answers": [strict_answer(r["answer"]) for r in rows],
                               "lines": [r["line"] for r in rows]})

    def data_summary(self):
        return f"question given (prompt of {PROMPT_LENGTH} positions), answer region scored up to its first end-of-text"

    def records(self, tokens, passes, rows, eval_set):
        out = []
        for row_tokens, n_passes, row in zip(tokens, passes.tolist(), rows.tolist()):
            region = row_tokens[PROMPT_LENGTH:]
            text = generated_text(region)
            reference = eval_set.extras["answers"][row]
            strict, flexible = strict_answer(text), flexible_answer(text)
            out.append({"index": row, "line": eval_set.extras["lines"][row], "passes": n_passes,
                        "correct": strict == reference, "correct_flexible": flexible == reference,
                        "answer": reference, "strict": strict, "flexible": flexible,
                        "length": len(text), "ended": bool((region == EOT).any()), "output": text})
        return out

    def summarize(self, records):
        def column(key):
            return np.array([r[key] for r in records], dtype=float)

        return [
            mean_metric("accuracy", column("correct"), True,
                        "GSM8K accuracy, strict (the number after ####)", field="correct"),
            mean_metric("accuracy_flexible", column("correct_flexible"), True,
                        "GSM8K accuracy, flexible (the last number in the answer)", field="correct_flexible"),
            mean_metric("passes", column("passes"), False, "forward passes per problem", field="passes"),
        ]

    def value_frequencies(self):
        """[V] each value's frequency in the answer regions of 2,000 training problems (seed
        'background'), end-of-text padding included (PC-Sampler's background, strategies/schedules)."""
        from tasks.gsm.generate import problems
        regions = encode_batch(problems("train", 2000, "background"), with_answers=True)[:, PROMPT_LENGTH:]
        counts = np.bincount((regions - EOT).numpy().ravel(), minlength=N_VALUES)
        return (counts / counts.sum()).tolist()

    def mi_contexts(self, model, split, n, generator):
        from tasks.gsm.hooks import mi_contexts
        return mi_contexts(model, split, n, generator)

    def train_model(self, settings, out):
        from tasks.gsm.hooks import train_model
        train_model(settings, out)
