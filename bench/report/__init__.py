"""`bench report`: figures and tables from result files only (never runs a model), cut by job:

- ``sweeps``: result summaries read (a metric, sweep lines, the reference run);
- ``verdicts``: per-input runs loaded from records, lines, pass budgets, paired tests;
- ``interpolation``: a line's quality at a budget (linear or monotone cubic in log passes);
- ``cost``: a run's passes as users pay them (percentiles, batched steps);
- ``claims``: a task's claims computed (``TaskVerdicts``: budgets, speed-up rows, ablation pairs);
- ``denoisers``: a fine-tuned denoiser's runs paired with its base model's (``<stem>_<task>.md``);
- ``render``: claims and tables rendered as Markdown, CSV, LaTeX and plain text;
- ``canvas``: what every figure shares (print sizes, family styles, saving, the text-fit check);
- ``figures``: the Pareto plots (matplotlib);
- ``gallery``: reports/README.md, each figure with its caption;
- ``page``: reports/index.html, one self-contained page (plotly), its tables the Markdown's;
- ``docs``: report tables quoted in Markdown files kept in sync;
- ``build``: what is written where (`python -m bench report`).

The names below are loaded on first use, so importing one light module (``render``) pulls in no
matplotlib.
"""
import importlib

EXPORTS = {"report": "build", "write_all_tables": "build", "report_folder": "build", "default_docs": "build",
           "task_groups": "build", "comparison_group": "build", "pareto_front": "figures",
           "family_styles": "canvas", "sync_markdown": "docs"}

__all__ = sorted(EXPORTS)


def __getattr__(name):
    if name not in EXPORTS:
        raise AttributeError(f"module 'bench.report' has no attribute {name!r}")
    return getattr(importlib.import_module(f"bench.report.{EXPORTS[name]}"), name)
