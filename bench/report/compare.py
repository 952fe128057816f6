"""`bench compare BASE NEW`: pair runs, per-metric deltas and marks, and the regression gate."""
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.errors import BenchError
from bench.paired import better_sign, paired_difference, per_input, statistic
from bench.results import SCHEMA_VERSION, Store, check_records, load_json, records_path
from bench.results.identity import SETTINGS, setting, strategy_key
from bench.results.store import finished_at

EXIT_OK, EXIT_REGRESSION, EXIT_NOTHING_COMPARABLE = 0, 1, 3
# passes:ci: a `worse` mark on passes (the paired test and the practical tolerance agree it is
# beyond float noise) fails even when it is within 5%.
DEFAULT_FAIL_ON = "passes:+5%,passes:ci,headline:ci"
# The practical tolerance (docs/ci-gate.md): a difference no larger than this is float noise, never
# better or worse. Records round floats to 6 decimals and another BLAS moves a sum of float32
# log-probabilities in its last digits; a count (passes, boards) moves by 1/n >= 1e-3 per input.
ABS_TOLERANCE, REL_TOLERANCE = 1e-6, 1e-6
RUN_MARKS = ("missing", "new", "not comparable")
METRIC_MARKS = ("within noise", "better", "worse", "missing", "new")
FAIL_ON_HELP = f"""Compare two sets of results (the CI regression gate).

BASE and NEW are result folders or single result .json files. Runs are paired by task and
strategy spec (every parameter resolved); a pair whose model, data, seed, limit, temperature,
device kind (cpu, cuda), dtype or schema version differ is 'not comparable' (batch size, shards
and executor do not matter). For each metric the table shows both values with their 95% CIs,
the delta and a mark. Paired runs on the same inputs whose metric can be recomputed from the
per-input records are judged by a paired test of NEW - BASE whose CI and p come from one procedure
(0/1 metrics: Tango's score interval and test, McNemar's at 0; others: the paired bootstrap),
shown in the note; others by their marginal CIs:
  better / worse   the difference is beyond the metric's practical tolerance (its declared
                   'tolerance', else max(1e-6, 1e-6 x its scale)) and, paired: the CI of the
                   difference excludes 0; else: the CIs do not overlap (direction: the file's
                   higher_is_better)
  within noise     otherwise
  missing / new    in BASE only / in NEW only
  not comparable   different model, data, seed, limit, temperature, device, dtype or schema
A baseline run that cannot be compared (another schema version, no metrics, a metric without
value, ci_low, ci_high or higher_is_better, records that do not match its summary) and a metric
whose direction changed are errors (exit 2) naming the file.

--fail-on METRIC:LIMIT,... sets how much each metric may get worse. Which way is worse comes
from the result file, never from the name or the sign, so a sign is optional and ignored:
  passes:+5%            fail when worse by more than 5% of BASE's value (relative)
  exact_accuracy:0.02   fail when worse by more than 0.02 in the metric's units (absolute)
  composition_jsd:ci    fail when marked worse
A limit below the metric's practical tolerance is raised to it; two limits on one metric both
apply. METRIC 'headline' stands for each run's headline metric. Default: {DEFAULT_FAIL_ON}.

A BASE run that NEW lacks ('missing') is a regression unless --allow-missing TASK/RUN names it
(RUN: its label or strategy spec as the table shows it). Every file under NEW must be readable,
and every summary's records must be that run's (their header names the run), on either side.

Exit status: 0 no regression, 1 a regression (beyond a limit, or a missing run), 2 bad
arguments or an unreadable file on either side, 3 nothing comparable found."""


@dataclass(frozen=True)
class Limit:
    """An allowed worsening: ``kind`` is 'abs' (metric units), 'rel' (percent of BASE) or 'ci'."""
    metric: str
    kind: str
    amount: float = 0.0

    def __str__(self):
        return {"abs": f"{self.amount:g}", "rel": f"{self.amount:g}%", "ci": "ci"}[self.kind]


@dataclass
class Row:
    """One line of the comparison: a metric of a pair, or a whole run (metric None)."""
    task: str
    run: str
    metric: str | None
    base: dict | None
    new: dict | None
    mark: str
    note: str = ""
    regression: bool = False


