"""The docs' budgets and links: README.md at most 10 KB, every hand-written doc (docs/*.md and
tasks/*/README.md) at most 30 KB, and every relative link between them resolves, anchors included.

A doc counts as generated, and is exempt from the 30 KB budget, only when every non-blank line of
it lies inside a `<!-- report:NAME -->` block that `bench report` writes (bench/report/docs.py):
such a file is a copy of reports/NAME and is sized by the results, not by a writer. The set is
computed, not listed; today it is empty (docs/ablations.md, once mostly generated, now links to
reports/ablations.md and reports/transfer.md instead of quoting them). Everything under reports/
is written by `bench report` and is outside these budgets. Measurements of particular days go
into docs/lab.md, which the budget holds like any other doc."""
import re
from pathlib import Path

from bench.report.docs import BLOCK

ROOT = Path(__file__).resolve().parent.parent
README_BUDGET = 10 * 1024
DOC_BUDGET = 30 * 1024
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def docs():
    """README.md, docs/*.md and tasks/*/README.md: what a reader opens."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "tasks").glob("*/README.md"))]


def is_generated(text):
    """True when every non-blank line of ``text`` lies inside a report block."""
    return not BLOCK.sub("", text).strip()


def prose_lines(text):
    """The lines of ``text`` outside fenced code blocks (a `#` there is no heading)."""
    inside = False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            inside = not inside
        elif not inside:
            yield line


def anchors(text):
    """The anchors GitHub gives the headings of ``text``: lower case, punctuation dropped, spaces
    as hyphens, a repeated one suffixed -1, -2, ..."""
    seen, found = {}, set()
    for line in prose_lines(text):
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(path, root=ROOT):
    """Relative links of ``path`` whose file, or whose heading in a .md file, does not exist,
    named relative to ``root``. A link's text may run over a line break."""
    broken = []
    for target in LINK.findall("\n".join(prose_lines(path.read_text()))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):   # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{path.relative_to(root)}: {target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text()):
            broken.append(f"{path.relative_to(root)}: {target} (no such heading)")
    return broken


def test_readme_is_at_most_10_kb():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_BUDGET, f"README.md is {size} bytes; move detail into docs/"


def test_every_hand_written_doc_is_at_most_30_kb():
    over = [f"{p.relative_to(ROOT)}: {len(p.read_bytes())} bytes" for p in docs()
            if len(p.read_bytes()) > DOC_BUDGET and not is_generated(p.read_text())]
    assert over == [], "split the doc, link generated tables in reports/, or move dated numbers to docs/lab.md"


def test_a_doc_is_generated_only_when_nothing_lies_outside_its_report_blocks():
    block = "<!-- report:t.md -->\n| a |\n<!-- /report:t.md -->\n"
    assert is_generated(block + "\n" + block.replace("t.md", "u.md"))
    assert not is_generated("# Title\n\n" + block)
    assert [p.name for p in docs() if is_generated(p.read_text())] == []


def test_every_relative_link_between_the_docs_resolves():
    assert [b for p in docs() for b in broken_links(p)] == []


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path):
    (tmp_path / "a.md").write_text("# Top: `--x` and y\n\n## Top: `--x` and y\n\n```\n# not a heading\n```\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#top---x-and-y) [ok](a.md#top---x-and-y-1) [bad](a.md#not-a-heading) [bad\n"
                    "over a line](gone.md) [web](https://example.org/x.md) [self](#here)\n\n## Here\n")
    assert broken_links(page, tmp_path) == ["b.md: a.md#not-a-heading (no such heading)",
                                            "b.md: gone.md (no such file)"]
