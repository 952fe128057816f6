"""`bench report`: figures and tables per task drawn from result files only (never runs a model):
which runs form a task's comparison group, what is written where, and the Markdown sync. Runs of a
model fine-tuned from a task's compared one are left out of its group and paired with it in their
own file (bench.report.denoisers)."""
import os
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.errors import BenchError
from bench.presets import RETRAINED_OUT, VALIDATION_OUT
from bench.registry import REPORTS, load_plugins
from bench.report.aup import write_aup
from bench.report.canvas import family_styles
from bench.report.claims import choose, task_verdicts
from bench.report.denoisers import write_denoiser_reports
from bench.report.docs import sync_markdown
from bench.report.figures import draw_figures
from bench.report.gallery import write_gallery
from bench.report.model_size import draw_model_sizes
from bench.report.page import write_page
from bench.report.render import (
    ablations_markdown,
    budget_rows,
    choices_markdown,
    claims_markdown,
    cost_table,
    csv_text,
    latex,
    markdown,
    numeric_rows,
    speedup_table,
    summary_rows,
)
from bench.report.transfer import transfer_markdown
from bench.results import Store
from bench.results.identity import comparison_key as identity_key
from bench.settings import all_task_settings, task_settings

REPO = Path(__file__).resolve().parent.parent.parent
# the committed pair: reports/ is a pure function of results/, so no other results write there
SHIPPED_RESULTS, SHIPPED_REPORTS = REPO / "results", REPO / "reports"
SHIPPED_BASELINES = REPO / "baselines"   # committed results too (the CI gate's): nothing is written into them


def comparison_group(results):
    """Results comparable with each other: same task, model, data, limit, seed, value temperature,
    device kind and dtype (a config without the last two ran on cpu in float32).

    Picks the group with the most runs (newest on ties), so a quick --limit run does not mix in.
    """
    key = comparison_key
    counts = Counter(key(r) for r in results)
    newest = {key(r): r["provenance"]["finished_at"] for r in results}
    best = max(counts, key=lambda k: (counts[k], newest[k]))
    return [r for r in results if key(r) == best], len(results) - counts[best]


def write_tables(results, task, out_dir, verdicts):
    """table_<task> (every run), budgets_<task> (the headline: strategies x pass budgets),
    speedup_<task> and cost_<task> (every run's passes as users pay them) as .md, .csv and .tex,
    aup_<task>.md and .csv (d3LLM's AUP per family, where the headline is an accuracy) and
    claims_<task>.md; returns the paths. A table with no rows (no line reaches a budget, none is
    tested for a speed-up) is not written: its header alone says nothing the claims do not."""
    tables = {f"table_{task}": (summary_rows(results), numeric_rows(results))}
    if verdicts is not None:
        tables[f"budgets_{task}"] = (budget_rows(verdicts), budget_rows(verdicts, numeric=True))
        tables[f"speedup_{task}"] = (speedup_table(verdicts), speedup_table(verdicts, numeric=True))
        tables[f"cost_{task}"] = (cost_table(verdicts), cost_table(verdicts, numeric=True))
    paths = []
    for stem, (text_rows, number_rows) in tables.items():
        if not text_rows[1]:   # (header, rows) without a row
            continue
        for ext, text in (("md", markdown(*text_rows)), ("csv", csv_text(*number_rows)),
                          ("tex", latex(*text_rows))):
            paths.append(Path(out_dir) / f"{stem}.{ext}")
            paths[-1].write_text(text.rstrip("\n") + "\n")
    paths += write_aup(results, task, out_dir)
    if verdicts is not None:
        paths.append(Path(out_dir) / f"claims_{task}.md")
        paths[-1].write_text(claims_markdown(verdicts))
    if verdicts is not None and verdicts.choices is not None:
        paths.append(Path(out_dir) / f"choices_{task}.md")
        paths[-1].write_text(choices_markdown(verdicts))
    return paths


@dataclass(frozen=True)
class Folders:
    """The result folders one report reads: the test runs it tables, the validation runs its
    claims' choices are made on, the runs on retrained helpers its ablations are checked on, and
    ``models``: {label: Folders} of the runs of a task on the other models its settings declare
    (``other_models``; transfer.md and ``model_size_<task>``). Readers are given them; none is
    found by name (``beside`` is the command line's default)."""
    results: Path
    validation: Path | None = None
    retrained: Path | None = None
    models: dict = field(default_factory=dict)

    @classmethod
    def beside(cls, results_dir, validation=None, retrained=None, models=None):
        """``results_dir`` with the validation and retrained folders beside it (the presets'
        default --out when run from the same place) unless given, and each other model's folder
        where its task declares it, relative to the same parent, unless ``models`` ({label: folder})
        gives it (a label no task declares is an error)."""
        parent = Path(results_dir).resolve().parent
        declared = declared_models()
        unknown = sorted(set(models or {}) - set(declared))
        if unknown:
            raise BenchError(f"--model-results {unknown[0]}: no task declares a model of that label "
                             f"(declared: {', '.join(sorted(declared)) or 'none'})")
        given = {label: Path(folder) for label, folder in (models or {}).items()}
        return cls(Path(results_dir), Path(validation) if validation else parent / VALIDATION_OUT,
                   Path(retrained) if retrained else parent / RETRAINED_OUT,
                   {label: model_folders(given.get(label, parent / folder)) for label, folder in declared.items()})


