"""Compare timing benchmarks (pytest-benchmark JSON) with a committed baseline, noise-tolerant.

    python -m bench.benchcheck BASELINE.json --run DIR [--reruns 2] [--limit 2.5]
    python -m bench.benchcheck BASELINE.json CURRENT.json [CURRENT.json ...] [--limit 2.5]

Each case of tests/test_benchmarks.py records ``extra_info["ratio"]``: the median, over its
rounds, of the round's time over that of a calibration round just before it (fixed work no
project code touches, as long as the round; ``extra_info["calibration"]`` names it). A machine
twice as fast, or a stretch when other processes slow the machine, slows both alike, so the
ratio carries from one machine and one moment to another better than seconds do. A case is
slower beyond the limit when its ratio over the baseline's exceeds ``--limit`` (default 2.5);
a case recording no ratio is compared by its smallest round in seconds. docs/lab.md
(2026-12-01, the 2.5x limit) gives the noise the limit was chosen against.

Given several CURRENT files, each case counts at its best (lowest) figure among them: noise
only ever adds time, a real regression is there every time. ``--run DIR`` runs the benchmarks
(``python -m pytest tests/test_benchmarks.py --benchmark-enable --benchmark-only``) into
DIR/run1.json, and runs the cases slower beyond the limit again, up to ``--reruns`` times, so
that a case fails only when it is slower beyond the limit in every run.

Cases in one file only are listed (``new``, ``missing``) and do not fail. A case that reports
``extra_info["overhead"]`` (tests/test_overhead.py: the decode loop's share beside the model's)
is printed with the baseline's figure and never fails: that test bounds it itself.

Exit status: 0 no regression; 1 a case slower beyond the limit (its row says REGRESSION); 2 bad
arguments, unreadable files or a failed benchmark run (one line ``error: ...``); 3 no case in
both the baseline and this run.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

from bench.errors import BenchError
from bench.files import MiB, read_text

JSON_LIMIT = 64 * MiB   # a run of the shipped cases is about 60 KB; with --benchmark-save-data a few MB
DEFAULT_LIMIT = 2.5
BENCHMARKS = "tests/test_benchmarks.py"
PYTEST_FLAGS = ("--benchmark-enable", "--benchmark-only", "-q", "-p", "no:cacheprovider")


def load(path):
    """{fullname: benchmark entry} of a pytest-benchmark JSON file; one-line errors."""
    text = read_text(path, "benchmark JSON", JSON_LIMIT)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise BenchError(f"benchmark JSON {path} is not JSON: {err}") from None
    entries = data.get("benchmarks") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and isinstance(e.get("fullname"), str) and isinstance(e.get("stats"), dict)
            and isinstance(e["stats"].get("min"), (int, float)) for e in entries):
        raise BenchError(f"benchmark JSON {path} is not pytest-benchmark output "
                         f"(a 'benchmarks' list of cases with stats)")
    return {entry["fullname"]: entry for entry in entries}


def info(entry):
    return entry.get("extra_info") or {}


def figure(base, cur):
    """(now / baseline, how it was read): the ratio to the calibration where both runs record it
    against the same calibration, else the smallest round in seconds; None where they differ."""
    b, c = info(base), info(cur)
    ratios = [x.get("ratio") for x in (b, c)]
    if all(isinstance(r, (int, float)) and r > 0 for r in ratios):
        if b.get("calibration") != c.get("calibration"):
            return None, f"not comparable: calibration {b.get('calibration')!r} then {c.get('calibration')!r}"
        return ratios[1] / ratios[0], f"vs {c.get('calibration')}"
    return cur["stats"]["min"] / base["stats"]["min"], "in seconds"


def compare(baseline, runs, limit):
    """(rows, regressions, comparable) over the cases of the baseline and the runs (a list of
    loaded files): each case at its best run."""
    rows, regressions, comparable = [], [], 0
    for fullname in sorted(set(baseline).union(*runs)):
        base, found = baseline.get(fullname), [run[fullname] for run in runs if fullname in run]
        if base is None or not found:
            rows.append((fullname, base, found[0] if found else None, None, "new" if base is None else "missing"))
            continue
        if isinstance(info(found[-1]).get("overhead"), (int, float)):   # a figure reported, never failed on
            comparable += 1
            rows.append((fullname, base, found[-1], None, "reported" + reported(base, found[-1])))
            continue
        read = [(figure(base, cur), cur) for cur in found]
        usable = [((ratio, how), cur) for (ratio, how), cur in read if ratio is not None]
        if not usable:
            rows.append((fullname, base, found[0], None, read[0][0][1]))
            continue
        (ratio, how), cur = min(usable, key=lambda item: item[0][0])
        comparable += 1
        of = f", best of {len(found)} runs" if len(found) > 1 else ""
        if ratio > limit:
            regressions.append(fullname)
            verdict = f"REGRESSION: {ratio:.2f}x slower {how} (limit {limit:g}x{of})"
        else:
            verdict = f"ok ({how}{of})"
        rows.append((fullname, base, cur, ratio, verdict + reported(base, cur)))
    return rows, regressions, comparable


def reported(base, cur):
    """'; overhead 2.52% (baseline 2.40%)': the overhead a case reports, beside the baseline's."""
    now, before = info(cur).get("overhead"), info(base).get("overhead")
    if not isinstance(now, (int, float)):
        return ""
    then = f" (baseline {100 * before:.2f}%)" if isinstance(before, (int, float)) else ""
    return f"; overhead {100 * now:.2f}%{then}"


