"""The layout's rules: no import cycles, bench names no task, strategy or statistic, the report
needs no model code, and every report table quoted in a .md file is what `bench report` writes."""
import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

from bench.report import write_all_tables
from bench.report.docs import filled, markdown_files, quoted_blocks
from conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bench", "strategies", "tasks")


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path, modules):
    """Project modules ``path`` imports anywhere in it (top level or inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        found |= {name for name in names if name in modules}
    return found


def import_graph():
    files = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")]
    modules = {module_name(p): p for p in files}
    return {name: imported_modules(path, modules) - {name} for name, path in modules.items()}


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_the_project_modules():
    graph = import_graph()
    assert "bench.registry" in graph and graph["strategies.mi.oracle"] >= {"strategies.mi.guided"}
    assert cycles(graph) == []


def test_bench_imports_no_task_or_strategy_module():
    graph = import_graph()
    leaks = {m: sorted(d for d in deps if not d.startswith("bench")) for m, deps in graph.items()
             if m.startswith("bench")}
    assert {m: d for m, d in leaks.items() if d} == {}


# Registered names that are also ordinary English words: in prose they may be that word.
ENGLISH = {"sequential", "margin", "threshold", "learned"}
# (file under bench/, name) hits in files this change did not own, left to be cleaned where they
# live: the test fails on any hit not listed and on any listed one that is gone (shrink the list).
# Words that are a strategy's name and also the ordinary term for a quantity bench must name;
# each stays only while it is still there (a stale entry fails too).
ALLOWED = {("core.py", "margin"): "StepState.margin, the top-two probability gap every confidence rule may read",
           ("settings.py", "margin"): "Verdicts.margin, the non-inferiority margin (the statistical term)",
           ("report/page.py", "margin"): "plotly's layout margin (the page's plot), not the strategy"}


def plugin_names():
    """Every task, strategy and statistic name a plugin registers (statistics bench itself
    registers, such as ``mean``, are bench's own and not counted)."""
    from bench.paired import STATISTICS
    from bench.registry import ORIGINS, STRATEGIES, TASKS, load_plugins
    load_plugins()
    load_plugins("statistics")      # as bench.paired.statistic loads them
    names = set(TASKS) | set(STRATEGIES)
    names |= {n for n in STATISTICS if not str(ORIGINS.get(("statistic", n), "bench")).startswith("bench")}
    return names


def word(name):
    return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", re.I)


def as_code(name):
    """``name`` written as code inside prose: in backticks or quotes, or as a spec (``name:key=``)."""
    n = re.escape(name)
    return re.compile(rf"[`'\"]{n}[`'\"]|(?<![A-Za-z0-9_]){n}:\w+=", re.I)


def defined_identifiers(tree):
    """(line, identifier) of every name the module binds: functions, classes, arguments,
    assignment and loop targets, attributes assigned, keywords, import aliases and imported modules."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.lineno, node.name
        elif isinstance(node, ast.arg):
            yield node.lineno, node.arg
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            yield node.lineno, node.attr
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.lineno, node.arg
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            for part in modules + [a.name for a in node.names] + [a.asname for a in node.names if a.asname]:
                for piece in part.split("."):
                    yield node.lineno, piece


def name_hits(source, names, where="?"):
    """Where ``source`` names one of ``names``. The rule, strict for code and string literals:

    - an identifier the module binds (function, class, argument, variable, attribute, keyword,
      import) whose ``_``-separated words contain a name (``topk``, ``topk_line``, ``mi_eb``);
    - a string literal (docstrings and f-strings' text included) holding a name as a whole
      word, case-insensitive (``"sudoku"``, ``"topk:k=3"``, ``"* = sequential"``);
    - except that a name which is also an ordinary English word (ENGLISH: ``sequential``,
      ``margin``, ``threshold``, ``learned``) counts in a string with a space in it (prose:
      docstrings, messages, table headers) only where written as code there: in backticks or
      quotes, or as a spec (``threshold:tau=0.9``). A string without spaces (a key, a spec, a
      value compared against) is code: every name counts there.
    """
    tree = ast.parse(source)
    hits = []
    for line, ident in defined_identifiers(tree):
        words = ident.lower().split("_")
        spans = {"_".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, len(words) + 1)}
        hits += [f"{where}:{line}: identifier {ident} names {n}" for n in sorted(names & spans)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            prose = bool(re.search(r"\s", text.strip()))
            for n in sorted(names):
                pattern = as_code(n) if prose and n in ENGLISH else word(n)
                if pattern.search(text):
                    hits.append(f"{where}:{node.lineno}: string {text[:60]!r} names {n}")
    return hits


def bench_hits(names):
    hits = {}
    for path in sorted((ROOT / "bench").rglob("*.py")):
        rel = path.relative_to(ROOT / "bench").as_posix()
        found = name_hits(path.read_text(), names, rel)
        if found:
            hits[rel] = found
    return hits


def test_the_name_checker_catches_a_planted_name():
    names = plugin_names()
    assert {"sudoku", "topk", "sequential", "margin", "pooled_jsd"} <= names and "mean" not in names
    planted = [("X = 1\ndef f():\n    return 'topk:k=3'\n", "topk"),
               ('def f():\n    """Draw the Sudoku board."""\n', "sudoku"),
               ("def topk_line():\n    pass\n", "topk"),
               ("def f(mi_eb=1):\n    pass\n", "mi_eb"),
               ("from strategies.mi import contexts\n", "mi"),
               ("x = {'statistic': 'pooled_jsd'}\n", "pooled_jsd"),
               ("x = 'sequential'\n", "sequential"),
               ("x = f'{t}: 95% CIs, * = `sequential`'\n", "sequential"),
               ('def f():\n    """Slower than ``threshold`` here."""\n', "threshold")]
    for source, name in planted:
        assert any(h.endswith(f"names {name}") for h in name_hits(source, names)), source
    clean = 'def f(tolerance):\n    """A run within the margin; a sequential scan of the mean."""\n    return "mean"\n'
    assert name_hits(clean, names) == []
    assert name_hits("def f(margin):\n    pass\n", names) != []     # an identifier is code: strict


def test_bench_names_no_task_strategy_or_statistic():
    """Every .py under bench/ (recursively), by the rule in ``name_hits``: no hit but the ALLOWED
    ones, and every ALLOWED one still there (a cleaned file leaves the list)."""
    hits = bench_hits(plugin_names())
    found = {(rel, h.rsplit(" names ", 1)[1]) for rel, lines in hits.items() for h in lines}
    new = sorted(h for rel, lines in hits.items() for h in lines if (rel, h.rsplit(" names ", 1)[1]) not in ALLOWED)
    assert new == []
    assert sorted(set(ALLOWED) - found) == [], "no longer named there: remove from ALLOWED"


def test_no_private_name_is_imported_across_modules():
    private = []
    for path in [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                private += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert private == []


def report_modules(results, out, figures=True):
    """(exit status and stderr, the heavy modules imported) of `bench report` over ``results``; without
    ``figures`` the per-task figures are not drawn (three quarters of a report's time)."""
    skip = "import bench.report.build as b; b.draw_figures = lambda *a, **k: []; " if not figures else ""
    code = (f"import sys; {skip}from bench.cli import main; "
            f"main(['report', '--results', {str(results)!r}, '--out', {str(out)!r}]); "
            "heavy = sorted(m for m in ('torch', 'esm') if m in sys.modules); print('HEAVY', heavy)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    return proc.returncode, proc.stderr, proc.stdout


def test_report_runs_without_model_code(tmp_path):
    """The whole committed report (about 5 CPU minutes: protein's claims are tested on two
    references); slow (tests/conftest.py SLOW), its fast twin below reads the CI baseline."""
    code, err, out = report_modules(ROOT / "results", tmp_path)
    assert code == 0, err
    assert "HEAVY []" in out
    assert (tmp_path / "mi_sudoku.md").exists() and (tmp_path / "pareto_protein_judge_w1.png").exists()


def test_report_of_every_family_runs_without_model_code(tmp_path):
    """The same on the CI baseline's Sudoku runs (every strategy family: tables, claims, the page and the
    learned-order curves), and still no model code imported; the per-task figures of every family are
    drawn by the slow test above (the committed results hold every family)."""
    shutil.copytree(ROOT / "baselines" / "ci" / "sudoku", tmp_path / "results" / "sudoku")
    code, err, out = report_modules(tmp_path / "results", tmp_path / "reports", figures=False)
    assert code == 0, err
    assert "HEAVY []" in out
    written = {path.name for path in (tmp_path / "reports").iterdir()}
    assert {"table_sudoku.md", "claims_sudoku.md"} <= written and any(name.startswith("learned_") for name in written)


def test_markdown_blocks_are_filled_from_the_named_report_file(tmp_path):
    (tmp_path / "t.md").write_text("| a |\n")
    text = "intro\n<!-- report:t.md -->\nold\n<!-- /report:t.md -->\nend\n"
    assert filled(text, tmp_path) == "intro\n<!-- report:t.md -->\n| a |\n<!-- /report:t.md -->\nend\n"
    assert quoted_blocks(text) == [("t.md", "old\n")]


def test_every_committed_markdown_table_is_what_bench_report_writes(tmp_path):
    written = {p.name: p.read_text().rstrip("\n") + "\n" for p in write_all_tables(ROOT / "results", tmp_path)}
    blocks = [(path, name, body) for path in markdown_files(ROOT) for name, body in quoted_blocks(path.read_text())]
    assert {name for _, name, _ in blocks} >= {"budgets_sudoku.md", "budgets_protein.md"}
    stale = [f"{path.relative_to(ROOT)}: {name}" for path, name, body in blocks if written.get(name) != body]
    assert stale == [], "run `python -m bench report` to rewrite them"


def test_the_command_line_starts_without_model_code():
    code = ("import sys; from bench.cli import build_parser; build_parser().format_help(); "
            "print('HEAVY', sorted(m for m in ('torch', 'esm', 'numba') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout
    help_text = run_cli("--help")
    assert help_text.returncode == 0 and " mi " in help_text.stdout   # a plugin's subcommand is listed


def test_run_and_report_import_each_other_nowhere():
    """Issue 49: making runs (bench.run) and reading them (bench.report) share what a result is
    through bench.results, never through each other."""
    graph = import_graph()
    crossing = sorted((name, other) for name, imports in graph.items() for other in imports
                      for a, b in (("bench.run", "bench.report"), ("bench.report", "bench.run"))
                      if (name == a or name.startswith(a + ".")) and (other == b or other.startswith(b + ".")))
    assert not crossing, crossing


def globbed_patterns(path):
    """The string patterns ``path`` passes to glob/rglob calls (and to glob.glob)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("glob", "rglob", "iglob"):
            found += [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
            found += [part.value for arg in node.args if isinstance(arg, ast.JoinedStr)
                      for part in arg.values if isinstance(part, ast.Constant)]
    return found


def test_only_bench_results_lists_result_folders():
    """Issue 49: one scanner of result folders. No module outside bench/results globs for result
    files (.json summaries, .jsonl records); they go through bench.results.Store."""
    listing = sorted(str(path.relative_to(ROOT)) for package in PACKAGES for path in (ROOT / package).rglob("*.py")
                     if not path.is_relative_to(ROOT / "bench" / "results")
                     and any(p.endswith((".json", ".jsonl")) or p.endswith("*.json*") for p in globbed_patterns(path)))
    assert not listing, listing
