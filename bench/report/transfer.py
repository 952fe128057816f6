"""Whether the orderings the other tasks show hold on a task whose model was trained elsewhere (a
task whose settings say ``external_model``): ``transfer.md``. Each comparison (a
``bench.settings.Ablation``) that such a task and at least one other declare is read from the
claims each task's file already tested, Holm-adjusted within that file; nothing is tested again.

A task's *ordering* of a comparison is the direction of its shown differences (at the pass
budgets and run by run). The other tasks' ordering is "better" or "worse" where every shown
difference of every one of them agrees, "mixed" where they disagree, "none shown" without any.
On the external task it *holds* where some difference is shown in the same direction and none in
the other, is *reversed* where one is shown the other way, and is *not shown* where none is.
From result files only."""
import numpy as np

from bench.multiplicity import ALPHA
from bench.report.render import ci_text, markdown, p_text
from bench.report.verdicts import MAX_OUTSIDE
from bench.settings import all_task_settings


def comparison_tests(at_budgets, pairs):
    """[(where, test dict)] of one comparison on one task: each budget, then each run-by-run pair."""
    return ([(f"{t['budget']:g} passes", t) for t in at_budgets]
            + [(f"`{p['run']}` vs `{p['ablation']}`", p["quality"]) for p in pairs])


def is_shown(test):
    return test.get("p_holm", np.nan) < ALPHA and test.get("outside", 0.0) <= MAX_OUTSIDE


def direction(v, test):
    """'better' where the first side is better than the second in ``v``'s headline, else 'worse'."""
    return "better" if (test["diff"] > 0) == v.higher_is_better else "worse"


def task_cell(v, tests):
    """({'better': [where], 'worse': [where]} of the shown tests, the cell's text)."""
    found = {"better": [], "worse": []}
    for where, test in tests:
        if is_shown(test):
            found[direction(v, test)].append(where.replace(" passes", ""))
    parts = [f"{word} at {', '.join(found[word])}" for word in ("better", "worse") if found[word]]
    text = "; ".join(parts) or "none shown"
    return found, f"{text} (of {len(tests)} tested)" if tests else "not run"


def others_ordering(found_by_task):
    """'better', 'worse', 'mixed' or 'none shown' over the other tasks' shown directions."""
    better = any(f["better"] for f in found_by_task)
    worse = any(f["worse"] for f in found_by_task)
    return "mixed" if better and worse else "better" if better else "worse" if worse else "none shown"


def transfer_verdict(ordering, external):
    """Whether ``ordering`` (the other tasks') holds on the external task's shown directions."""
    if ordering not in ("better", "worse"):
        return f"no ordering to carry ({ordering} on the other tasks)"
    opposite = "worse" if ordering == "better" else "better"
    if external[opposite]:
        return "**reversed**"
    return "**holds**" if external[ordering] else "not shown"


def comparisons(verdicts, external):
    """[(idea, {task: (at_budgets, pairs)})] of each comparison the external task and another declare."""
    found = {}
    for v in verdicts:
        for idea, pairs, at_budgets in v.ablations:
            found.setdefault(idea, {})[v.task] = (at_budgets, pairs)
    return [(idea, by_task) for idea, by_task in found.items()
            if external in by_task and len(by_task) > 1]


def detail_lines(v, idea, tests):
    """The external task's tests of one comparison, each with its difference and p-values."""
    lines = [f"- {idea}, on {v.task}:"]
    for where, t in tests:
        lines.append(f"  - {where}: {ci_text(t['diff'], t['ci_low'], t['ci_high'], signed=True)} {v.headline} "
                     f"(p {p_text(t['p'])}, Holm p {p_text(t.get('p_holm', np.nan))}"
                     f"{'; shown' if is_shown(t) else '; not shown'}).")
    if not tests:
        lines.append("  - no budget both lines reach and no run-by-run pair.")
    return lines


def transfer_markdown(verdicts):
    """transfer.md's text ('' without an external task that shares a comparison with another)."""
    verdicts = [v for v in verdicts if v is not None]
    settings = all_task_settings()
    external = [v for v in verdicts if settings.get(v.task) and settings[v.task].claims.external_model]
    by_name, out = {v.task: v for v in verdicts}, []
    for ext in external:
        rows, details = [], []
        others = [v.task for v in verdicts if v.task != ext.task]
        for idea, by_task in comparisons(verdicts, ext.task):
            tests = {task: comparison_tests(*found) for task, found in by_task.items()}
            cells = {task: task_cell(by_name[task], tests[task]) if task in tests
                     else ({"better": [], "worse": []}, "-") for task in others + [ext.task]}
            ordering = others_ordering([cells[t][0] for t in others])
            rows.append([idea] + [cells[t][1] for t in others] + [cells[ext.task][1], ordering,
                                                                    transfer_verdict(ordering, cells[ext.task][0])])
            details += detail_lines(ext, idea, tests[ext.task])
        if not rows:
            continue
        out += [intro(ext, others), "",
                markdown(["comparison"] + others + [f"{ext.task} (external model)", "other tasks' ordering",
                                                    f"on {ext.task}"], rows), "", *details, ""]
    return "\n".join(out)


def intro(ext, others):
    return (f"Generated by `bench report` from the result files: do the orderings of the tasks whose models this "
            f"project trained ({', '.join(others)}) hold on `{ext.task}`, whose model was trained elsewhere? "
            f"Each cell lists where a difference is shown (Holm-adjusted p below {ALPHA} within that task's "
            f"claims file, budgets in mean passes, and run by run): *better* where the comparison's first side "
            f"is better in the task's headline metric. The ordering *holds* on {ext.task} where a difference "
            f"is shown there in the other tasks' direction and none against it; *reversed* where one is shown "
            f"against it.")
