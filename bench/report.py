"""`bench report`: Pareto plots and tables drawn from result files only (never runs a model)."""
import os
import tempfile
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import matplotlib.colors
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from bench.claims import ablations_markdown, budget_rows, claims_markdown, speedup_table, task_verdicts  # noqa: E402
from bench.docs import sync_markdown  # noqa: E402
from bench.errors import BenchError  # noqa: E402
from bench.registry import REPORTS, load_plugins  # noqa: E402
from bench.results import find_results  # noqa: E402
from bench.sweeps import point_label, reference_run, sweep_lines  # noqa: E402
from bench.table import csv_text, latex, markdown, metric_of, numeric_rows, summary_rows  # noqa: E402

plt.rcParams.update({"pdf.fonttype": 42, "ps.fonttype": 42})  # TrueType fonts embedded in PDF/PS

REPO = Path(__file__).resolve().parent.parent
# the committed pair: reports/ is a pure function of results/, so no other results write there
SHIPPED_RESULTS, SHIPPED_REPORTS = REPO / "results", REPO / "reports"
SHIPPED_BASELINES = REPO / "baselines"   # committed results too (the CI gate's): nothing is written into them


@dataclass(frozen=True)
class Layout:
    """A figure size: file-name suffix, width and height (inches), font size, legend below."""
    suffix: str
    width: float
    height: float
    font: float
    legend_below: bool


LAYOUTS = [Layout("", 6.8, 3.6, 8, False),        # two-column (full text width)
           Layout("_1col", 3.3, 3.2, 6.5, True)]  # one column


def comparison_group(results):
    """Results comparable with each other: same task, model, data, limit, seed, value temperature,
    device kind and dtype (a config without the last two ran on cpu in float32).

    Picks the group with the most runs (newest on ties), so a quick --limit run does not mix in.
    """
    key = lambda r: (r["model"]["id"], r["config"]["data_id"], r["config"]["limit"], r["config"]["seed"],  # noqa: E731
                     r["config"].get("temperature"), r["config"].get("device", "cpu"),
                     r["config"].get("dtype", "float32"))
    counts = Counter(key(r) for r in results)
    newest = {key(r): r["provenance"]["finished_at"] for r in results}
    best = max(counts, key=lambda k: (counts[k], newest[k]))
    return [r for r in results if key(r) == best], len(results) - counts[best]


def pareto_front(points, higher_is_better):
    """Indices of points (passes, quality) that no other point beats on both axes."""
    sign = 1 if higher_is_better else -1
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -sign * points[i][1]))
    front, best = [], float("-inf")
    for i in order:
        if sign * points[i][1] > best:
            front.append(i)
            best = sign * points[i][1]
    return front


# A fixed colour per strategy name, the same in every figure whatever else is registered; add
# new strategies here. Names not listed get a stable colour from their name (crc32 into tab10).
COLOURS = {"eb": "#1f77b4", "margin": "#ff7f0e", "mi": "#2ca02c", "mi_oracle": "#d62728",
           "sequential": "#9467bd", "threshold": "#8c564b", "topk": "#e377c2", "learned": "#17becf",
           "mi_eb": "#bcbd22"}


def strategy_color(name):
    """One colour per strategy name, the same in every figure."""
    if name in COLOURS:
        return COLOURS[name]
    palette = [matplotlib.colors.to_hex(c) for c in plt.get_cmap("tab10").colors]
    return palette[zlib.crc32(name.encode()) % len(palette)]


def error_bars(runs, name):
    """Values and [below, above] CI distances of metric ``name`` over ``runs``. A basic-bootstrap CI
    of a biased statistic (a plug-in distance on a small set) can lie wholly on one side of its value: the
    bar then reaches from the value to the far end of the interval."""
    ms = [metric_of(r, name) for r in runs]
    return ([m["value"] for m in ms],
            [[max(0.0, m["value"] - m["ci_low"]) for m in ms], [max(0.0, m["ci_high"] - m["value"]) for m in ms]])