def table(rows):
    """The rows as text: each case's smallest round in ms in the baseline and now, the
    calibration's smallest round now over the baseline's (the machine's speed as the case met
    it), and the figure compared (now over baseline)."""
    def ms(entry):
        return "-" if entry is None else f"{1e3 * entry['stats']['min']:.3f}"

    def speed(base, cur):
        before, now = (None if e is None else info(e).get("calibration_s") for e in (base, cur))
        known = isinstance(before, (int, float)) and isinstance(now, (int, float)) and before > 0
        return f"{now / before:.2f}" if known else "-"
    width = max([len("case")] + [len(r[0].rpartition("::")[2]) for r in rows])
    header = (f"{'case':<{width}}  {'baseline min ms':>15}  {'now min ms':>10}  {'cal. now/base':>13}  "
              f"{'now/base':>8}  verdict")
    lines = [header]
    for name, base, cur, ratio, verdict in rows:
        lines.append(f"{name.rpartition('::')[2]:<{width}}  {ms(base):>15}  {ms(cur):>10}  {speed(base, cur):>13}  "
                     f"{'-' if ratio is None else f'{ratio:.2f}':>8}  {verdict}")
    return "\n".join(lines)


def run_benchmarks(targets, out):
    """``python -m pytest TARGETS`` with benchmarks on, saved to ``out``; loaded."""
    command = [sys.executable, "-m", "pytest", *targets, *PYTEST_FLAGS, f"--benchmark-json={out}"]
    code = subprocess.run(command, check=False).returncode
    if code != 0:
        raise BenchError(f"the benchmark run failed (pytest exit status {code}): {' '.join(command)}")
    return load(out)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.benchcheck", description=__doc__.split("\n\n")[0])
    parser.add_argument("baseline", help="pytest-benchmark JSON of the baseline (baselines/benchmarks/baseline.json)")
    parser.add_argument("current", nargs="*", help="pytest-benchmark JSON files of this code (--benchmark-json=PATH)")
    parser.add_argument("--run", metavar="DIR", help=f"run {BENCHMARKS} into DIR/run1.json (reruns: run2.json, ...)")
    parser.add_argument("--reruns", type=int, default=2,
                        help="with --run: times the cases slower beyond the limit run again (default 2)")
    parser.add_argument("--limit", type=float, default=DEFAULT_LIMIT,
                        help=f"fail when a case is slower than the baseline by more than this factor "
                             f"(default {DEFAULT_LIMIT:g})")
    args = parser.parse_args(argv)
    try:
        if not args.limit > 1:
            raise BenchError(f"--limit must be a factor above 1, got {args.limit:g}")
        if bool(args.run) == bool(args.current):
            raise BenchError("give either CURRENT files or --run DIR")
        if args.reruns < 0:
            raise BenchError(f"--reruns must be 0 or more, got {args.reruns}")
        baseline = load(args.baseline)
        if args.current:
            runs = [load(path) for path in args.current]
            rows, regressions, comparable = compare(baseline, runs, args.limit)
        else:
            out = Path(args.run)
            out.mkdir(parents=True, exist_ok=True)
            runs = [run_benchmarks([BENCHMARKS], out / "run1.json")]
            rows, regressions, comparable = compare(baseline, runs, args.limit)
            for rerun in range(args.reruns):
                if not regressions:
                    break
                print(f"{len(regressions)} cases slower beyond {args.limit:g}x; running them again "
                      f"({rerun + 1} of at most {args.reruns}): {' '.join(regressions)}", flush=True)
                runs.append(run_benchmarks(regressions, out / f"run{rerun + 2}.json"))
                rows, regressions, comparable = compare(baseline, runs, args.limit)
    except BenchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(table(rows))
    if not comparable:
        print("nothing comparable: no case is in both the baseline and this run", file=sys.stderr)
        return 3
    print(f"{comparable} cases compared with {args.baseline}: {len(regressions)} slower beyond {args.limit:g}x")
    return 1 if regressions else 0


if __name__ == "__main__":
    raise SystemExit(main())
