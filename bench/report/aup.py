"""AUP per strategy family: d3LLM's accuracy under parallelism (``aup_<task>.md`` and ``.csv``).

The definition is d3LLM's (Qian et al., "d3LLM: Ultra-Fast Diffusion LLM using Pseudo-Trajectory
Distillation", ICML 2026; blog https://hao-ai-lab.github.io/blogs/text-diffusion/, section "AUP";
reference code ``get_aup`` in d3LLM_Code/aup_utils.py of https://huggingface.co/spaces/d3LLM/dLLM_Leaderboard).
For a curve of (parallelism rho_i, accuracy y_i in percent) with rho_1 < ... < rho_m, points below
y_min = y_1 - 5 (five points under the accuracy at the least parallel point) are left out, and

    AUP = rho_1 y_1 + 1/2 sum_{i=2..m} (rho_i - rho_{i-1}) (y_i W(y_i) + y_{i-1} W(y_{i-1}))
    W(y) = min(exp(-alpha (1 - y / y_max)), 1),  alpha = 3,

y_max the highest accuracy any run reaches on the task. (The reference code also asserts that the
last point lies within 5 points of the first; we keep its filter and drop the assert, so a family
that degrades further is scored on the points above y_min, as the blog's text defines.)

Here: parallelism is tokens per forward pass (d3LLM's TPF), the masked positions of an input over
the forward passes it took (decoding passes plus any spent besides, e.g. an oracle's probes), the
ratio of the means over inputs. The masked positions per input are the reference run's mean
passes (``bench.report.sweeps.reference_run``): the task's declared reference (on every task
that declares one, a rule that reveals one position a pass) does; a task declaring none takes the
report's rule (the most expensive run of the line with the most passes), which the file names.
Accuracy is the headline in percent, so AUP is defined only where the headline is an accuracy
(higher is better, within [0, 1]); other tasks get no file. A family's curve is its Pareto
frontier, the runs the summary figure joins (``bench.report.figures.family_front``); a family
with fewer than two runs on it has no curve, and its row says so instead of giving an area.
"""
import math
from dataclasses import dataclass
from pathlib import Path

from bench.report.figures import family_front, split_runs
from bench.report.render import csv_text, markdown
from bench.report.sweeps import reference_run
from bench.results.summary import forward_passes, metric_of
from bench.settings import verdicts_for

ALPHA = 3.0          # d3LLM's penalty factor
Y_MIN_OFFSET = 5.0   # accuracy points below the least parallel point's that still count


def aup_weight(y, y_max, alpha=ALPHA):
    """d3LLM's quality weight W(y) = min(exp(-alpha (1 - y / y_max)), 1)."""
    return min(math.exp(-alpha * (1 - y / y_max)), 1.0)


def aup(points, y_max, alpha=ALPHA, offset=Y_MIN_OFFSET):
    """(AUP, the points kept) of (parallelism, accuracy in percent) ``points``: sorted by
    parallelism, those below the first point's accuracy minus ``offset`` left out, then d3LLM's
    first rectangle plus the weighted trapezoids (module docstring)."""
    ordered = sorted(points, key=lambda point: point[0])
    y_min = ordered[0][1] - offset
    kept = [(rho, y) for rho, y in ordered if y >= y_min]
    area = kept[0][0] * kept[0][1]
    for (rho0, y0), (rho1, y1) in zip(kept, kept[1:]):
        area += 0.5 * (rho1 - rho0) * (y1 * aup_weight(y1, y_max, alpha) + y0 * aup_weight(y0, y_max, alpha))
    return area, kept


def is_accuracy(runs, headline):
    """Whether ``headline`` is an accuracy on every run: higher is better, within [0, 1]."""
    metrics = [metric_of(r, headline) for r in runs]
    return bool(metrics) and all(m["higher_is_better"] and 0 <= m["value"] <= 1 for m in metrics)


@dataclass(frozen=True)
class FamilyAUP:
    """One family's row: its curve's runs as (label, parallelism, accuracy %) by parallelism, its
    AUP (None: fewer than two runs on its curve) and the points the y_min filter kept."""
    family: str
    points: tuple
    value: float | None
    kept: tuple

    def note(self):
        if self.value is None:
            return "single run: no curve, no area" if len(self.points) == 1 else "no run"
        dropped = len(self.points) - len(self.kept)
        return f"{dropped} below y_min left out" if dropped else ""


