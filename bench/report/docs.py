"""Report tables quoted in Markdown files: the text between ``<!-- report:NAME -->`` and
``<!-- /report:NAME -->`` is the file NAME that `bench report` wrote, never typed by hand."""
import os
import re
from pathlib import Path

from bench.errors import BenchError

BLOCK = re.compile(r"(<!-- report:(?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /report:(?P=name) -->)", re.S)
SKIP_DIRS = {"results", "reports", "baselines", "node_modules", "build"}


def markdown_files(root):
    """Every .md file under ``root``, outside hidden folders and the generated ones."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        found += [Path(folder) / f for f in sorted(files) if f.endswith(".md")]
    return found


def quoted_blocks(text):
    """[(name, body)] of every report block in ``text``."""
    return [(m["name"], m["body"]) for m in BLOCK.finditer(text)]


def filled(text, reports_dir):
    """``text`` with every report block's body replaced by the current file under ``reports_dir``."""
    def body(match):
        source = Path(reports_dir) / match["name"]
        if not source.is_file():
            raise BenchError(f"a Markdown block quotes {match['name']}, which bench report did not write "
                             f"under {reports_dir}")
        return match.group(1) + source.read_text().rstrip("\n") + "\n" + match.group(4)
    return BLOCK.sub(body, text)


def sync_markdown(root, reports_dir):
    """Rewrite the report blocks of every .md under ``root``; returns the files that changed."""
    changed = []
    for path in markdown_files(root):
        text = path.read_text()
        new = filled(text, reports_dir) if BLOCK.search(text) else text
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed
