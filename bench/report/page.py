"""reports/index.html: one self-contained page a reader explores, every script and style inlined
(plotly.js from the ``plotly`` package), no request to any host. Per task an interactive Pareto plot
(mean passes, log x, against the headline or any other metric: every run of a family with its 95%
CIs, the family's frontier as a line, a drawn order's bound as a range; hover names the run), then
the tables and claims of the Markdown reports.

One source: the plot reads the summaries and helpers the PNG figures read (``figures.split_runs``,
``error_bars``, ``family_front``, ``lower_end_of``) and the Costs the cost table reads; every table
is the rows ``render`` gives the Markdown files, and the prose the text of ``claims_<task>.md``,
``ablations.md`` and ``transfer.md``, turned into HTML here (``markdown_html``)."""
import html
import json
import re
from pathlib import Path

import numpy as np

from bench.multiplicity import ALPHA
from bench.report.figures import error_bars, family_front, lower_end_of, references_of, split_runs
from bench.report.render import (
    ablations_markdown,
    budget_rows,
    budget_shown_text,
    choices_markdown,
    ci_text,
    claims_markdown,
    cost_table,
    metric_names,
    metric_text,
    p_text,
    shown_text,
    speedup_table,
    summary_rows,
)
from bench.report.transfer import transfer_markdown
from bench.results.summary import mean_passes, metric_of

PAGE = "index.html"
# matplotlib markers (canvas.FAMILY_MARKERS) as plotly symbols, so a family looks as in the PNGs
SYMBOLS = {"o": "circle", "s": "square", "^": "triangle-up", "D": "diamond", "v": "triangle-down", "P": "cross",
           "X": "x", "<": "triangle-left", ">": "triangle-right"}
REFERENCE_COLOUR = "black"


# --- the plot --------------------------------------------------------------------------------------

def cost_by_spec(verdicts):
    """{strategy spec: its ScoredRun} of a task's verdicts (Costs pooled over seeds, as the cost table)."""
    return {} if verdicts is None else {run.summary["config"]["strategy_spec"]: run for run in verdicts.runs}


def hover_text(run, metric, scored, bound=None):
    """What hovering a point says: the run, its full spec, mean / p90 passes, batched steps, the
    metric and its interval, its seed and inputs (HTML, plotly's hover markup)."""
    lines = [f"<b>{html.escape(run['label'])}</b>", f"spec: {html.escape(run['config']['strategy_spec'])}",
             f"mean passes {metric_text(metric_of(run, 'passes'), 2)}"]
    if scored is not None and scored.cost is not None:
        c = scored.cost
        seeds = scored.summary.get("pooled_seeds", [run["config"]["seed"]])
        over = f" (over seeds {', '.join(map(str, seeds))})" if len(seeds) > 1 else ""
        lines.append(f"passes median {c.median:g}, p90 {c.p90:g}, max {c.max:g}; {c.batched_steps:g} batched steps "
                     f"({c.batches} batches of {c.batch_size}){over}")
    m = metric_of(run, metric)
    lines.append(f"{html.escape(m['label'])}: {metric_text(m)}")
    if bound is not None:
        lines.append(f"an upper bound (its order is drawn): range from {bound:.3g}")
    lines.append(f"seed {run['config']['seed']}, {run['n_samples']} inputs")
    return "<br>".join(lines)


