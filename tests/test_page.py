"""reports/index.html (bench.report.page): one self-contained file, its tables the Markdown's, its
plots tested in a real headless Chromium (Debian's chromium and chromium-driver, through selenium):
no console error, no request to any host, one trace per family, a legend click hides a family,
hovering a point shows its spec; a screenshot of each task's plot goes to the test's tmp folder.

Without the browser the browser tests skip with one line, except in CI (CI=true), where they fail."""
import json
import os
import re
import shutil
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import ROOT

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
COMMITTED = ROOT / "reports" / "index.html"
# what would load something from a host (a plain <a href> link in prose would not)
RESOURCE = re.compile(r"""src\s*=\s*["']?\s*(?:https?:)?//|<link\b|url\(\s*["']?\s*(?:https?:)?//|@import""", re.I)


def run(label, passes, outcomes, params, task="sudoku"):
    """A result summary with its per-input records (what `bench report` reads), as the runner writes it."""
    accuracy = sum(outcomes) / len(outcomes)
    metrics = [{"name": "exact_accuracy", "label": "exact-board accuracy", "value": accuracy,
                "ci_low": accuracy - 0.04, "ci_high": accuracy + 0.04, "higher_is_better": True, "n": len(outcomes),
                "per_input": {"statistic": "mean", "fields": ["exact"]}},
               {"name": "passes", "label": "passes", "value": passes, "ci_low": passes, "ci_high": passes,
                "higher_is_better": False, "n": len(outcomes),
                "per_input": {"statistic": "mean", "fields": ["passes"]}},
               {"name": "cell_accuracy", "label": "cell accuracy on blanks", "value": 0.5 + accuracy / 2,
                "ci_low": 0.49 + accuracy / 2, "ci_high": 0.51 + accuracy / 2, "higher_is_better": True,
                "n": len(outcomes)}]
    spec = label if ":" in label else f"{label}:"
    return {"schema_version": 1, "task": task, "strategy": label.split(":")[0], "label": label,
            "headline": "exact_accuracy", "metrics": metrics, "n_samples": len(outcomes), "wall_seconds": 1.0,
            "model": {"id": "m1"},
            "config": {"strategy_spec": spec, "strategy_params": params, "seed": 0, "limit": None, "data_id": "d1",
                       "batch_size": 50}, "provenance": {"finished_at": "2026-01-01T00:00:00+00:00"}}


def outcomes(correct, n=200):
    return [1] * correct + [0] * (n - correct)


