"""`bench compare BASE NEW`: pair runs, per-metric deltas and marks, and the regression gate."""
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.errors import BenchError
from bench.paired import better_sign, paired_difference, per_input
from bench.results import load_json, read_records, scan_results

EXIT_OK, EXIT_REGRESSION, EXIT_NOTHING_COMPARABLE = 0, 1, 3
DEFAULT_FAIL_ON = "passes:+5%,headline:ci"
SETTINGS = ("model_id", "data_id", "seed", "limit", "batch_size", "temperature", "device", "dtype")
DEFAULTS = {"device": "cpu", "dtype": "float32"}   # what a config without them ran on (bench.device)

FAIL_ON_HELP = f"""Compare two sets of results (the CI regression gate).

BASE and NEW are result folders or single result .json files. Runs are paired by task and
strategy spec (every parameter resolved); a pair whose model, data, seed, limit, batch size,
temperature, device kind (cpu, cuda), dtype or schema version differ is 'not comparable'. For each metric the table shows
both values with their 95% CIs, the delta and a mark. Paired runs on the same inputs whose
metric can be recomputed from the per-input records are judged by a paired test (paired
bootstrap CI of NEW - BASE, exact McNemar or randomisation p, shown in the note); others by
their marginal CIs:
  better / worse   paired: the CI of the difference excludes 0; else: the CIs do not overlap
                   (direction: the file's higher_is_better)
  within noise     otherwise
  missing / new    in BASE only / in NEW only
  not comparable   different model, data, seed, limit, device, dtype, schema or metric direction

--fail-on METRIC:LIMIT,... sets how much each metric may get worse. Which way is worse comes
from the result file, never from the name or the sign, so a sign is optional and ignored:
  passes:+5%            fail when worse by more than 5% of BASE's value (relative)
  exact_accuracy:0.02   fail when worse by more than 0.02 in the metric's units (absolute)
  composition_jsd:ci    fail when marked worse (the CIs do not overlap)
METRIC 'headline' stands for each run's headline metric. Default: {DEFAULT_FAIL_ON}.

Exit status: 0 no regression, 1 a regression beyond a limit, 2 bad arguments or unreadable
files, 3 nothing comparable found."""


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
    return (isinstance(data, dict) and "schema_version" in data and "task" in data
            and isinstance(data.get("config"), dict) and "strategy_spec" in data["config"])


def read_results(path, role="NEW"):
    """(result summaries in ``path`` (one .json, or every .json under a folder), newest per run;
    how many files there could not be read, each named on stderr)."""
    path = Path(path)
    if not path.exists():
        raise BenchError(f"{path}: no such file or folder")
    if path.is_file():
        data, why = load_json(path)
        if why:
            raise BenchError(f"cannot read {path}: it {why}")
        if not is_result(data):
            raise BenchError(f"{path} is not a result summary (no schema_version, task and config)")
        data["records_path"] = records_path(path, data)
        return [data], 0
    found, problems = scan_results(path, with_paths=True, any_schema=True)
    for problem in problems:
        print(f"unreadable {role} file: {problem}", file=sys.stderr)
    newest = {}
    for file, data in found:
        data["records_path"] = records_path(file, data)
        key = (identity(data), tuple(settings(data).items()))
        if key not in newest or finished(data) >= finished(newest[key]):
            newest[key] = data
    return list(newest.values()), len(problems)


def records_path(summary_path, data):
    """Where the run's records lie (kept in memory only, never written): beside its summary."""
    return str(Path(summary_path).parent / str(data.get("records_file", "")))


def finished(result):
    return str(result.get("provenance", {}).get("finished_at", ""))


def identity(result):
    """What pairs two runs: task and the fully resolved strategy spec. Parameters left empty are
    dropped (results before schema 1 wrote them: 'mi:gamma=0.3,lam=1.0,estimator=')."""
    name, _, params = result["config"]["strategy_spec"].partition(":")
    kept = [pair for pair in params.split(",") if pair and not pair.endswith("=")]
    return result["task"], f"{name}:{','.join(kept)}" if kept else name


def settings(result):
    """What must match for two paired runs to be comparable."""
    return {"schema_version": result["schema_version"],
            **{k: result["config"].get(k, DEFAULTS.get(k)) for k in SETTINGS}}


def run_name(result):
    seed = result["config"].get("seed")
    return result.get("label", result["config"]["strategy_spec"]) + (f" (seed {seed})" if seed else "")


def pair_runs(base, new):
    """(base, new) pairs: equal settings first, then leftovers of the same identity; None = absent."""
    pairs = []
    for ident in sorted({identity(r) for r in base + new}, key=str):
        left = [r for r in base if identity(r) == ident]
        right = [r for r in new if identity(r) == ident]
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


def run_rows(b, n, limits):
    """Rows of one pair: one per metric if comparable, else one for the whole run."""
    some = b or n
    task, run = some["task"], run_name(some)
    if n is None:
        return [Row(task, run, None, None, None, "missing", "in BASE only")]
    if b is None:
        return [Row(task, run, None, None, None, "new", "in NEW only")]
    if settings(b) != settings(n):
        return [Row(task, run, None, None, None, "not comparable", differences(b, n))]
    base_metrics = {m["name"]: m for m in b.get("metrics", [])}
    new_metrics = {m["name"]: m for m in n.get("metrics", [])}
    names = list(base_metrics) + [m for m in new_metrics if m not in base_metrics]
    records = (sorted_records(b), sorted_records(n))
    return [metric_row(task, run, name, base_metrics.get(name), new_metrics.get(name),
                       [x for x in limits if applies(x, name, b.get("headline"))], records)
            for name in names]