def family_aup(family, runs, headline, masked, y_max):
    """The FamilyAUP of ``runs`` (one family) on its frontier."""
    front = family_front(runs, headline)
    points = tuple((r["label"], masked / forward_passes(r), 100 * metric_of(r, headline)["value"]) for r in front)
    if len(points) < 2:
        return FamilyAUP(family, points, None, ())
    value, kept = aup([(rho, y) for _, rho, y in points], y_max)
    return FamilyAUP(family, tuple(sorted(points, key=lambda p: p[1])), value, tuple(kept))


def task_aup(results, task):
    """(the FamilyAUP rows, y_max, masked positions per input, the reference run) of ``results``
    (one task's comparison group), or None where its headline is no accuracy or it has no reference."""
    headline = results[0]["headline"]
    runs = split_runs(results, task, headline).exact
    verdicts = verdicts_for(task)
    reference = reference_run(runs, verdicts.reference if verdicts else None)
    if reference is None or not is_accuracy(runs, headline):
        return None
    masked = metric_of(reference, "passes")["value"]
    y_max = 100 * max(metric_of(r, headline)["value"] for r in runs)
    families = sorted({r["strategy"] for r in runs})
    rows = [family_aup(f, [r for r in runs if r["strategy"] == f], headline, masked, y_max) for f in families]
    return sorted(rows, key=lambda row: (row.value is None, -(row.value or 0.0))), y_max, masked, reference


def curve_text(row):
    """'`a` 1.02 / 81.0%; `b` 3.40 / 79.5% (left out)': each run on the curve, parallelism / accuracy."""
    kept = set(row.kept)
    return "; ".join(f"`{label}` {rho:.2f} / {y:.1f}%" + ("" if (rho, y) in kept or row.value is None else
                                                          " (left out)") for label, rho, y in row.points)


def range_of(row):
    rhos = [rho for rho, _ in row.kept] or [rho for _, rho, _ in row.points]
    return (min(rhos), max(rhos)) if rhos else (None, None)


def aup_markdown(task, rows, y_max, masked, reference):
    """The note on how the rows were made, then one row per family."""
    note = (f"Generated by `bench report`: d3LLM's AUP (accuracy under parallelism; alpha {ALPHA:g}, points more "
            f"than {Y_MIN_OFFSET:g} accuracy points below a curve's least parallel one left out) per strategy "
            f"family of {task}, over the family's frontier. Accuracy: `{reference['headline']}` in percent, "
            f"y_max {y_max:.1f}%. Parallelism: tokens per forward pass, {masked:.2f} masked positions per input "
            f"(the mean passes of `{reference['label']}`, which reveals one a pass) over the run's mean forward "
            f"passes. Definitions and sources: docs/report.md, AUP, ARness and error rates.")
    header = ["family", "AUP", "parallelism range (tokens per pass)", "runs on its curve (parallelism / accuracy)",
              "note"]
    cells = []
    for row in rows:
        low, high = range_of(row)
        cells.append([row.family, "-" if row.value is None else f"{row.value:.1f}",
                      "-" if low is None else f"{low:.2f}-{high:.2f}", curve_text(row), row.note() or "-"])
    return note + "\n\n" + markdown(header, cells) + "\n"


def aup_csv_rows(rows, y_max, masked):
    """Header and plain-number rows of the same table."""
    header = ["family", "aup", "runs_on_curve", "points_kept", "tpf_low", "tpf_high", "y_max_percent",
              "masked_positions", "runs"]
    out = []
    for row in rows:
        low, high = range_of(row)
        runs = ";".join(f"{label}@{rho:.6g}/{y:.6g}" for label, rho, y in row.points)
        out.append([row.family, row.value, len(row.points), len(row.kept) if row.value is not None else None,
                    low, high, y_max, masked, runs])
    return header, out


def write_aup(results, task, out_dir):
    """aup_<task>.md and .csv (the paths), or [] where the task's headline is no accuracy."""
    made = task_aup(results, task)
    if made is None:
        return []
    rows, y_max, masked, reference = made
    paths = [Path(out_dir) / f"aup_{task}.md", Path(out_dir) / f"aup_{task}.csv"]
    paths[0].write_text(aup_markdown(task, rows, y_max, masked, reference))
    paths[1].write_text(csv_text(*aup_csv_rows(rows, y_max, masked)))
    return paths