def points_trace(family, runs, bounded, panel, style, costs):
    """One trace per family: its runs (filled markers, CIs both ways) and its bounded runs (open
    markers, the y bar reaching down to the range's lower end), a hover text each."""
    both = runs + bounded
    xs, xerr = error_bars(both, "passes")
    ys, yerr = error_bars(runs, panel.metric) if runs else ([], [[], []])
    lows = [lower_end_of(r, panel) for r in bounded]
    tops = [metric_of(r, panel.metric) for r in bounded]
    ys += [t["value"] for t in tops]
    below = yerr[0] + [max(0.0, t["value"] - low) for t, low in zip(tops, lows)]
    above = yerr[1] + [max(0.0, t["ci_high"] - t["value"]) for t in tops]
    symbol = SYMBOLS.get(style.marker, "circle")
    texts = [hover_text(r, panel.metric, costs.get(r["config"]["strategy_spec"]), low)
             for r, low in zip(both, [None] * len(runs) + lows)]
    return {"type": "scatter", "mode": "markers", "name": family, "legendgroup": family, "x": xs, "y": ys,
            "error_x": {"type": "data", "symmetric": False, "array": xerr[1], "arrayminus": xerr[0], "width": 2,
                        "thickness": 1, "color": style.colour},
            "error_y": {"type": "data", "symmetric": False, "array": above, "arrayminus": below, "width": 2,
                        "thickness": 1, "color": style.colour},
            "marker": {"color": style.colour, "size": 8, "line": {"color": style.colour, "width": 1.5},
                       "symbol": [symbol] * len(runs) + [f"{symbol}-open"] * len(bounded)},
            "text": texts, "hovertemplate": "%{text}<extra></extra>",
            "meta": {"family": family, "role": "family", "runs": [r["label"] for r in both]}}


def frontier_trace(family, runs, metric, style):
    """The family's Pareto frontier as a line (shown and hidden with its family's points)."""
    front = family_front(runs, metric)
    return {"type": "scatter", "mode": "lines", "name": f"{family} frontier", "legendgroup": family,
            "showlegend": False, "hoverinfo": "skip", "line": {"color": style.colour, "width": 1.5},
            "x": [metric_of(r, "passes")["value"] for r in front], "y": [metric_of(r, metric)["value"] for r in front],
            "meta": {"family": family, "role": "frontier"}}


def reference_trace(reference, metric):
    return {"type": "scatter", "mode": "markers", "name": f"reference: {reference['label']}",
            "legendgroup": "reference", "x": [metric_of(reference, "passes")["value"]],
            "y": [metric_of(reference, metric)["value"]],
            "marker": {"symbol": "star", "size": 14, "color": REFERENCE_COLOUR},
            "hoverinfo": "skip", "meta": {"role": "reference"}}


def log_ticks(low, high):
    """Tick values for a log passes axis from ``low`` to ``high``: 1, 2, 3, 4, 6, 8, 12, ... (the
    powers of two alone past a 64-fold range), so labels never crowd or read as '10, 2, 3'."""
    powers = [2 ** k for k in range(0, 21)]
    steps = powers if high / max(low, 1e-9) > 64 else sorted(powers + [3 * 2 ** k for k in range(0, 20)])
    inside = [t for t in steps if low / 1.3 <= t <= high * 1.3]
    return inside if len(inside) >= 2 else [t for t in steps if low / 4 <= t <= high * 4]


def metric_figure(group, task, metric, styles, costs):
    """The plotly figure (data and layout) of ``metric`` for one task's group, or None where no
    run estimates it."""
    panel = split_runs(group, task, metric)
    if not panel.exact:
        return None
    reference, _ = references_of(panel.exact, task)
    traces, shapes = [], []
    for family in sorted({r["strategy"] for r in panel.exact + panel.bounded}):
        runs = sorted((r for r in panel.exact if r["strategy"] == family), key=mean_passes)
        bounded = [r for r in panel.bounded if r["strategy"] == family]
        traces.append(points_trace(family, runs, bounded, panel, styles[family], costs))
        if len(runs) > 1:
            traces.append(frontier_trace(family, runs, metric, styles[family]))
    if reference is not None:
        traces.append(reference_trace(reference, metric))
        shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y",
                       "y0": metric_of(reference, metric)["value"], "y1": metric_of(reference, metric)["value"],
                       "line": {"color": REFERENCE_COLOUR, "width": 1, "dash": "dot"}})
    quality = panel.quality
    direction = "higher" if quality["higher_is_better"] else "lower"
    left = (f"; {len(panel.left_out)} runs that give no estimate of it are left out" if panel.left_out else "")
    passes = [metric_of(r, "passes")["value"] for r in panel.exact + panel.bounded]
    layout = {"xaxis": {"type": "log", "title": {"text": "mean forward passes per sample (log scale)"},
                        "tickvals": log_ticks(min(passes), max(passes))},
              "yaxis": {"title": {"text": f"{quality['label']} ({direction} is better)"}},
              "shapes": shapes, "hovermode": "closest", "hoverlabel": {"align": "left"},
              "height": max(600, 140 + 30 * sum(t.get("showlegend", True) for t in traces)),   # the legend fits
              "margin": {"t": 30, "r": 10},
              "legend": {"title": {"text": "family (click: hide/show)"}}}
    caption = (f"Every run of each family (filled markers, 95% CIs both ways) and its frontier (line); open markers "
               f"with a range are runs whose value is only an upper bound (their order is drawn){left}. "
               + (f"Star and dotted line: the reference, {reference['label']}." if reference else ""))
    return {"metric": metric, "label": quality["label"], "data": traces, "layout": layout, "caption": caption}