def sorted_records(result):
    """The run's per-input records by index ([] when its JSONL is missing or short)."""
    path = Path(result.get("records_path", ""))
    records = sorted(read_records(path), key=lambda r: r["index"]) if path.is_file() else []
    return records if len(records) == result.get("n_samples") else []


def paired_test(bm, nm, records):
    """The paired difference NEW - BASE of one metric, or None when the runs cannot be paired."""
    base_records, new_records = records
    if not (base_records and new_records) or [r["index"] for r in base_records] != [r["index"] for r in new_records]:
        return None
    base, new = per_input(bm, base_records), per_input(nm, new_records)
    return paired_difference(new, base) if base is not None and new is not None else None


def applies(limit, name, headline):
    return limit.metric == name or (limit.metric == "headline" and name == headline)


def mark_of(bm, nm, paired=None):
    """better / worse / within noise / not comparable / missing / new for one metric."""
    if nm is None:
        return "missing"
    if bm is None:
        return "new"
    if bm["higher_is_better"] != nm["higher_is_better"]:
        return "not comparable"
    if paired is not None:
        if paired["ci_low"] <= 0 <= paired["ci_high"]:
            return "within noise"
        return "better" if better_sign(bm["higher_is_better"]) * paired["diff"] > 0 else "worse"
    if nm["ci_low"] <= bm["ci_high"] and bm["ci_low"] <= nm["ci_high"]:
        return "within noise"
    return "better" if (nm["value"] > bm["value"]) == bm["higher_is_better"] else "worse"


def worsening(bm, nm):
    """How much worse NEW is than BASE, in the metric's units (negative: better)."""
    delta = nm["value"] - bm["value"]
    return -delta if bm["higher_is_better"] else delta


def breaks(limit, bm, nm, mark):
    """Whether one metric's change goes beyond ``limit``."""
    if limit.kind == "ci":
        return mark == "worse"
    worse = worsening(bm, nm)
    allowed = limit.amount if limit.kind == "abs" else limit.amount / 100 * abs(bm["value"])
    return worse > allowed


def metric_row(task, run, name, bm, nm, limits, records=([], [])):
    paired = paired_test(bm, nm, records) if bm is not None and nm is not None else None
    mark = mark_of(bm, nm, paired)
    row = Row(task, run, name, bm, nm, mark, paired_note(paired))
    if mark in ("missing", "new", "not comparable"):
        return row
    broken = [limit for limit in limits if breaks(limit, bm, nm, mark)]
    if broken:
        row.regression = True
        row.note = ("REGRESSION beyond " + ", ".join(map(str, broken)) + "; " + row.note).rstrip("; ")
    return row


def paired_note(paired):
    """'paired 0.012 [-0.004, 0.03], McNemar p 0.2 (12 vs 7)' or ''."""
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
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(x) for x in lines])


def check_limit_names(limits, results):
    """A --fail-on metric that no result has is a typo: BenchError."""
    known = {m["name"] for r in results for m in r.get("metrics", [])} | {"headline"}
    unknown = [x.metric for x in limits if x.metric not in known]
    if unknown and len(known) > 1:
        raise BenchError(f"--fail-on names {', '.join(map(repr, unknown))}, which no result has; "
                         f"metrics: {', '.join(sorted(known))}")


def verdict(rows, compared):
    """The summary line and the exit status."""
    count = lambda mark: sum(r.mark == mark and r.metric is None for r in rows)  # noqa: E731
    regressions = sum(r.regression for r in rows)
    text = (f"{compared} runs compared, {regressions} regressions; {count('missing')} missing, "
            f"{count('new')} new, {count('not comparable')} not comparable")
    if regressions:
        return f"FAIL: {text}", EXIT_REGRESSION
    if not compared:
        return f"nothing comparable: {text}", EXIT_NOTHING_COMPARABLE
    return f"ok: {text}", EXIT_OK


def compare(base_path, new_path, fail_on=DEFAULT_FAIL_ON, out=print):
    """Compare the results in ``base_path`` with those in ``new_path``; returns the exit status."""
    limits = parse_fail_on(fail_on)
    (base, base_problems), (new, _) = read_results(base_path, "BASE"), read_results(new_path, "NEW")
    if base_problems:   # a gate must not pass because its baseline went missing
        raise BenchError(f"{base_problems} unreadable file(s) in the baseline {base_path} (named above); "
                         f"fix or remove them")
    check_limit_names(limits, base + new)
    pairs = pair_runs(base, new)
    rows = [row for b, n in pairs for row in run_rows(b, n, limits)]
    compared = sum(b is not None and n is not None and settings(b) == settings(n) for b, n in pairs)
    if rows:
        out(render(rows))
    text, status = verdict(rows, compared)
    out(text)
    return status
