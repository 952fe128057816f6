"""reports/README.md: every figure one `bench report` drew, shown with the one line on how to
read it that its file carries (``canvas.save_figure``'s caption), and links to its PDF."""
from pathlib import Path

from bench.report.canvas import caption_of

HEADER = """# Figures

Made by `python -m bench report` from the result files alone; each figure is written as PNG (shown
here) and PDF (embedded TrueType fonts), the Pareto figures at two-column (7 in) and one-column
(3.3 in, `_1col`) widths. Every number behind them is in the tables beside them (`budgets_*`,
`speedup_*`, `table_*`); the claims are in `claims_*.md`.
"""


def write_gallery(out_dir, paths):
    """Write ``out_dir``/README.md for the PNGs among ``paths``, in the order drawn; its path."""
    lines = [HEADER]
    for png in (Path(p) for p in paths if Path(p).suffix == ".png"):
        caption = caption_of(png) or "(no caption)"
        lines += [f"## {png.stem}", "", f"![{png.stem}]({png.name})", "",
                  f"{caption} [PDF]({png.with_suffix('.pdf').name})", ""]
    path = Path(out_dir) / "README.md"
    path.write_text("\n".join(lines))
    return path