def task_figures(group, task, verdicts, styles):
    """[figure] of the headline, then every other metric of the task's runs."""
    headline = group[0]["headline"]
    names = [headline] + [n for n in metric_names(group) if n != headline]
    costs = cost_by_spec(verdicts)
    return [f for f in (metric_figure(group, task, name, styles, costs) for name in names) if f is not None]


# --- tables and prose ------------------------------------------------------------------------------

INLINE = [(re.compile(r"`([^`]+)`"), r"<code>\1</code>"), (re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"),
          (re.compile(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])"), r"<em>\1</em>"),
          # a link to a file beside the page (transfer.md's figure); no scheme, so nothing from a host
          (re.compile(r"\[([^\]]+)\]\(([\w./-]+)\)"), r'<a href="\2">\1</a>')]


def inline_html(text):
    """Markdown's inline code, bold, emphasis and links to files beside the page as HTML, the rest escaped."""
    text = html.escape(text, quote=False)
    for pattern, replacement in INLINE:
        text = pattern.sub(replacement, text)
    return text


def table_html(header, rows):
    """A sortable table (script: click a column's header) of the string cells a Markdown table holds."""
    head = "".join(f"<th>{inline_html(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{inline_html(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def markdown_table(lines):
    """(header, rows) of a Markdown table's lines."""
    cells = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in lines]
    return cells[0], cells[2:]     # the second line is the |---| rule


def markdown_html(text):
    """The Markdown that `bench report` writes (paragraphs, nested '- ' lists, tables, inline code,
    bold, emphasis) as HTML."""
    out, depth, lines, i = [], 0, text.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        item = re.match(r"^( *)- (.*)$", line)
        if line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            out += ["</li></ul>" * depth, table_html(*markdown_table(block))]
            depth = 0
            continue
        if item:
            level = len(item[1]) // 2 + 1
            if level > depth:
                out.append("<ul><li>" * (level - depth))
            else:
                out.append("</li></ul>" * (depth - level) + "</li><li>")
            depth = level
            out.append(inline_html(item[2]))
        elif line.strip():
            out.append("</li></ul>" * depth + f"<p>{inline_html(line)}</p>")
            depth = 0
        i += 1
    return "".join(out + ["</li></ul>" * depth])


def finite(value):
    """``value`` with every NaN or infinity (a bound without an estimate) as None: JSON has no NaN."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def claim_rows(v):
    """Header and rows of every claim in ``v``'s family: what it compares, its difference and CI,
    raw and Holm-adjusted p, and whether it is shown (the test dicts and verdicts claims_<task>.md prints)."""
    header = ["kind", "claim", f"difference in {v.headline} [95% CI]", "p", "Holm p", "verdict"]
    rows = []

    def row(kind, claim, t, verdict):
        rows.append([kind, claim, ci_text(t["diff"], t["ci_low"], t["ci_high"], signed=True), p_text(t["p"]),
                     p_text(t.get("p_holm", np.nan)), verdict])
    for lead in v.leads:
        pair = tuple(r.label for r in lead.runs) if lead.runs else (lead.best, lead.runner_up)
        row(f"lead at {lead.budget:g} passes", f"`{pair[0]}` minus `{pair[1]}`", lead.test,
            "shown" if lead.shown else "not shown")
    for r in v.speedup:
        verdict = {"yes": "shown", "no": "not shown: worse beyond the margin"}.get(r.verdict, "not shown")
        row("speed-up", f"`{r.run.label}` non-inferior to {v.reference} within {v.tolerance:g} "
                        f"({1 / r.ratio:.2f}x fewer passes)", r.diff, verdict)
    for idea, pairs, at_budgets in v.ablations:
        for t in at_budgets:
            row(f"ablation at {t['budget']:g} passes", f"{idea}: the idea minus its ablation", t, budget_shown_text(t))
        for pair in pairs:
            row("ablation, run by run", f"{idea}: `{pair['run']}` minus `{pair['ablation']}`", pair["quality"],
                shown_text(pair["quality"]))
    return header, rows


def table_section(anchor, title, table):
    """[(anchor, title, HTML)] of a (header, rows) table, or [] where it has no row (`bench report`
    writes no file for it either: build.write_tables)."""
    return [(anchor, title, table_html(*table))] if table[1] else []


def task_sections(task, group, left_out, verdicts):
    """[(anchor, title, HTML)] of one task's tables and claims, each from the rows its Markdown file holds."""
    runs_title = f"Every run (seed {group[0]['config']['seed']}, {len(group)} runs; table_{task}.md)"
    runs = [(f"{task}-runs", runs_title, table_html(*summary_rows(group)))]
    if verdicts is None:
        return runs
    v = verdicts
    sections = (table_section(f"{task}-budgets", f"Strategies x pass budgets (budgets_{task}.md)", budget_rows(v))
                + table_section(f"{task}-speedup", f"Speed-up at {v.reference} quality (speedup_{task}.md)",
                                speedup_table(v))
                + [(f"{task}-claims", f"Claims: {v.family} p-values, one Holm family (claims_{task}.md)",
                    table_html(*claim_rows(v)) + '<details><summary>the claims as sentences</summary>'
                    + markdown_html(claims_markdown(v)) + "</details>")]
                + table_section(f"{task}-cost", f"Cost: passes as users pay them (cost_{task}.md)", cost_table(v)))
    if v.choices is not None:
        sections.append((f"{task}-choices", f"Choices made on validation (choices_{task}.md)",
                         markdown_html(choices_markdown(v))))
    return sections + runs


# --- the page --------------------------------------------------------------------------------------

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#222}
header,main{max-width:1200px;margin:auto;padding:0 16px}
nav a{margin-right:12px}
section.task{border-top:2px solid #ccc;margin-top:24px}
table{border-collapse:collapse;font-size:13px;margin:8px 0;display:block;overflow-x:auto}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3;cursor:pointer;position:sticky;top:0}
th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}
code{font-size:12px;background:#f6f6f6;padding:0 2px}
.plot{width:100%;min-height:600px}
select{max-width:60%}
.toc a{margin-right:10px;font-size:13px}
.caption{color:#555;font-size:13px}
details{margin:8px 0}
"""

SCRIPT = r"""
const DATA = JSON.parse(document.getElementById('page-data').textContent);
function draw(task, index) {
  const fig = DATA.plots[task][index];
  document.getElementById('caption-' + task).textContent = fig.caption;
  return Plotly.react('plot-' + task, fig.data, fig.layout, {displaylogo: false, responsive: true});
}
window.pageReady = Promise.all(Object.keys(DATA.plots).map(task => {
  const select = document.getElementById('metric-' + task);
  select.addEventListener('change', () => draw(task, Number(select.value)));
  return draw(task, 0);
}));
function sortKey(text) {
  const m = text.replace(/^[<>~\s]+/, '').match(/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?/i);
  return m ? parseFloat(m[0]) : null;
}
document.querySelectorAll('table.sortable th').forEach((th, _) => th.addEventListener('click', () => {
  const table = th.closest('table'), body = table.tBodies[0], column = th.cellIndex;
  const descending = th.classList.contains('asc');
  table.querySelectorAll('th').forEach(h => h.classList.remove('asc', 'desc'));
  th.classList.add(descending ? 'desc' : 'asc');
  const rows = Array.from(body.rows), sign = descending ? -1 : 1;
  rows.sort((a, b) => {
    const x = a.cells[column].textContent.trim(), y = b.cells[column].textContent.trim();
    const kx = sortKey(x), ky = sortKey(y);
    if (kx === null && ky === null) return sign * x.localeCompare(y);
    if (kx === null) return 1;
    if (ky === null) return -1;
    return sign * (kx - ky);
  });
  rows.forEach(r => body.appendChild(r));
}));
"""


def script_json(value):
    """JSON safe inside a <script> element."""
    return json.dumps(finite(value), allow_nan=False).replace("</", "<\\/")


def plot_html(task, figures):
    options = "".join(f'<option value="{i}">{html.escape(f["label"])}</option>' for i, f in enumerate(figures))
    return (f'<p><label>metric: <select id="metric-{task}">{options}</select></label> '
            f'(hover a point for its run; click a legend entry to hide or show a family; drag to zoom, '
            f'double-click to reset)</p><div class="plot" id="plot-{task}"></div>'
            f'<p class="caption" id="caption-{task}"></p>')


def task_html(task, group, left_out, verdicts, figures):
    """A task's section: what it holds, links to its parts, its plot, its tables and claims."""
    note = f"; {left_out} runs of other models/data/limits/seeds left out" if left_out else ""
    headline = html.escape(figures[0]["label"]) if figures else "-"
    sections = task_sections(task, group, left_out, verdicts)
    anchors = [f"{task}-plot"] + [anchor for anchor, _, _ in sections]
    links = "".join(f'<a href="#{a}">{a.removeprefix(task + "-")}</a>' for a in anchors)
    plot = plot_html(task, figures) if figures else "<p>no run estimates a metric to plot</p>"
    parts = "".join(f'<h3 id="{anchor}">{html.escape(title)}</h3>{body}' for anchor, title, body in sections)
    return (f'<section class="task" id="{task}"><h2>{task}</h2><p>{len(group)} runs on {group[0]["n_samples"]} '
            f'inputs{note}; headline: {headline}.</p><p class="toc">{links}</p><h3 id="{task}-plot">Pareto plot</h3>'
            f'{plot}{parts}</section>')


def page_html(groups, styles, title, others=None):
    """The whole page of ``groups`` (build.task_groups: task -> (group, left out, verdicts)); ``others``:
    the tasks' other models (build.other_model_groups), for transfer.md."""
    from plotly.offline import get_plotlyjs
    verdicts = [v for _, _, v in groups.values()]
    figures = {task: task_figures(group, task, v, styles) for task, (group, _, v) in groups.items()}
    extra = [(anchor, name, markdown_html(text)) for anchor, name, text in
             (("ablations", "Ablations across tasks (ablations.md)", ablations_markdown([v for v in verdicts if v])),
              ("transfer", "Transfer to a model trained elsewhere (transfer.md)", transfer_markdown(verdicts, others)))
             if text]
    links = [f'<a href="#{task}">{task}</a>' for task in groups] + [f'<a href="#{a}">{a}</a>' for a, _, _ in extra]
    body = "".join(task_html(task, *groups[task], figures[task]) for task in groups)
    body += "".join(f'<section class="task" id="{a}"><h2>{html.escape(name)}</h2>{text}</section>'
                    for a, name, text in extra)
    data = {"plots": {task: f for task, f in figures.items() if f}}
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{STYLE}</style>'
            f'<script>{get_plotlyjs()}</script></head><body><header><h1>{html.escape(title)}</h1>'
            f'<p>Made by <code>python -m bench report</code> from the result files alone; every number is the one '
            f'the Markdown reports beside this page print. 95% CIs; a claim is <em>shown</em> only where its '
            f'Holm-adjusted p is below {ALPHA:g}.</p><nav>{" ".join(links)}</nav></header><main>{body}</main>'
            f'<script type="application/json" id="page-data">{script_json(data)}</script>'
            f'<script>{SCRIPT}</script></body></html>\n')


def write_page(groups, out_dir, styles, title="unmask-bench results", others=None):
    """Write ``out_dir``/index.html of ``groups`` (and the tasks' ``others`` models); its path."""
    path = Path(out_dir) / PAGE
    path.write_text(page_html(groups, styles, title, others))
    return path