RUNS = [run("sequential", 50, outcomes(120), {}),
        run("eb:gamma=0.1", 10, outcomes(118), {"gamma": 0.1}), run("eb:gamma=1", 5, outcomes(80), {"gamma": 1.0}),
        run("topk:k=2", 25, outcomes(110), {"k": 2}), run("topk:k=5", 12, outcomes(90), {"k": 5}),
        run("threshold:tau=0.9", 16, outcomes(112), {"tau": 0.9}),
        run("threshold:tau=0.5", 8, outcomes(70), {"tau": 0.5})]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A results folder a user made and what `bench report --results DIR` writes into DIR/reports:
    everything but the PNG/PDF figures (matplotlib's, tested in test_report.py, and the plugins'
    training curves, a minute and a half on 2 cores, which do not touch the page)."""
    from bench.report import build
    from bench.results import records_file_text, text_digest
    results = tmp_path_factory.mktemp("page") / "results"
    results.mkdir()
    for summary in RUNS:
        name = re.sub(r"\W", "_", summary["label"])
        exact = outcomes(round(summary["metrics"][0]["value"] * 200))
        text = records_file_text(summary["config"], [{"index": i, "exact": e, "passes": summary["metrics"][1]["value"]}
                                                     for i, e in enumerate(exact)])
        summary = dict(summary, records_file=f"{name}.jsonl", records_sha256=text_digest(text))
        (results / f"{name}.json").write_text(json.dumps(summary))
        (results / f"{name}.jsonl").write_text(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(build, "draw_figures", lambda *args, **kwargs: [])
        patch.setattr(build, "plugin_sections", lambda *args, **kwargs: {})
        assert build.report(results) == results / "reports"
    return results / "reports"


class Tables(HTMLParser):
    """Every <table> of a page as [header, rows] of cell texts, by the id of the heading before it."""

    def __init__(self):
        super().__init__()
        self.tables, self.heading, self.cell, self.row = {}, None, None, None

    def handle_starttag(self, tag, attrs):
        if tag in ("h2", "h3"):
            self.heading = dict(attrs).get("id")
        elif tag == "table":
            self.tables.setdefault(self.heading, [])
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.row is not None:
            self.row.append(self.cell.strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self.tables[self.heading].append(self.row)
            self.row = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def page_tables(path):
    parser = Tables()
    parser.feed(Path(path).read_text())
    return parser.tables


def markdown_cells(path):
    """The rows of a Markdown table file as the page shows their text (no ** or backticks)."""
    lines = [line for line in Path(path).read_text().splitlines() if line.startswith("|")]
    rows = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in lines]
    return [[re.sub(r"\*\*|`", "", c) for c in row] for row in rows[:1] + rows[2:]]


def page_data(path):
    text = Path(path).read_text()
    return json.loads(re.search(r'<script type="application/json" id="page-data">(.*?)</script>', text, re.S)[1]
                      .replace("<\\/", "</"))


def own_text(page):
    """The page less the plotly.js bundle it inlines (that text, byte for byte, from the plotly
    package: its map styles name tile servers that no scatter plot asks; the browser tests show
    that nothing is fetched)."""
    from plotly.offline import get_plotlyjs
    text = Path(page).read_text()
    bundle = f"<script>{get_plotlyjs()}</script>"
    assert text.count(bundle) == 1
    return text.replace(bundle, "")


def test_the_page_is_one_file_that_asks_no_host_for_anything(made):
    for page in (made / "index.html", COMMITTED):
        text = own_text(page)
        assert not RESOURCE.search(text), RESOURCE.search(text)
        assert "<script src" not in text and "<link" not in text and "<img" not in text and "<iframe" not in text
    assert COMMITTED.stat().st_size < 10 * 2 ** 20


def test_the_committed_page_shows_every_committed_task():
    tasks = {json.loads(p.read_text())["task"] for p in (ROOT / "results").rglob("*.json")}
    data, text = page_data(COMMITTED), COMMITTED.read_text()
    assert tasks <= set(data["plots"])
    for task in tasks:
        assert f'<section class="task" id="{task}">' in text and f'id="{task}-budgets"' in text


def test_the_page_tables_are_the_markdown_tables(made):
    """One source: every cell of the page's budget, speed-up, cost and run tables is the Markdown's."""
    tables = page_tables(made / "index.html")
    for anchor, stem in (("budgets", "budgets"), ("speedup", "speedup"), ("cost", "cost"), ("runs", "table")):
        assert tables[f"sudoku-{anchor}"] == markdown_cells(made / f"{stem}_sudoku.md"), anchor
    claims = tables["sudoku-claims"]
    text = (made / "claims_sudoku.md").read_text()
    assert claims[0][3:] == ["p", "Holm p", "verdict"] and len(claims) > 3
    for row in claims[1:]:
        assert row[2] in text and f"Holm p {row[4]}" in text     # each claim's difference and Holm p, as printed


def test_the_plotted_points_are_the_run_table_numbers(made):
    import csv
    rows = {r["label"]: r for r in csv.DictReader((made / "table_sudoku.csv").open())}
    figure = page_data(made / "index.html")["plots"]["sudoku"][0]
    families = [t for t in figure["data"] if t["meta"]["role"] == "family"]
    assert sorted(t["name"] for t in families) == ["eb", "sequential", "threshold", "topk"]
    for trace in families:
        for label, x, y, low in zip(trace["meta"]["runs"], trace["x"], trace["y"], trace["error_y"]["arrayminus"]):
            assert (x, y) == (float(rows[label]["passes"]), float(rows[label]["exact_accuracy"]))
            assert y - low == pytest.approx(float(rows[label]["exact_accuracy_ci_low"]))


# --- in a real browser -----------------------------------------------------------------------------

def browser():
    """A headless Chromium under selenium, or a skip (a failure in CI) naming what is missing."""
    missing = [name for name, path in (("chromium", CHROMIUM), ("chromedriver", DRIVER)) if path is None]
    try:
        from selenium import webdriver
    except ImportError:
        missing.append("selenium (pip install -e '.[dev]')")
    if missing:
        message = (f"no browser for the page test: {', '.join(missing)} missing "
                   f"(apt-get install chromium chromium-driver)")
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # every host name fails to resolve: a request the page made would be a console error
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000",
                 "--disable-gpu", "--host-resolver-rules=MAP * ~NOTFOUND"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=DRIVER))


@pytest.fixture(scope="module")
def driver():
    chrome = browser()
    yield chrome
    chrome.quit()


def opened(driver, page):
    """Open ``page`` from disk and wait for every plot to be drawn."""
    driver.get(Path(page).resolve().as_uri())
    driver.set_script_timeout(60)
    driver.execute_async_script("window.pageReady.then(() => arguments[0](true))")
    return page_data(page)


def traces(driver, task):
    return driver.execute_script(
        f"return document.getElementById('plot-{task}').data.map(t => [t.meta.role, t.meta.family || null, "
        f"t.visible === undefined ? true : t.visible])")


def family_visible(driver, task, family):
    """Whether the family's trace is drawn (True) or hidden to its legend entry ('legendonly')."""
    return next(v for role, fam, v in traces(driver, task) if role == "family" and fam == family)


