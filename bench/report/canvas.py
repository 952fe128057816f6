"""What every report figure shares: the two print sizes, the colour-blind-safe family styles,
saving (PNG and PDF, a caption in each file's metadata), text placed only where it fits, and the
check that no text leaves the canvas, overlaps another or is printed under 7 pt."""
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

plt.rcParams.update({"pdf.fonttype": 42, "ps.fonttype": 42})  # TrueType fonts embedded in PDF/PS

MIN_FONT = 7.0   # points: the smallest text a printed figure may carry


@dataclass(frozen=True)
class Layout:
    """A print size: file-name suffix, width and height of one panel row (inches), font size."""
    suffix: str
    width: float
    height: float
    font: float


TWO_COLUMN = Layout("", 7.0, 3.6, 8.0)      # full text width of a two-column paper
ONE_COLUMN = Layout("_1col", 3.3, 2.8, 7.0)  # one column
LAYOUTS = [TWO_COLUMN, ONE_COLUMN]

# Paul Tol's "muted" qualitative scheme: nine colours told apart under the common colour-vision
# deficiencies (and in greyscale by the markers beside them). Black and greys are kept for the
# reference lines every panel shares.
PALETTE = ["#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255", "#AA4499"]
# A family's marker: a different one for each of the first nine families, and with more families
# than colours, (colour, marker) pairs stay unique.
FAMILY_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">"]
# A variant's line style and marker within one family (another order, lam=0, init=True, ...).
VARIANT_STYLES = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"), ((0, (5, 1, 1, 1)), "v"), ((0, (1, 3)), "P")]


@dataclass(frozen=True)
class Style:
    colour: str
    marker: str