def parse_fail_on(text):
    """'passes:+5%,exact_accuracy:-0.02,headline:ci' -> [Limit, ...]; BenchError when malformed."""
    limits = []
    for piece in filter(None, (p.strip() for p in text.split(","))):
        name, colon, value = (part.strip() for part in piece.partition(":"))
        if value.lower() == "ci" and name:
            limits.append(Limit(name, "ci"))
            continue
        found = re.fullmatch(r"[+-]?(\d+(?:\.\d*)?|\.\d+)(%?)", value)
        if not (name and colon and found):
            raise BenchError(f"--fail-on {piece!r}: expected METRIC:LIMIT, e.g. passes:+5%, "
                             "exact_accuracy:0.02 or composition_jsd:ci")
        limits.append(Limit(name, "rel" if found.group(2) else "abs", float(found.group(1))))
    if not limits:
        raise BenchError("--fail-on is empty; give METRIC:LIMIT,... e.g. passes:+5%")
    return limits


def is_result(data):
    return (isinstance(data, dict) and "schema_version" in data and isinstance(data.get("task"), str)
            and isinstance(data.get("config"), dict) and isinstance(data["config"].get("strategy_spec"), str))


def is_number(value):
    """A finite JSON number (true and false are not numbers here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def metric_problem(metric):
    """Why one metric of a summary cannot be compared (a phrase naming the field), or None."""
    if not isinstance(metric, dict) or not isinstance(metric.get("name"), str):
        return "has a metric without a name"
    name = metric["name"]
    if not isinstance(metric.get("higher_is_better"), bool):
        return f"has metric {name!r} without higher_is_better (true or false)"
    for field in ("value", "ci_low", "ci_high"):
        if not is_number(metric.get(field)):
            return f"has metric {name!r} with {field} {metric.get(field)!r}, not a number"
    tolerance = metric.get("tolerance")
    if tolerance is not None and not (is_number(tolerance) and tolerance >= 0):
        return f"has metric {name!r} with tolerance {tolerance!r}; a declared tolerance is a number >= 0"
    recipe = metric.get("per_input")
    if recipe is not None and not recipe_is_complete(recipe):
        return f"has metric {name!r} with a per_input recipe this code cannot recompute"
    return None


def recipe_is_complete(recipe):
    """Whether a per_input recipe names a known statistic, its fields and its fixed arguments."""
    if not (isinstance(recipe, dict) and isinstance(recipe.get("statistic"), str)):
        return False
    registered = statistic(recipe["statistic"])
    fields = recipe.get("fields")
    return (registered is not None and isinstance(fields, list) and len(fields) == registered.fields
            and all(isinstance(f, str) for f in fields) and all(k in recipe for k in registered.arguments))


def config_problem(data):
    """Why a summary's schema version, label or settings cannot be compared (a phrase), or None.
    Settings must be numbers or text: they are compared and printed."""
    if not isinstance(data["schema_version"], (str, int, float)):
        return f"has schema version {data['schema_version']!r}, not a number"
    odd = [k for k in SETTINGS if not isinstance(data["config"].get(k), (str, int, float, type(None)))]
    if odd:
        return f"has config {odd[0]} {data['config'][odd[0]]!r}, not a number or text"
    if not isinstance(data.get("label", ""), str):
        return "has a label that is not text"
    return None


def run_problem(data, role):
    """Why a run summary cannot be compared (a phrase), or None. A baseline must be of this code's
    schema version: a baseline of another cannot pass the gate by being 'not comparable'."""
    if not is_result(data):
        return "is not a result summary (no schema_version, task and config with a strategy_spec)"
    version = data["schema_version"]
    if role == "BASE" and not (type(version) is int and version == SCHEMA_VERSION):
        return f"has schema version {version!r}; this code reads {SCHEMA_VERSION}"
    if not isinstance(data.get("metrics"), list):
        return "has no metrics list"
    problem = config_problem(data) or next(filter(None, map(metric_problem, data["metrics"])), None)
    names = [m["name"] for m in data["metrics"]] if problem is None else []
    return problem or ("names a metric twice" if len(set(names)) != len(names) else None)


def read_file(path, role):
    """The one summary in the result file ``path``; BenchError when it cannot be compared."""
    data, why = load_json(path)
    if why:
        raise BenchError(f"cannot read {path}: it {why}")
    if not is_result(data):
        raise BenchError(f"{path} is not a result summary (no schema_version, task and config)")
    problem = run_problem(data, role)
    if problem:
        raise BenchError(f"cannot compare {role} file {path}: it {problem}")
    return [(path, data)]


def read_folder(folder, role):
    """The summaries under ``folder``. A file that cannot be compared fails the gate on either
    side: the gate must not pass because its baseline went missing, nor because a NEW run that
    would fail it was cut short (a truncated summary) and so left out."""
    checked, problems = Store(folder).scan(problem=lambda path, data: run_problem(data, role))
    if problems:
        fix = "refresh the baseline" if role == "BASE" else "remake those runs"
        where = f"the baseline {folder}" if role == "BASE" else f"NEW {folder}"
        raise BenchError(f"{len(problems)} file(s) in {where} cannot be compared: "
                         + "; ".join(problems) + f"; fix or remove them, or {fix}")
    return checked


def read_results(path, role="NEW"):
    """Result summaries in ``path`` (one .json, or every .json under a folder), newest per run;
    each remembers where it and its records lie (in memory only, never written)."""
    path = Path(path)
    if not path.exists():
        raise BenchError(f"{path}: no such file or folder")
    newest = {}
    for file, data in read_file(path, role) if path.is_file() else read_folder(path, role):
        data["summary_path"], data["records_path"] = str(file), records_path(file, data)
        key = (strategy_key(data), tuple(settings(data).items()))
        if key not in newest or finished_at(data) >= finished_at(newest[key]):
            newest[key] = data
    return list(newest.values())


def settings(result):
    """What must match for two paired runs to be comparable."""
    return {"schema_version": result["schema_version"],
            **{k: setting(result["config"], k) for k in SETTINGS}}


def run_name(result):
    seed = result["config"].get("seed")
    return result.get("label", result["config"]["strategy_spec"]) + (f" (seed {seed})" if seed else "")


def pair_runs(base, new):
    """(base, new) pairs: equal settings first, then leftovers of the same identity; None = absent."""
    pairs = []
    for ident in sorted({strategy_key(r) for r in base + new}, key=str):
        left = [r for r in base if strategy_key(r) == ident]
        right = [r for r in new if strategy_key(r) == ident]
        for b in list(left):
            match = next((n for n in right if settings(n) == settings(b)), None)
            if match is not None:
                pairs.append((b, match))
                left.remove(b)
                right.remove(match)
        pairs += list(zip(left, right))
        pairs += [(b, None) for b in left[len(right):]] + [(None, n) for n in right[len(left):]]
    return pairs


def differences(b, n):
    """'model_id 0230c8aeed6b vs abc' for the settings that differ."""
    sb, sn = settings(b), settings(n)
    return "; ".join(f"{k} {sb[k]} vs {sn[k]}" for k in sb if sb[k] != sn[k])


def check_directions(b, n):
    """A metric that changed direction cannot be judged either way: BenchError naming both files."""
    new_directions = {m["name"]: m["higher_is_better"] for m in n["metrics"]}
    for m in b["metrics"]:
        if new_directions.get(m["name"], m["higher_is_better"]) != m["higher_is_better"]:
            raise BenchError(f"metric {m['name']!r} has higher_is_better {m['higher_is_better']} in the baseline "
                             f"{b['summary_path']} but {new_directions[m['name']]} in {n['summary_path']}; "
                             "they cannot be compared: refresh the baseline if the change is meant")


def missing_names(result):
    """The --allow-missing names of a BASE run: TASK/label, TASK/spec and TASK/resolved spec."""
    return {f"{result['task']}/{name}" for name in
            (result.get("label"), result["config"]["strategy_spec"], strategy_key(result)[1]) if isinstance(name, str)}


def check_allow_missing(allowed, base):
    """An --allow-missing name that no BASE run answers to is a typo: BenchError."""
    known = set().union(*(missing_names(r) for r in base)) if base else set()
    unknown = [name for name in allowed if name not in known]
    if unknown:
        raise BenchError(f"--allow-missing {unknown[0]!r} names no run of BASE; give TASK/RUN, RUN a run's "
                         "label or strategy spec as the table shows it (TASK/NAME:KEY=VALUE)")


def run_rows(b, n, limits, allowed=()):
    """Rows of one pair: one per metric if comparable, else one for the whole run. A BASE run
    missing from NEW is a regression unless ``allowed`` (--allow-missing names) names it."""
    some = b or n
    task, run = some["task"], run_name(some)
    if n is None:
        if missing_names(b) & set(allowed):
            return [Row(task, run, None, None, None, "missing", "in BASE only; allowed by --allow-missing")]
        return [Row(task, run, None, None, None, "missing", "REGRESSION: in BASE only (allow it with "
                    f"--allow-missing {task}/{strategy_key(b)[1]})", regression=True)]
    if b is None:
        return [Row(task, run, None, None, None, "new", "in NEW only")]
    if settings(b) != settings(n):
        return [Row(task, run, None, None, None, "not comparable", differences(b, n))]
    check_directions(b, n)
    base_metrics = {m["name"]: m for m in b["metrics"]}
    new_metrics = {m["name"]: m for m in n["metrics"]}
    names = list(base_metrics) + [m for m in new_metrics if m not in base_metrics]
    records = (sorted_records(b), sorted_records(n))
    return [metric_row(task, run, name, (base_metrics.get(name), new_metrics.get(name)),
                       [x for x in limits if applies(x, name, b.get("headline"))], records=records, results=(b, n))
            for name in names]


def sorted_records(result):
    """The run's per-input records by index; [] when its summary names no records file (then its
    metrics are judged by their marginal CIs). Records that do not match their summary are a
    BenchError: judging them would judge another run than the summary describes."""
    if result["records_path"] is None:
        return []
    records, problem = check_records(result, result["records_path"])
    if problem:
        raise BenchError(f"cannot compare {result['summary_path']}: {problem}; remake the run or restore its files")
    return sorted(records, key=lambda r: r["index"])


def input_scale(metric):
    """The size of the per-input numbers a mean is taken over (the sum of each field's mean
    absolute value); 0 for other statistics. A KL of a few nats is a mean of log q - log p, each
    tens of nats, and float noise comes with the size of those terms, not of their difference."""
    if metric.statistic not in ("mean", "mean_difference"):
        return 0.0
    return float(sum(np.abs(column).mean() for column in metric.columns))


def recomputable(metric, records, result):
    """The PerInput of ``metric`` over ``records`` (bench.paired), or None when it has no recipe.
    The recipe and the records are a file's, so numbers that do not fit (a reference of another
    length, a field that is not a number) are a BenchError naming the file, found by computing
    the metric once here."""
    try:
        recomputed = per_input(metric, records)
        if recomputed is not None:
            recomputed()
        return recomputed
    except (ValueError, TypeError, KeyError, IndexError) as err:
        why = " ".join(str(err).split())
        raise BenchError(f"cannot recompute metric {metric['name']!r} of {result['summary_path']} "
                         f"from its records ({type(err).__name__}: {why})") from None


def paired_test(bm, nm, records, results):
    """The paired difference NEW - BASE of one metric (with BASE's ``scale``), or None when the
    runs cannot be paired."""
    base_records, new_records = records
    if not (base_records and new_records) or [r["index"] for r in base_records] != [r["index"] for r in new_records]:
        return None
    base, new = recomputable(bm, base_records, results[0]), recomputable(nm, new_records, results[1])
    if base is None or new is None:
        return None
    return {**paired_difference(new, base), "scale": input_scale(base)}


def applies(limit, name, headline):
    return limit.metric == name or (limit.metric == "headline" and name == headline)


def practical_tolerance(metric, scale=0.0):
    """The largest difference of ``metric`` (a summary's metric dict) that is float noise, in its
    units: the ``tolerance`` its owner declared, else ABS_TOLERANCE or REL_TOLERANCE times the
    larger of |value| and ``scale`` (the size of the per-input terms, ``input_scale``)."""
    if metric.get("tolerance") is not None:
        return float(metric["tolerance"])
    return max(ABS_TOLERANCE, REL_TOLERANCE * max(abs(metric["value"]), scale))


def evidence(bm, nm, paired):
    """(the difference NEW - BASE, whether it is statistically significant): the paired CI excludes
    0, or without a paired test the two marginal CIs do not overlap."""
    if paired is not None:
        return paired["diff"], not paired["ci_low"] <= 0 <= paired["ci_high"]
    overlap = nm["ci_low"] <= bm["ci_high"] and bm["ci_low"] <= nm["ci_high"]
    return nm["value"] - bm["value"], not overlap


def mark_of(bm, nm, paired=None):
    """better / worse / within noise / missing / new for one metric (directions already agree)."""
    if nm is None:
        return "missing"
    if bm is None:
        return "new"
    diff, significant = evidence(bm, nm, paired)
    if not significant or abs(diff) <= tolerance_of(bm, paired):
        return "within noise"
    return "better" if better_sign(bm["higher_is_better"]) * diff > 0 else "worse"


def tolerance_of(bm, paired):
    return practical_tolerance(bm, paired["scale"] if paired else 0.0)


def worsening(bm, nm):
    """How much worse NEW is than BASE, in the metric's units (negative: better)."""
    delta = nm["value"] - bm["value"]
    return -delta if bm["higher_is_better"] else delta


def breaks(limit, bm, nm, mark, tolerance=0.0):
    """Whether one metric's change goes beyond ``limit`` (never within the practical tolerance)."""
    if limit.kind == "ci":
        return mark == "worse"
    allowed = limit.amount if limit.kind == "abs" else limit.amount / 100 * abs(bm["value"])
    return worsening(bm, nm) > max(allowed, tolerance)


def metric_row(task, run, name, metrics, limits, *, records=([], []), results=(None, None)):
    """The row of metric ``name`` of one run: ``metrics`` is its (base, new) dicts (None where absent)."""
    bm, nm = metrics
    paired = paired_test(bm, nm, records, results) if bm is not None and nm is not None else None
    mark = mark_of(bm, nm, paired)
    row = Row(task, run, name, bm, nm, mark, paired_note(paired))
    if mark in ("missing", "new"):
        return row
    tolerance = tolerance_of(bm, paired)
    if mark == "within noise" and evidence(bm, nm, paired)[1]:   # significant, but only float noise
        row.note = f"{row.note}; within tolerance {tolerance:.2g}".lstrip("; ")
    broken = [limit for limit in limits if breaks(limit, bm, nm, mark, tolerance)]
    if broken:
        row.regression = True
        row.note = ("REGRESSION beyond " + ", ".join(map(str, broken)) + "; " + row.note).rstrip("; ")
    return row


def paired_note(paired):
    """'paired 0.012 [-0.004, 0.03], Tango score (McNemar) p 0.2 (12 vs 7)' or ''."""
    if paired is None:
        return ""
    note = (f"paired {paired['diff']:+.4g} [{paired['ci_low']:.4g}, {paired['ci_high']:.4g}], "
            f"{paired['test'].replace('exact ', '')} p {paired['p']:.3g}")
    return note + (" ({} vs {})".format(*paired["discordant"]) if "discordant" in paired else "")


def fmt_metric(m):
    return "-" if m is None else f"{m['value']:.4g} [{m['ci_low']:.4g}, {m['ci_high']:.4g}]"


def fmt_delta(bm, nm):
    if bm is None or nm is None:
        return "-"
    delta = nm["value"] - bm["value"]
    relative = f" ({delta / abs(bm['value']):+.1%})" if bm["value"] else ""
    return f"{delta:+.4g}{relative}"


def render(rows):
    """A plain-text table of the rows."""
    header = ["task", "run", "metric", "BASE", "NEW", "delta", "mark", "note"]
    lines = [[r.task, r.run, r.metric or "-", fmt_metric(r.base), fmt_metric(r.new),
              fmt_delta(r.base, r.new), r.mark, r.note] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(header, *lines)]
    return "\n".join(padded(cells, widths).rstrip() for cells in [header, ["-" * w for w in widths]] + lines)


def padded(cells, widths):
    """One plain-text table line: each cell left-aligned to its column's width."""
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths))