def check_legend_click_hides(driver, task, family):
    """A click on the family's legend entry hides its points and frontier; another shows them."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    entry = next(e for e in driver.find_elements(By.CSS_SELECTOR, f"#plot-{task} .legend .traces")
                 if e.text.strip() == family)
    entry.find_element(By.CSS_SELECTOR, ".legendtoggle").click()
    WebDriverWait(driver, 5).until(lambda d: family_visible(d, task, family) == "legendonly")
    states = {(role, fam): visible for role, fam, visible in traces(driver, task)}
    assert states.get(("frontier", family), "legendonly") == "legendonly", states
    time.sleep(0.4)                          # past plotly's double-click window: the next click is a single one
    entry.find_element(By.CSS_SELECTOR, ".legendtoggle").click()
    WebDriverWait(driver, 5).until(lambda d: family_visible(d, task, family) is True)


def check_hover_shows_spec(driver, task, figure):
    """Move the mouse onto a drawn point: the hover label names its run's spec."""
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    point = driver.find_elements(By.CSS_SELECTOR, f"#plot-{task} .scatterlayer .trace .points path")[0]
    x, y = driver.execute_script("const r = arguments[0].getBoundingClientRect(); "
                                 "return [Math.round(r.x + r.width / 2), Math.round(r.y + r.height / 2)]", point)
    mouse = ActionBuilder(driver)
    mouse.pointer_action.move_to_location(x, y)    # where the point is drawn (moving to the element would scroll)
    mouse.perform()
    WebDriverWait(driver, 5).until(lambda d: d.find_element(By.CSS_SELECTOR, f"#plot-{task} .hoverlayer").text)
    hover = driver.find_element(By.CSS_SELECTOR, f"#plot-{task} .hoverlayer").text
    assert "spec: " in hover and "mean passes" in hover and "inputs" in hover, hover
    specs = [t.split("spec: ")[1].split("<br>")[0] for trace in figure["data"] for t in trace.get("text", [])]
    assert any(spec in hover for spec in specs), hover