def model_folders(results_dir):
    """Another model's results with its own validation and retrained folders beside them."""
    parent = Path(results_dir).resolve().parent
    return Folders(Path(results_dir), parent / VALIDATION_OUT, parent / RETRAINED_OUT)


def declared_models():
    """{label: folder} of every other model the tasks' settings declare (one folder per label)."""
    found = {}
    for settings in all_task_settings().values():
        for label, folder in settings.claims.other_models.items():
            if found.setdefault(label, folder) != folder:
                raise BenchError(f"two tasks declare model {label!r} in different folders ({found[label]}, {folder}); "
                                 f"give each folder its own label")
    return found


def task_groups(folders, skipped=None, tasks=None):
    """task -> (its largest comparable group of results, how many runs were left out, its verdicts
    or None where its runs cannot be paired), from ``folders`` (a Folders, or a results folder
    alone: no validation choices, no retrained checks), for every task with runs (or those of
    ``tasks`` only). Summaries that cannot be read or are incomplete are named on stderr, left out
    and added to ``skipped`` (a list) when given."""
    folders = folders if isinstance(folders, Folders) else Folders(Path(folders))
    store = Store(folders.results)
    results = store.runs(skipped)
    if not results:
        raise BenchError(f"no result files under {folders.results}; make some with: python -m bench run")
    groups = {task: comparison_group([r for r in results if r["task"] == task])
              for task in sorted({r["task"] for r in results}) if tasks is None or task in tasks}
    choices = validation_choices(folders.validation, groups, skipped) if folders.validation else {}
    retrained = retrained_groups(folders.retrained, groups, skipped) if folders.retrained else {}
    return {task: (group, left_out, task_verdicts(every_seed(group, results), task, store, choices.get(task),
                                                  retrained.get(task)))
            for task, (group, left_out) in groups.items()}


def other_model_groups(folders, tasks, skipped=None):
    """{task: {label: (group, left out, verdicts) of the task's runs on that model, or None where
    its folder or its runs of the task are absent ("not run": a fresh clone need not hold them)}}
    for every task of ``tasks`` whose settings declare other models (``Folders.models``)."""
    out = {}
    for task in tasks:
        settings = task_settings(task)
        labels = settings.claims.other_models if settings is not None else {}
        if labels:
            out[task] = {label: model_group(folders.models.get(label), task, skipped) for label in labels}
    return out


def model_group(folders, task, skipped=None):
    """``task``'s entry of ``task_groups`` on one other model's folders, or None where there is none."""
    if folders is None or not Path(folders.results).is_dir():
        return None
    return task_groups(folders, skipped, tasks={task}).get(task)


def all_groups(groups, others):
    """Every (group, left out, verdicts) of one report: its own tasks' and their other models' (one
    set of family styles covers them all, so a family looks alike in every figure)."""
    return list(groups.values()) + [entry for by_label in others.values() for entry in by_label.values() if entry]


def model_groups(task, group, others):
    """{label: runs} of ``task`` on its own model (``group``) and on each other model with runs,
    the own model first; {} where the task declares no other model."""
    if not others.get(task):
        return {}
    found = {task_settings(task).claims.model_label: group}
    return found | {label: entry[0] for label, entry in others[task].items() if entry is not None}


def retrained_groups(folder, groups, skipped=None):
    """{task: (its runs under ``folder`` on the same inputs, model and temperature as its test
    group, every seed; its Store)} for every task with any (`bench run --preset retrained`)."""
    if not Path(folder).is_dir():
        return {}
    store = Store(folder)
    found = store.runs(skipped)
    same = {task: [r for r in found if seed_free_key(r) == seed_free_key(group[0])]
            for task, (group, _) in groups.items()}
    return {task: (runs, store) for task, runs in same.items() if runs}


def validation_choices(validation_dir, groups, skipped=None):
    """{task: Choices} for every task of ``groups`` with runs under ``validation_dir`` on the same
    model and temperature as its test group (none where the folder does not exist)."""
    if not Path(validation_dir).is_dir():
        return {}
    store, out = Store(validation_dir), {}
    found = store.runs(skipped)
    for task, (group, _) in groups.items():
        same = [r for r in found if r["task"] == task and r["model"]["id"] == group[0]["model"]["id"]
                and r["config"].get("temperature") == group[0]["config"].get("temperature")]
        if same:
            chosen_group, _ = comparison_group(same)
            config = chosen_group[0]["config"]
            where = f"(data {config['data_id']}, seed {config['seed']}) under {Path(validation_dir).name}/"
            out[task] = choose(chosen_group, task, store, where)
    return {task: c for task, c in out.items() if c is not None}


def comparison_key(r):
    """What runs must share to be compared: task, model, data, limit, seed, temperature, device, dtype."""
    return identity_key(r)


