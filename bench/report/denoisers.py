"""A fine-tuned denoiser against the model it was fine-tuned from, crossed with a trained order
against heuristics (a ``bench.settings.DenoiserAblation``): ``<stem>_<task>.md``, from result files only.

A task's compared runs (``build.comparison_group``) are of one model, the *base*; a model whose
runs' summaries name it as ``derived_from`` (a checkpoint fine-tuned from it) is *derived*. Each
derived model's runs on the same inputs (data, limit, seed, temperature, device) are paired with
the base's, input by input, in one joint bootstrap over the inputs:

- on each denoiser, each order run against each heuristic's sweep at the order run's mean passes
  (the sweep interpolated there in log passes, linearly and by the monotone cubic; the p that
  counts is the larger of the two, as for a lead at a budget);
- derived minus base: each order run on the derived model against the base's order runs of the same
  parameters (but ``pair_ignores``), input by input; each heuristic's sweep on the derived model
  against its sweep on the base at the derived order run's mean passes.

Every p-value a file prints is one family, Holm-adjusted together; a claim is shown where its
adjusted p is below ALPHA.
"""
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.multiplicity import ALPHA, family_size, holm
from bench.paired import BootstrapTest, better_sign, chunked, paired_difference
from bench.report.ablations import ablation_at_budgets
from bench.report.render import both_text, ci_text, markdown, p_pair
from bench.report.sweeps import sweep_lines
from bench.report.verdicts import is_distance, joint_indices, load_runs, make_line, params, select_line
from bench.results import Store
from bench.results.identity import comparison_key
from bench.settings import denoiser_ablations, order_is_drawn, task_settings


@dataclass
class Side:
    """One denoiser's runs: its label, model id and path, its order runs and heuristic lines."""
    label: str
    model: dict
    runs: list
    orders: list = field(default_factory=list)
    lines: dict = field(default_factory=dict)     # heuristic line name -> Line


@dataclass
class Section:
    """One derived model against the base: both sides and every test between and within them."""
    base: Side
    derived: Side
    versus: list = field(default_factory=list)    # (side, order run, line name, test dict) within a side
    pairs: list = field(default_factory=list)     # (derived order run, base order run, quality, passes)
    lines_at: list = field(default_factory=list)  # (line name, derived order run, test dict)


def same_inputs_key(result):
    """What a derived model's runs must share with the base's: every comparison setting but the model."""
    return comparison_key(result, drop=("model_id",))


def derived_results(results, base_group):
    """{derived model id: its results on the base group's inputs}."""
    base_id, key = base_group[0]["model"]["id"], same_inputs_key(base_group[0])
    found = {}
    for result in results:
        if result["model"].get("derived_from") == base_id and same_inputs_key(result) == key:
            found.setdefault(result["model"]["id"], []).append(result)
    return found


def make_side(label, runs, ablation, idx):
    """A Side of ``runs`` (ScoredRuns of one model): its order runs and heuristic lines on replicates ``idx``."""
    side = Side(label, dict(runs[0].summary["model"]), runs, select_line(runs, ablation.order, ablation.order_where))
    by_summary = {id(r.summary): r for r in runs}
    for name, line in sweep_lines([r.summary for r in runs]).items():
        if line[0]["strategy"] in ablation.heuristics:
            side.lines[name] = make_line(name, [by_summary[id(s)] for s in line if id(s) in by_summary], idx)
    return side


def order_versus_line(run, line, idx, distance):
    """The order run minus the line interpolated at the run's mean passes, or None where the line does
    not reach them: the linear interpolation's difference dict (``p`` the larger of both
    interpolations' p, 1 where they disagree in sign) with the cubic's as ``pchip``."""
    budget = run.passes()
    if np.isnan(line.at(budget)[0]):
        return None
    point, replicates = run.quality(), chunked(run.quality, idx)
    tests = []
    for kind in ("linear", "pchip"):
        value, line_replicates = line.at(budget, kind)
        tests.append(BootstrapTest.of(replicates - line_replicates, point - value, distance))
    test, pchip = (t.summary() for t in tests)
    agree = np.sign(test["diff"]) == np.sign(pchip["diff"])
    test.update(p_linear=test["p"], p=max(test["p"], pchip["p"]) if agree else 1.0, pchip=pchip,
                budget=budget, line_value=float(line.at(budget)[0]),
                outside=max(t.dropped_share for t in tests))
    return test


def pairs_across(derived, base, ablation):
    """(derived order run, base order run) of equal parameters but ``pair_ignores``."""
    def key(run):
        return {k: v for k, v in params(run).items() if k not in ablation.pair_ignores}
    return [(d, b) for d in derived.orders for b in base.orders if key(d) == key(b)]