def check_page(driver, page, shots, clicks=None):
    """The checks of one page in the browser; a screenshot of each task's plot under ``shots``. The
    legend click is tried on the first ``clicks`` tasks (each redraws the plot twice: seconds)."""
    from selenium.webdriver.common.by import By
    data = opened(driver, page)
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    fetched = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert not [url for url in fetched if url.startswith(("http:", "https:"))], fetched
    for number, (task, figures) in enumerate(data["plots"].items()):
        drawn = traces(driver, task)
        families = [family for role, family, _ in drawn if role == "family"]
        expected = sorted({t["meta"]["family"] for t in figures[0]["data"] if t["meta"].get("family")})
        assert sorted(families) == expected and len(set(families)) == len(families), (task, families)
        legend = [e.text.strip() for e in driver.find_elements(By.CSS_SELECTOR, f"#plot-{task} .legend .traces")]
        assert set(expected) <= set(legend), (task, legend)
        plot = driver.find_element(By.ID, f"plot-{task}")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", plot)  # all of it in the window
        if clicks is None or number < clicks:
            check_legend_click_hides(driver, task, families[0])
        check_hover_shows_spec(driver, task, figures[0])
        plot.screenshot(str(shots / f"plot_{task}.png"))                                # with the hover label
    assert not [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_a_user_results_page_in_a_real_browser(driver, made, tmp_path):
    check_page(driver, made / "index.html", tmp_path)
    assert (tmp_path / "plot_sudoku.png").stat().st_size > 10_000


def test_the_metric_switch_and_sortable_tables_in_a_real_browser(driver, made):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    opened(driver, made / "index.html")
    Select(driver.find_element(By.ID, "metric-sudoku")).select_by_visible_text("cell accuracy on blanks")
    time.sleep(0.5)
    title, ys = driver.execute_script("const gd = document.getElementById('plot-sudoku'); return "
                                      "[gd.layout.yaxis.title.text, gd.data.filter(t => t.meta.role == 'family')"
                                      ".flatMap(t => t.y)]")
    assert title == "cell accuracy on blanks (higher is better)"
    assert sorted(ys) == sorted(r["metrics"][2]["value"] for r in RUNS)
    header = next(th for th in driver.find_elements(By.CSS_SELECTOR, "#sudoku-runs + table th")
                  if th.text.strip() == "mean passes")
    column = "Array.from(document.querySelectorAll('#sudoku-runs + table tbody tr')).map(r => r.cells[2].textContent)"
    for order in (sorted, lambda xs: sorted(xs, reverse=True)):
        header.click()
        passes = [float(text.split()[0]) for text in driver.execute_script(f"return {column}")]
        assert passes == order(passes) and len(set(passes)) > 2


def test_the_committed_page_in_a_real_browser(driver, tmp_path):
    check_page(driver, COMMITTED, tmp_path, clicks=1)
    tasks = page_data(COMMITTED)["plots"]
    assert sorted(p.name for p in tmp_path.glob("plot_*.png")) == sorted(f"plot_{t}.png" for t in tasks)


def test_the_markdown_the_report_writes_becomes_html():
    from bench.report.page import markdown_html
    text = "Intro with `code` and **bold**, *it*.\n\n- **idea**:\n  - at 8 passes: +0.1\n  - `a` minus `b`\n- two\n\n" \
           "| a | b |\n|---|---|\n| **x** | 1 < 2 |\n"
    assert markdown_html(text) == (
        "<p>Intro with <code>code</code> and <strong>bold</strong>, <em>it</em>.</p>"
        "<ul><li><strong>idea</strong>:<ul><li>at 8 passes: +0.1</li><li><code>a</code> minus <code>b</code>"
        "</li></ul></li><li>two</li></ul>"
        '<table class="sortable"><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td><strong>x</strong></td>'
        "<td>1 &lt; 2</td></tr></tbody></table>")
