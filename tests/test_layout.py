"""The layout's rules: no import cycles, bench names no task or strategy, the report needs no
model code, and every report table quoted in a .md file is what `bench report` writes."""
import ast
import re
import subprocess
import sys
from pathlib import Path

from bench.docs import filled, markdown_files, quoted_blocks
from bench.report import write_all_tables

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


def test_only_presets_names_a_task_in_bench():
    naming = [p.name for p in sorted((ROOT / "bench").glob("*.py"))
              if re.search(r"sudoku|protein", p.read_text(), re.I)]
    assert naming == ["presets.py"]


def test_no_private_name_is_imported_across_modules():
    private = []
    for path in [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                private += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert private == []


def test_report_runs_without_model_code(tmp_path):
    code = ("import sys; from bench.cli import main; "
            f"main(['report', '--results', {str(ROOT / 'results')!r}, '--out', {str(tmp_path)!r}]); "
            "heavy = sorted(m for m in ('torch', 'esm') if m in sys.modules); print('HEAVY', heavy)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout
    assert (tmp_path / "mi_sudoku.md").exists() and (tmp_path / "pareto_protein_judge_w1.png").exists()


def test_markdown_blocks_are_filled_from_the_named_report_file(tmp_path):
    (tmp_path / "t.md").write_text("| a |\n")
    text = "intro\n<!-- report:t.md -->\nold\n<!-- /report:t.md -->\nend\n"
    assert filled(text, tmp_path) == "intro\n<!-- report:t.md -->\n| a |\n<!-- /report:t.md -->\nend\n"
    assert quoted_blocks(text) == [("t.md", "old\n")]


def test_every_committed_markdown_table_is_what_bench_report_writes(tmp_path):
    written = {p.name: p.read_text().rstrip("\n") + "\n" for p in write_all_tables(ROOT / "results", tmp_path)}
    blocks = [(path, name, body) for path in markdown_files(ROOT) for name, body in quoted_blocks(path.read_text())]
    assert {name for _, name, _ in blocks} >= {"table_sudoku.md", "table_protein.md"}
    stale = [f"{path.relative_to(ROOT)}: {name}" for path, name, body in blocks if written.get(name) != body]
    assert stale == [], "run `python -m bench report` to rewrite them"


def test_the_command_line_starts_without_model_code():
    code = ("import sys; from bench.cli import build_parser; build_parser().format_help(); "
            "print('HEAVY', sorted(m for m in ('torch', 'esm', 'numba') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout
    help_text = subprocess.run([sys.executable, "-m", "bench", "--help"], cwd=ROOT, capture_output=True,
                               text=True, timeout=120)
    assert help_text.returncode == 0 and " mi " in help_text.stdout   # a plugin's subcommand is listed