def n_inputs(runs):
    return len(runs[0].passes.columns[0])


def make_section(base_runs, derived, root, ablation):
    """The Section of one derived model's results against the base's runs (ScoredRuns), or None where
    the derived model has no order run or its inputs differ in number."""
    derived_runs, _ = load_runs(derived, root)
    if not base_runs or not derived_runs or n_inputs(derived_runs) != n_inputs(base_runs):
        return None
    idx = joint_indices(base_runs)
    base, tuned = make_side("frozen", base_runs, ablation, idx), make_side("fine-tuned", derived_runs, ablation, idx)
    if not tuned.orders:
        return None
    section = Section(base, tuned)
    pairs = pairs_across(tuned, base, ablation)
    base.orders = [b for b in base.orders if any(b is pb for _, pb in pairs)]
    distance = is_distance(list(base.lines.values()) + list(tuned.lines.values()))
    for side in (base, tuned):
        for run in side.orders:
            for name, line in side.lines.items():
                test = order_versus_line(run, line, idx, distance)
                if test is not None:
                    section.versus.append((side, run, name, test))
    section.pairs = [(d, b, paired_difference(d.quality, b.quality), paired_difference(d.passes, b.passes))
                     for d, b in pairs]
    for name, line in tuned.lines.items():
        if name in base.lines:
            for run in tuned.orders:
                for test in ablation_at_budgets(line.runs, base.lines[name].runs, idx, [run.passes()]):
                    section.lines_at.append((name, run, test))
    return section


def section_tests(section):
    return ([t for *_, t in section.versus] + [q for _, _, q, _ in section.pairs]
            + [t for *_, t in section.lines_at])


def adjust(sections):
    """Holm-adjust every p-value of a file together (each test dict gets ``p_holm``); the family's size."""
    tests = [t for s in sections for t in section_tests(s)]
    for test, adjusted in zip(tests, holm([t["p"] for t in tests])):
        test["p_holm"] = float(adjusted)
    return family_size([t["p"] for t in tests])


def verdict_word(test, higher_is_better, bounded=False):
    """'beats', 'is beaten by' (Holm-adjusted p below ALPHA) or 'is not shown to differ from'. A
    ``bounded`` side (a run that draws its order, whose metric is only a bound in the worse
    direction) can be shown to beat, never to be beaten: its true value may be better than its bound."""
    if not test.get("p_holm", np.nan) < ALPHA:
        return "is not shown to differ from"
    if better_sign(higher_is_better) * test["diff"] > 0:
        return "beats"
    return "is not shown to beat (its value is a bound only)" if bounded else "is beaten by"


def is_bounded(run, task):
    """Whether ``run`` draws its order and the task declares its headline only a bound for such a run."""
    settings = task_settings(task)
    bounds = settings.drawn.bounds if settings is not None else {}
    summary = run.summary
    return summary["headline"] in bounds and order_is_drawn(summary["strategy"], summary["config"]["strategy_params"])


def model_text(side):
    path = side.model.get("path")
    return f"model {side.model['id']}" + (f" (`{path}`)" if path else "")


def versus_sentence(side, run, name, test, headline, higher, task):
    pchip, verdict = test["pchip"], verdict_word(test, higher, is_bounded(run, task))
    return (f"- {side.label} denoiser: `{run.label}` ({run.passes():.2f} passes, {headline} {run.quality():.3f}) "
            f"**{verdict}** `{name}` at equal mean passes ({name} interpolated there: "
            f"{test['line_value']:.3f}): {ci_text(test['diff'], test['ci_low'], test['ci_high'], signed=True)} "
            f"linear in log passes, {ci_text(pchip['diff'], pchip['ci_low'], pchip['ci_high'], signed=True)} "
            f"monotone cubic ({both_text(test, pchip)}).")


def pair_sentence(derived, base, quality, passes, headline, higher, task):
    bounded = is_bounded(derived, task)
    verdict = ("a difference of two bounds: no claim" if bounded else
               f"the fine-tuned pair {verdict_word(quality, higher)} the frozen pair")
    return (f"- `{derived.label}` on the fine-tuned denoiser minus `{base.label}` on the frozen one, input by "
            f"input: {ci_text(quality['diff'], quality['ci_low'], quality['ci_high'], signed=True)} {headline} "
            f"({p_pair(quality)}; {verdict}), "
            f"{ci_text(passes['diff'], passes['ci_low'], passes['ci_high'], signed=True)} passes.")