def draw_lines(ax, lines, headline, layout):
    """One line with CI bars per sweep, in its strategy's colour (a new dash pattern for each
    further line of the same strategy, e.g. another order); sequential as a star."""
    seen = Counter()
    for name, runs in lines.items():
        xs, xerr = error_bars(runs, "passes")
        ys, yerr = error_bars(runs, headline)
        strategy = runs[0]["strategy"]
        star = strategy == "sequential"
        ax.errorbar(xs, ys, xerr=xerr, yerr=yerr, color=strategy_color(strategy), label=name,
                    linestyle=["-", "--", ":", "-."][seen[strategy] % 4], marker="*" if star else "o",
                    markersize=(9 if star else 3.5) * layout.font / 8, linewidth=1, elinewidth=0.6, capsize=1.5,
                    zorder=3 if star else 2)
        seen[strategy] += 1


def draw_reference(ax, reference, headline):
    """A dotted line at sequential's quality: the level the speed-up table asks for."""
    ax.axhline(metric_of(reference, headline)["value"], color="0.5", linestyle=":", linewidth=0.8,
               label="sequential quality", zorder=1)


def draw_frontier(ax, results, headline):
    passes = [metric_of(r, "passes")["value"] for r in results]
    quality = [metric_of(r, headline) for r in results]
    front = pareto_front(list(zip(passes, [q["value"] for q in quality])), quality[0]["higher_is_better"])
    ax.plot([passes[i] for i in front], [quality[i]["value"] for i in front], color="0.55", alpha=0.35,
            linewidth=5, solid_capstyle="round", label="Pareto frontier", zorder=1)  # visible under lines


def label_box(ax, xy, text, font):
    """Display-space box (x0, x1, y0, y1) of a point's label, right of the point or, at the
    right edge of the axes, left of it; and the offset and alignment that put it there."""
    px, py = ax.transData.transform(xy)
    scale = ax.figure.dpi / 72  # display pixels per point
    width, height, pad = len(text) * font * 0.6 * scale, font * 1.2 * scale, 2 * scale
    if px + pad + width > ax.get_window_extent().x1:
        return (px - pad - width, px - pad, py + pad, py + pad + height), (-2, 2), "right"
    return (px + pad, px + pad + width, py + pad, py + pad + height), (2, 2), "left"


def overlaps(box, boxes):
    return any(box[0] < b[1] and b[0] < box[1] and box[2] < b[3] and b[2] < box[3] for b in boxes)


def label_points(ax, lines, headline, layout):
    """Each point's swept parameter ('k=5'), skipping labels that would overlap one already placed."""
    placed, font = [], layout.font - 2
    for line in lines.values():
        for run in line:
            text = point_label(run, line)
            xy = (metric_of(run, "passes")["value"], metric_of(run, headline)["value"])
            box, offset, align = label_box(ax, xy, text, font)
            if text and not overlaps(box, placed):
                placed.append(box)
                ax.annotate(text, xy, textcoords="offset points", xytext=offset, ha=align, fontsize=font,
                            color=strategy_color(run["strategy"]))


def log_tick_formatter(leading):
    """Tick labels on a log axis only where the leading digit is in ``leading`` (fewer clash)."""
    def label(value, _):
        digit = int(f"{value:e}"[0]) if value > 0 else 0
        return f"{value:g}" if digit in leading else ""
    return matplotlib.ticker.FuncFormatter(label)


def style_axes(ax, results, headline, task, layout):
    quality = metric_of(results[0], headline)
    ax.set_xscale("log")
    ax.margins(x=0.08)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(log_tick_formatter({2, 5} if layout.legend_below else {2, 3, 5}))
    ax.tick_params(labelsize=layout.font - 1, which="both")
    ax.set_xlabel("mean forward passes per sample (log scale)", fontsize=layout.font)
    direction = "higher" if quality["higher_is_better"] else "lower"
    ax.set_ylabel(f"{quality['label']}\n({direction} is better)", fontsize=layout.font)
    if not layout.legend_below:
        ax.set_title(f"{task}: n={results[0]['n_samples']}, 95% CIs, * = sequential", fontsize=layout.font)
    if layout.legend_below:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, fontsize=layout.font - 1.5,
                  frameon=False)
    else:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=layout.font - 1, frameon=False)


def draw_pareto(results, task, out_dir, layout=LAYOUTS[0], metric=None):
    """Mean passes (log x) against the headline metric (or ``metric``, then in its own files):
    a line per sweep with CI bars, the frontier and sequential's quality as the reference;
    written as PNG and PDF."""
    headline = metric or results[0]["headline"]
    lines = sweep_lines(results)
    fig, ax = plt.subplots(figsize=(layout.width, layout.height))
    reference = reference_run(results)
    if reference is not None:
        draw_reference(ax, reference, headline)
    draw_frontier(ax, results, headline)
    draw_lines(ax, lines, headline, layout)
    style_axes(ax, results, headline, task, layout)
    fig.tight_layout()
    label_points(ax, lines, headline, layout)
    stem = f"pareto_{task}" + (f"_{metric}" if metric else "")
    paths = [Path(out_dir) / f"{stem}{layout.suffix}.{ext}" for ext in ("png", "pdf")]
    for path in paths:
        fig.savefig(path, dpi=300)
    plt.close(fig)
    return paths


def write_tables(results, task, out_dir, verdicts):
    """table_<task> (every run), budgets_<task> (the headline: strategies x pass budgets) and
    speedup_<task> as .md, .csv and .tex, and claims_<task>.md; returns the paths."""
    tables = {f"table_{task}": (summary_rows(results), numeric_rows(results))}
    if verdicts is not None:
        tables[f"budgets_{task}"] = (budget_rows(verdicts), budget_rows(verdicts, numeric=True))
        tables[f"speedup_{task}"] = (speedup_table(verdicts), speedup_table(verdicts, numeric=True))
    paths = []
    for stem, (text_rows, number_rows) in tables.items():
        for ext, text in (("md", markdown(*text_rows)), ("csv", csv_text(*number_rows)),
                          ("tex", latex(*text_rows))):
            paths.append(Path(out_dir) / f"{stem}.{ext}")
            paths[-1].write_text(text.rstrip("\n") + "\n")
    if verdicts is not None:
        paths.append(Path(out_dir) / f"claims_{task}.md")
        paths[-1].write_text(claims_markdown(verdicts))
    return paths


def extra_figures(results):
    """Metrics besides the headline that the task asked to plot (recorded in its result files),
    where every result of the group has them."""
    wanted = dict.fromkeys(m for r in results for m in r.get("extra_figures", ()))
    return [m for m in wanted if all(any(x["name"] == m for x in r["metrics"]) for r in results)]


def task_groups(results_dir):
    """task -> (its largest comparable group of results, how many runs were left out, its verdicts
    or None where its runs cannot be paired)."""
    results = find_results(results_dir)
    if not results:
        raise BenchError(f"no result files under {results_dir}; make some with: python -m bench run")
    groups = {task: comparison_group([r for r in results if r["task"] == task])
              for task in sorted({r["task"] for r in results})}
    return {task: (group, left_out, task_verdicts(every_seed(group, results), task, results_dir))
            for task, (group, left_out) in groups.items()}


def every_seed(group, results):
    """The runs of ``group``'s task, model, data, limit and temperature under every seed (verdicts
    pool seeds; figures and the full table show the one seed of ``group``)."""
    same = lambda r: (r["task"], r["model"]["id"], r["config"]["data_id"], r["config"]["limit"],  # noqa: E731
                      r["config"].get("temperature"))
    return [r for r in results if same(r) == same(group[0])]


def draw_figures(group, task, out_dir):
    """The Pareto plots of the headline and of every extra figure, in both layouts."""
    paths = [p for layout in LAYOUTS for p in draw_pareto(group, task, out_dir, layout)]
    for metric in extra_figures(group):
        paths += [p for layout in LAYOUTS for p in draw_pareto(group, task, out_dir, layout, metric)]
    return paths


def plugin_sections(results_dir, out_dir, figures=True):
    """Report sections plugins add (their ``figures`` modules, which import no model code)."""
    load_plugins("figures")
    return {name: draw(results_dir, out_dir, figures=figures) for name, draw in sorted(REPORTS.items())}