def seed_free_key(r):
    """What the runs of one group share under every seed (``comparison_key`` less the seed)."""
    return identity_key(r, drop=("seed",))


def every_seed(group, results):
    """The runs of ``group``'s task, model, data, limit and temperature under every seed (verdicts
    pool seeds; figures and the full table show the one seed of ``group``)."""
    return [r for r in results if seed_free_key(r) == seed_free_key(group[0])]


def plugin_sections(results_dir, out_dir, figures=True, folders=None):
    """Report sections plugins add (their ``figures`` modules, which import no model code); each
    reads the runs of the Store of ``results_dir`` it is given (and of ``folders.retrained``, its
    ``related`` Store, where given)."""
    load_plugins("figures")
    retrained = folders.retrained if folders is not None else None
    store = Store(results_dir, related=[Store(retrained)] if retrained and Path(retrained).is_dir() else [])
    return {name: draw(store, out_dir, figures=figures) for name, draw in sorted(REPORTS.items())}


def write_all_tables(results_dir, out_dir, folders=None):
    """Every table `bench report` writes, without the figures; returns the paths. ``folders``
    (default: ``Folders.beside(results_dir)``) are where its validation and retrained runs are."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    folders = folders or Folders.beside(results_dir)
    groups = task_groups(folders)
    paths = [p for task, (group, _, verdicts) in groups.items() for p in write_tables(group, task, out_dir, verdicts)]
    paths += write_ablations([verdicts for _, _, verdicts in groups.values()], out_dir,
                             other_model_groups(folders, groups))
    paths += write_denoiser_reports(results_dir, out_dir, {task: group for task, (group, _, _) in groups.items()})
    return paths + [p for section in plugin_sections(results_dir, out_dir, False, folders).values() for p in section]


def write_ablations(verdicts, out_dir, others=None):
    """ablations.md: every task's ablation claims in one file (what docs/ablations.md links), and
    transfer.md: whether the other tasks' orderings hold on a model trained elsewhere, and on each
    other model of its task (``others``: ``other_model_groups``)."""
    paths = []
    for name, text in (("ablations.md", ablations_markdown([v for v in verdicts if v is not None])),
                       ("transfer.md", transfer_markdown(verdicts, others or {}))):
        if text:
            path = Path(out_dir) / name
            path.write_text(text)
            paths.append(path)
    return paths


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


def report(results_dir, out_dir=None, docs_root=None, folders=None):
    """Figures (both sizes) and tables per task from the result files under ``results_dir``,
    written to ``report_folder(results_dir, out_dir)``, with its claims' choices and retrained
    checks from ``folders`` (default: ``Folders.beside(results_dir)``); then the report tables
    quoted in the .md files under ``docs_root`` are rewritten. PDFs carry no creation date (SOURCE_DATE_EPOCH 0
    unless set), so unchanged results give the same bytes. Returns the folder written."""
    out_dir = report_folder(results_dir, out_dir)
    check_writable(out_dir)
    os.environ.setdefault("SOURCE_DATE_EPOCH", "0")
    skipped = []
    folders = folders or Folders.beside(results_dir)
    groups = task_groups(folders, skipped=skipped)
    others = other_model_groups(folders, groups, skipped)
    styles = family_styles(r["strategy"] for group, _, _ in all_groups(groups, others) for r in group)
    out_dir.mkdir(parents=True, exist_ok=True)
    drawn = []
    for task, (group, left_out, verdicts) in groups.items():
        figures = draw_figures(group, task, out_dir, styles) + draw_model_sizes(model_groups(task, group, others),
                                                                                 task, out_dir, styles)
        drawn += figures
        paths = figures + write_tables(group, task, out_dir, verdicts)
        note = f" ({left_out} runs of other models/data/limits/seeds left out)" if left_out else ""
        print(f"{task}: {len(group)} runs{note} -> {', '.join(p.name for p in paths)} in {out_dir}")
    for path in write_ablations([verdicts for _, _, verdicts in groups.values()], out_dir, others):
        print(f"comparisons across tasks: {path.name} in {out_dir}")
    for path in write_denoiser_reports(results_dir, out_dir, {task: group for task, (group, _, _) in groups.items()}):
        print(f"fine-tuned denoisers: {path.name} in {out_dir}")
    for name, paths in plugin_sections(results_dir, out_dir, True, folders).items():
        drawn += paths
        if paths:
            print(f"{name}: {', '.join(p.name for p in paths)} in {out_dir}")
    print(f"figures: {write_gallery(out_dir, drawn).name} in {out_dir}")
    page = write_page(groups, out_dir, styles, others=others)
    print(f"page: {page.name} in {out_dir} (open it in a browser; one file, no network)")
    if docs_root:
        for path in sync_markdown(docs_root, out_dir):
            print(f"rewrote report tables in {path}")
    if skipped:
        print(f"skipped {len(skipped)} result file(s) that cannot be read or are incomplete "
              "(each named above as 'skipped result file')", file=sys.stderr)
    print(f"report written to {out_dir}")
    return out_dir