def line_sentence(name, run, test, headline, higher):
    pchip = test["pchip"]
    return (f"- `{name}` on the fine-tuned denoiser minus on the frozen one at {test['budget']:.2f} passes "
            f"(`{run.label}`'s): {ci_text(test['diff'], test['ci_low'], test['ci_high'], signed=True)} {headline} "
            f"linear, {ci_text(pchip['diff'], pchip['ci_low'], pchip['ci_high'], signed=True)} monotone cubic "
            f"({both_text(test, pchip)}; the fine-tuned denoiser {verdict_word(test, higher)} the frozen one).")


def table(section, headline):
    """Markdown: per denoiser and order run, its quality and each heuristic's at its mean passes."""
    names = sorted(set(section.base.lines) | set(section.derived.lines))
    header = ["denoiser", "order run", "mean passes", headline] + [f"{n} at those passes" for n in names]
    rows = []
    for side in (section.base, section.derived):
        at = {(id(run), name): test for s, run, name, test in section.versus if s is side}
        for run in side.orders:
            cells = [f"{at[(id(run), n)]['line_value']:.3f}" if (id(run), n) in at else "not reached" for n in names]
            rows.append([f"{side.label} ({side.model['id']})", run.label, f"{run.passes():.2f}",
                         f"{run.quality():.3f}"] + cells)
    return markdown(header, rows)


def section_markdown(section, headline, higher, task):
    base, tuned = section.base, section.derived
    out = [f"**Fine-tuned {model_text(tuned)}, from frozen {model_text(base)}**", "", table(section, headline), "",
           "Order against each heuristic at equal mean passes, on each denoiser:"]
    out += [versus_sentence(s, r, n, t, headline, higher, task) for s, r, n, t in section.versus] or ["- no heuristic "
                                                                                                "reaches them."]
    out += ["", "Fine-tuned denoiser minus frozen denoiser:"]
    out += [pair_sentence(d, b, q, p, headline, higher, task) for d, b, q, p in section.pairs]
    out += [line_sentence(n, r, t, headline, higher) for n, r, t in section.lines_at]
    return out


def denoiser_markdown(ablation, sections, task, family):
    first = sections[0].base.runs[0]
    higher, headline = first.quality.higher_is_better, first.summary["headline"]
    direction = "higher" if higher else "lower"
    out = [f"Generated by `bench report` from the result files: {ablation.idea}, on task {task} "
           f"({len(first.passes.columns[0])} shared inputs, paired tests, 95% CIs from one joint bootstrap over "
           f"the inputs, Tango score intervals for two 0/1 runs input by input); {headline}, {direction} is "
           f"better. `{ablation.order}` runs ({', '.join(f'{k}={v}' for k, v in ablation.order_where.items())}) "
           f"against {', '.join(f'`{h}`' for h in ablation.heuristics)} at the order run's mean passes (each "
           f"heuristic's sweep interpolated there in log passes), on the frozen and the fine-tuned denoiser.", "",
           f"Multiplicity: the {family} p-values below are one family, Holm-adjusted together; a claim is shown "
           f"(beats / is beaten by) only where its Holm-adjusted p is below {ALPHA:g}. Each p is printed raw, "
           f"then Holm-adjusted.", ""]
    if any(is_bounded(run, task) for s in sections for run in s.base.orders + s.derived.orders):
        out[-1:-1] = [f"A run that draws its order at random has only a bound on {headline} (the task's "
                      f"`order_bounds`): against a heuristic it can be shown to beat it, never to be beaten "
                      f"(its true value may be better than its bound), and two such runs' difference is a "
                      f"difference of bounds, printed without a claim.", ""]
    for section in sections:
        out += section_markdown(section, headline, higher, task) + [""]
    return "\n".join(out).rstrip("\n") + "\n"


def write_denoiser_reports(results_dir, out_dir, base_groups):
    """``<stem>_<task>.md`` for every registered DenoiserAblation and task with derived-model runs;
    ``base_groups``: task -> its compared runs (the base model's). Returns the paths written."""
    ablations = denoiser_ablations()
    if not ablations:
        return []
    store, paths = Store(results_dir), []
    results = store.runs(quiet=True)   # unreadable files: task_groups named them once
    for task, base_group in base_groups.items():
        derived = derived_results([r for r in results if r["task"] == task], base_group)
        base_runs = load_runs(base_group, store)[0] if derived else []
        for ablation in ablations.values():
            sections = [s for _, group in sorted(derived.items())
                        if (s := make_section(base_runs, group, store, ablation)) is not None]
            if sections:
                family = adjust(sections)
                paths.append(Path(out_dir) / f"{ablation.stem}_{task}.md")
                paths[-1].write_text(denoiser_markdown(ablation, sections, task, family))
    return paths