def write_all_tables(results_dir, out_dir):
    """Every table `bench report` writes, without the figures; returns the paths."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    groups = task_groups(results_dir)
    paths = [p for task, (group, _, verdicts) in groups.items() for p in write_tables(group, task, out_dir, verdicts)]
    paths += write_ablations([verdicts for _, _, verdicts in groups.values()], out_dir)
    return paths + [p for section in plugin_sections(results_dir, out_dir, figures=False).values() for p in section]


def write_ablations(verdicts, out_dir):
    """ablations.md: every task's ablation claims in one file (what README quotes)."""
    text = ablations_markdown([v for v in verdicts if v is not None])
    if not text:
        return []
    path = Path(out_dir) / "ablations.md"
    path.write_text(text)
    return [path]


def report_folder(results_dir, out_dir=None):
    """Where `bench report` writes: ``out_dir``, else beside the results it reads: the committed
    reports/ for the committed results/, ``DIR/reports`` for any other ``DIR`` (inside it, so two
    result folders never share one, and a scratch run's figures go where its results are). The
    committed reports/ is refused as the ``out_dir`` of other results, and a folder inside the
    committed results/ or baselines/ needs an ``out_dir`` (its reports/ would join them)."""
    results = Path(results_dir).resolve()
    if out_dir is None and results == SHIPPED_RESULTS:
        return SHIPPED_REPORTS
    if out_dir is None and any(results.is_relative_to(f) for f in (SHIPPED_RESULTS, SHIPPED_BASELINES)):
        raise BenchError(f"--results {results_dir} lies in a committed folder; give --out for its report "
                         f"(e.g. --out /tmp/reports)")
    if out_dir is None:
        return Path(results_dir) / "reports"
    if Path(out_dir).resolve() == SHIPPED_REPORTS and results != SHIPPED_RESULTS:
        raise BenchError(f"--out {out_dir} is the committed reports/, made from the committed results/ only; "
                         f"give a scratch folder (e.g. --out /tmp/reports)")
    return Path(out_dir)


def nearest_existing(path):
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def check_writable(out):
    """A one-line error unless the folder ``out`` (made later, with its parents) can be written,
    before any work. Found by making and removing a folder in its nearest existing ancestor:
    permission bits do not stop root, and only trying shows a read-only file system or /proc."""
    found = nearest_existing(Path(out))
    if not found.is_dir():
        what = "is a file, not a folder" if found == Path(out) else f"lies under {found}, which is not a folder"
        raise BenchError(f"--out {out} {what}; give a folder")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".bench-report-", dir=found))
    except OSError as err:
        raise BenchError(f"--out {out}: cannot write in {found} ({err.strerror}); "
                         f"give a folder you can write") from None


def default_docs(results_dir, out_dir):
    """The checkout, whose .md files quote the committed reports, when the committed pair is
    written; else None (other reports never rewrite them)."""
    pair = (Path(results_dir).resolve(), Path(out_dir).resolve())
    return SHIPPED_RESULTS.parent if pair == (SHIPPED_RESULTS, SHIPPED_REPORTS) else None


def report(results_dir, out_dir=None, docs_root=None):
    """Figures (both sizes) and tables per task from the result files under ``results_dir``,
    written to ``report_folder(results_dir, out_dir)``; then the report tables quoted in the .md
    files under ``docs_root`` are rewritten. PDFs carry no creation date (SOURCE_DATE_EPOCH 0
    unless set), so unchanged results give the same bytes. Returns the folder written."""
    out_dir = report_folder(results_dir, out_dir)
    check_writable(out_dir)
    os.environ.setdefault("SOURCE_DATE_EPOCH", "0")
    groups = task_groups(results_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for task, (group, left_out, verdicts) in groups.items():
        paths = draw_figures(group, task, out_dir) + write_tables(group, task, out_dir, verdicts)
        note = f" ({left_out} runs of other models/data/limits/seeds left out)" if left_out else ""
        print(f"{task}: {len(group)} runs{note} -> {', '.join(p.name for p in paths)} in {out_dir}")
    for path in write_ablations([verdicts for _, _, verdicts in groups.values()], out_dir):
        print(f"ablations: {path.name} in {out_dir}")
    for name, paths in plugin_sections(results_dir, out_dir).items():
        if paths:
            print(f"{name}: {', '.join(p.name for p in paths)} in {out_dir}")
    if docs_root:
        for path in sync_markdown(docs_root, out_dir):
            print(f"rewrote report tables in {path}")
    print(f"report written to {out_dir}")
    return out_dir