def check_limit_names(limits, results):
    """A --fail-on metric that no result has is a typo: BenchError."""
    known = {m["name"] for r in results for m in r["metrics"]} | {"headline"}
    unknown = [x.metric for x in limits if x.metric not in known]
    if unknown and len(known) > 1:
        raise BenchError(f"--fail-on names {', '.join(map(repr, unknown))}, which no result has; "
                         f"metrics: {', '.join(sorted(known))}")


def verdict(rows, compared):
    """The summary line and the exit status. It counts every row: whole runs (missing, new, not
    comparable) and the metrics of the runs compared, each by its mark."""
    runs = Counter(r.mark for r in rows if r.metric is None)
    metrics = Counter(r.mark for r in rows if r.metric is not None)
    regressions = sum(r.regression for r in rows)
    text = (f"{compared} runs compared, {regressions} regressions; "
            + ", ".join(f"{runs[m]} {m}" for m in RUN_MARKS)
            + "; metrics: " + ", ".join(f"{metrics[m]} {m}" for m in METRIC_MARKS))
    if regressions:
        return f"FAIL: {text}", EXIT_REGRESSION
    if not compared:
        return f"nothing comparable: {text}", EXIT_NOTHING_COMPARABLE
    return f"ok: {text}", EXIT_OK


def compare(base_path, new_path, fail_on=DEFAULT_FAIL_ON, out=print, allow_missing=()):
    """Compare the results in ``base_path`` with those in ``new_path``; returns the exit status.
    ``allow_missing``: TASK/RUN names of BASE runs NEW may lack."""
    limits = parse_fail_on(fail_on)
    base, new = read_results(base_path, "BASE"), read_results(new_path, "NEW")
    check_limit_names(limits, base + new)
    check_allow_missing(allow_missing, base)
    pairs = pair_runs(base, new)
    rows = [row for b, n in pairs for row in run_rows(b, n, limits, allow_missing)]
    compared = sum(b is not None and n is not None and settings(b) == settings(n) for b, n in pairs)
    if rows:
        out(render(rows))
    text, status = verdict(rows, compared)
    out(text)
    return status