def family_styles(names):
    """{family (strategy name): Style}: colours and markers in turn over the distinct names in
    sorted order, the markers shifted by one each time the palette starts again, so every figure
    of one report draws a family alike, the first nine differ in marker too (greyscale print),
    and no two families are alike (up to 81)."""
    ordered, n = sorted(set(names)), len(PALETTE)
    return {name: Style(PALETTE[i % n], FAMILY_MARKERS[(i + i // n) % len(FAMILY_MARKERS)])
            for i, name in enumerate(ordered)}


def variant_style(index):
    return VARIANT_STYLES[index % len(VARIANT_STYLES)]


def save_figure(fig, out_dir, stem, dpi, caption=""):
    """Write ``fig`` as ``out_dir/stem``.png and .pdf, close it; the two paths. ``caption`` (one
    line on how to read the figure) goes into both files' metadata: reports/README.md is made from
    it. Every report section, core or plugin, saves its figures this way."""
    paths = [Path(out_dir) / f"{stem}.{ext}" for ext in ("png", "pdf")]
    metadata = {"png": {"Description": caption}, "pdf": {"Subject": caption}}
    for path in paths:
        fig.savefig(path, dpi=dpi, metadata=metadata[path.suffix[1:]])
    plt.close(fig)
    return paths


def caption_of(png_path):
    """The caption ``save_figure`` wrote into a PNG ('' where there is none)."""
    from PIL import Image
    with Image.open(png_path) as image:
        return image.text.get("Description", "")


# --- text that fits ------------------------------------------------------------------------------

def drawn_tick_labels(axis):
    """The tick labels of ``axis`` that are drawn: a tick beyond the view limits keeps a label
    object (with a stale position) that matplotlib does not draw."""
    low, high = sorted(axis.get_view_interval())
    slack = (high - low) * 1e-9
    ticks = axis.get_major_ticks(len(axis.get_majorticklocs())) + axis.get_minor_ticks(len(axis.get_minorticklocs()))
    return [label for tick in ticks if low - slack <= tick.get_loc() <= high + slack
            for label in (tick.label1, tick.label2) if label.get_visible()]


def visible_texts(fig):
    """Every drawn, non-empty text of ``fig``: titles, axis and tick labels, legends, annotations."""
    shown = [ax for ax in fig.axes if ax.get_visible()]
    ticks = {id(label) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
             for tick in axis.get_major_ticks() + axis.get_minor_ticks() for label in (tick.label1, tick.label2)}
    texts = [t for t in fig.findobj(Text) if id(t) not in ticks and (t.axes is None or t.axes in shown)]
    texts += [label for ax in shown for axis in (ax.xaxis, ax.yaxis) for label in drawn_tick_labels(axis)]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def inside(box, outer, slack=0.5):
    return (box.x0 >= outer.x0 - slack and box.y0 >= outer.y0 - slack
            and box.x1 <= outer.x1 + slack and box.y1 <= outer.y1 + slack)


def boxes_overlap(a, b, slack=0.5):
    """Whether two display boxes share more than ``slack`` pixels each way (touching is fine)."""
    return a.x0 + slack < b.x1 and b.x0 + slack < a.x1 and a.y0 + slack < b.y1 and b.y0 + slack < a.y1


def text_name(text):
    return repr(text.get_text().replace("\n", " ")[:40])


def layout_problems(fig):
    """One line per text of ``fig`` that falls outside the canvas, overlaps another text, or is
    smaller than MIN_FONT points; [] for a figure fit to print."""
    renderer = fig.canvas.get_renderer()
    fig.draw_without_rendering()
    canvas = fig.bbox
    texts = visible_texts(fig)
    boxes = [t.get_window_extent(renderer) for t in texts]
    problems = [f"{text_name(t)} at {t.get_fontsize():g} pt (under {MIN_FONT:g})"
                for t in texts if t.get_fontsize() < MIN_FONT - 1e-6]
    problems += [f"{text_name(t)} outside the canvas" for t, b in zip(texts, boxes) if not inside(b, canvas)]
    for i, (a, box_a) in enumerate(zip(texts, boxes)):
        problems += [f"{text_name(a)} overlaps {text_name(b)}" for b, box_b in zip(texts[i + 1:], boxes[i + 1:])
                     if boxes_overlap(box_a, box_b)]
    return problems


def place_if_free(ax, text, xy, *, colour, font, taken):
    """Annotate ``text`` just right of data point ``xy`` (or left of it, near the right edge) only
    where it overlaps no box in ``taken`` and stays inside the axes; adds its box to ``taken``.
    Returns whether it was placed. Measured on the drawn text, not estimated."""
    renderer = ax.figure.canvas.get_renderer()
    for offset, align in (((3, 2), "left"), ((-3, 2), "right"), ((3, -9), "left")):
        label = ax.annotate(text, xy, textcoords="offset points", xytext=offset, ha=align, fontsize=font,
                            color=colour, zorder=5)
        box = label.get_window_extent(renderer)
        if inside(box, ax.get_window_extent(renderer)) and not any(boxes_overlap(box, b) for b in taken):
            taken.append(box)
            return True
        label.remove()
    return False


def taken_boxes(fig):
    """Display boxes of the texts and legends already drawn on ``fig`` (what a new label must avoid)."""
    renderer = fig.canvas.get_renderer()
    fig.draw_without_rendering()
    legends = [lg for ax in fig.axes for lg in [ax.get_legend()] if lg is not None] + list(fig.legends)
    return [t.get_window_extent(renderer) for t in visible_texts(fig)] + [lg.get_window_extent(renderer)
                                                                          for lg in legends]


def wrapped(text, width_inches, font):
    """``text`` broken into lines that fit ``width_inches`` at ``font`` points (about 0.55 em a
    character), so a long axis label wraps instead of running off the canvas."""
    chars = max(12, int(width_inches * 72 / (font * 0.55)))
    return "\n".join(textwrap.fill(part, chars) for part in text.split("\n"))


def legend_columns(width_inches, font, labels):
    """The most columns a legend of ``labels`` (filled column by column, as matplotlib does) can
    have across ``width_inches``: each column as wide as its longest label at about 0.55 em a
    character, plus the handle and spacing."""
    for columns in range(len(labels), 1, -1):
        rows = -(-len(labels) // columns)
        widest = [max(map(len, labels[i:i + rows])) for i in range(0, len(labels), rows)]
        if sum(chars * font * 0.55 / 72 + 0.5 for chars in widest) <= width_inches * 0.95:
            return columns
    return 1


def wrapped_label(text, chars=14):
    """A legend label broken on spaces into lines of about ``chars`` characters (a panel's legend
    must fit inside a narrow panel); a longer word holding a file path (a parameter naming a file)
    is broken after its slashes too."""
    lines = textwrap.fill(text, chars, break_long_words=False).split("\n")
    return "\n".join(piece for line in lines for piece in path_pieces(line, chars))


def path_pieces(line, chars):
    """``line`` cut after slashes into pieces of at most about ``chars`` characters ([line] when it fits
    or holds no slash)."""
    if len(line) <= chars or "/" not in line:
        return [line]
    pieces = [""]
    for part in re.split(r"(?<=/)", line):
        if pieces[-1] and len(pieces[-1]) + len(part) > chars:
            pieces.append("")
        pieces[-1] += part
    return pieces


# --- axes ------------------------------------------------------------------------------------------

NICE = (1, 2, 3, 5)


def log_ticks(low, high, steps):
    """Tick values within [low, high] at the leading digits ``steps`` of each decade."""
    values, decade = [], 10 ** int(f"{low:e}".split("e")[1])
    while decade <= high:
        values += [d * decade for d in steps if low <= d * decade <= high]
        decade *= 10
    return values


def label_log_axis(ax):
    """Major ticks of a log x axis at 1-2-3-5 per decade, thinned (1-2-5, 1-3, 1) until their labels
    do not touch; no labelled minor ticks."""
    low, high = ax.get_xlim()
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    renderer = ax.figure.canvas.get_renderer()
    for steps in (NICE, (1, 2, 5), (1, 3), (1,)):
        ax.set_xticks(log_ticks(low, high, steps) or [low])
        ax.set_xlim(low, high)
        ax.figure.draw_without_rendering()
        boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
        if not any(boxes_overlap(a, b, slack=-2) for a, b in zip(boxes, boxes[1:])):
            return
