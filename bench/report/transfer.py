"""Whether the orderings the other tasks show hold on a task whose model was trained elsewhere (a
task whose settings say ``external_model``): ``transfer.md``. Each comparison (a
``bench.settings.Ablation``) that such a task and at least one other declare is read from the
claims each task's file already tested, Holm-adjusted within that file; nothing is tested again.

A task's *ordering* of a comparison is the direction of its shown differences (at the pass
budgets and run by run). The other tasks' ordering is "better" or "worse" where every shown
difference of every one of them agrees, "mixed" where they disagree, "none shown" without any.
On the external task it *holds* where some difference is shown in the same direction and none in
the other, is *reversed* where one is shown the other way, and is *not shown* where none is.

A task whose settings declare other models (``other_models``: runs of the same task kept in their
own result folders) gets one column per model, each model's verdicts computed as the main group's
(``bench.report.build.other_model_groups``), whether the ordering holds on every model, and
whether the models agree with each other: the same direction shown, one shown and the other not,
opposite directions, or neither shown. A model whose folder or runs are absent is "not run".
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


HOLDS, REVERSED, NOT_SHOWN, NOT_RUN = "**holds**", "**reversed**", "not shown", "not run"


def transfer_verdict(ordering, external):
    """Whether ``ordering`` (the other tasks') holds on the external task's shown directions."""
    if ordering not in ("better", "worse"):
        return f"no ordering to carry ({ordering} on the other tasks)"
    opposite = "worse" if ordering == "better" else "better"
    if external[opposite]:
        return REVERSED
    return HOLDS if external[ordering] else NOT_SHOWN


def on_every_model(ordering, found):
    """Whether ``ordering`` holds on every model of the external task (``found``: {label: its
    shown directions, None where not run})."""
    if ordering not in ("better", "worse"):
        return "no ordering to carry"
    missing = [label for label, f in found.items() if f is None]
    if missing:
        return f"{NOT_RUN} on {', '.join(missing)}"
    said = {label: transfer_verdict(ordering, f) for label, f in found.items()}
    reversed_on = [label for label, text in said.items() if text == REVERSED]
    held = [label for label, text in said.items() if text == HOLDS]
    if reversed_on:
        return f"{REVERSED} on {', '.join(reversed_on)}"
    if len(held) == len(said):
        return f"{HOLDS} on {every(said)}"
    return f"holds on {', '.join(held)} only" if held else f"{NOT_SHOWN} on {'either' if len(said) == 2 else 'any'}"


def every(labels):
    """'both' of two models, 'all N' of more (the words the two-model table reads in)."""
    return "both" if len(labels) == 2 else f"all {len(labels)}"


def models_agree(found):
    """Whether the models' shown directions agree with each other ({label: shown directions, None
    where not run}): the same direction, shown on some only, opposite, or neither shown; a model
    showing both directions (at different budgets) agrees only partly."""
    missing = [label for label, f in found.items() if f is None]
    if missing:
        return f"{NOT_RUN} on {', '.join(missing)}"
    shown = {label: others_ordering([f]) for label, f in found.items() if f["better"] or f["worse"]}
    listed = ", ".join(f"{label} {direction}" for label, direction in shown.items())
    kinds = set(shown.values())
    if not shown:
        return "neither shown" if len(found) == 2 else "none shown"
    if len(shown) < len(found):
        every_one = ", ".join(f"{label} {others_ordering([f])}" for label, f in found.items())
        return f"{'one' if len(shown) == 1 else 'some'} shown: {every_one}"
    if len(kinds) == 1 and kinds <= {"better", "worse"}:
        return f"**agree**: {every(found)} {kinds.pop()}"
    return f"**opposite**: {listed}" if kinds == {"better", "worse"} else f"partly: {listed}"


def declared(v):
    """{comparison: (at_budgets, pairs)} of the comparisons ``v`` (a task's verdicts) tested."""
    return {idea: (at_budgets, pairs) for idea, pairs, at_budgets in v.ablations}


def shared_comparisons(verdicts, models):
    """Each comparison (in the order first declared) that some model of the external task and some
    other task (``verdicts``) declare."""
    on_models = [declared(v) for v in models.values() if v is not None]
    on_others = [declared(v) for v in verdicts]
    ideas = dict.fromkeys(idea for found in on_models + on_others for idea in found)
    return [idea for idea in ideas if any(idea in f for f in on_models) and any(idea in f for f in on_others)]


def model_cell(v, idea):
    """(shown directions, text) of one model of the external task; (None, 'not run') without tests."""
    tests = comparison_tests(*declared(v)[idea]) if v is not None and idea in declared(v) else []
    return task_cell(v, tests) if tests else (None, NOT_RUN)


def comparison_row(idea, others, models):
    """One row: the other tasks' cells, each model's, the ordering and whether it holds on each."""
    cells = [task_cell(v, comparison_tests(*declared(v)[idea])) if idea in declared(v)
             else ({"better": [], "worse": []}, "-") for v in others]
    ordering = others_ordering([found for found, _ in cells])
    on_models = {label: model_cell(v, idea) for label, v in models.items()}
    found = {label: f for label, (f, _) in on_models.items()}
    row = ([idea] + [text for _, text in cells] + [text for _, text in on_models.values()] + [ordering]
           + [transfer_verdict(ordering, f) if f is not None else NOT_RUN for f in found.values()])
    return row + ([on_every_model(ordering, found), models_agree(found)] if len(models) > 1 else [])


def detail_lines(v, idea, label=None, task=None):
    """One model's tests of one comparison, each with its difference and p-values."""
    where = f"{task or v.task}" + (f" ({label})" if label else "")
    if v is None or idea not in declared(v):
        return [f"- {idea}, on {where}: {NOT_RUN}."]
    tests = comparison_tests(*declared(v)[idea])
    lines = [f"- {idea}, on {where}:"]
    for at, t in tests:
        lines.append(f"  - {at}: {ci_text(t['diff'], t['ci_low'], t['ci_high'], signed=True)} {v.headline} "
                     f"(p {p_text(t['p'])}, Holm p {p_text(t.get('p_holm', np.nan))}"
                     f"{'; shown' if is_shown(t) else '; not shown'}).")
    if not tests:
        lines.append("  - no budget both lines reach and no run-by-run pair.")
    return lines


def external_models(ext, settings, others):
    """{label: verdicts or None} of the external task's own model (first) and each other model its
    settings declare (``others``: {label: (group, left out, verdicts) or None}; a label it lacks:
    None, not run)."""
    found = {label: others.get(label) for label in settings.claims.other_models}
    return {settings.claims.model_label: ext} | {label: entry[2] if entry else None for label, entry in found.items()}


def header(task, others, models):
    named = [f"{task}: {label}" if label else f"{task} (external model)" for label in models]
    holds = [f"holds on {label or task}" for label in models]
    both = [f"on {every(models)}", f"{' and '.join(models) if len(models) == 2 else 'the models'} agree"]
    return ["comparison"] + others + named + ["other tasks' ordering"] + holds + (both if len(models) > 1 else [])


def transfer_markdown(verdicts, others=None):
    """transfer.md's text ('' without an external task that shares a comparison with another);
    ``others``: {task: {label: (group, left out, verdicts) or None}} of the tasks' other models
    (``bench.report.build.other_model_groups``)."""
    verdicts = [v for v in verdicts if v is not None]
    settings, others, out = all_task_settings(), others or {}, []
    for ext in [v for v in verdicts if settings.get(v.task) and settings[v.task].claims.external_model]:
        models = external_models(ext, settings[ext.task], others.get(ext.task, {}))
        rest = [v for v in verdicts if v.task != ext.task]
        ideas = shared_comparisons(rest, models)
        if not ideas:
            continue
        rows = [comparison_row(idea, rest, models) for idea in ideas]
        details = [line for idea in ideas for label, v in models.items()
                   for line in detail_lines(v, idea, label if len(models) > 1 else None, ext.task)]
        figure = len(models) > 1 and all(others.get(ext.task, {}).get(label) for label in list(models)[1:])
        out += [intro(ext, [v.task for v in rest], models, figure), "",
                markdown(header(ext.task, [v.task for v in rest], models), rows), "", *details, ""]
    return "\n".join(out)


def intro(ext, others, models, figure):
    text = (f"Generated by `bench report` from the result files: do the orderings of the tasks whose models this "
            f"project trained ({', '.join(others)}) hold on `{ext.task}`, whose model was trained elsewhere? "
            f"Each cell lists where a difference is shown (Holm-adjusted p below {ALPHA} within that task's "
            f"claims file, budgets in mean passes, and run by run): *better* where the comparison's first side "
            f"is better in the task's headline metric. The ordering *holds* on {ext.task} where a difference "
            f"is shown there in the other tasks' direction and none against it; *reversed* where one is shown "
            f"against it.")
    if len(models) == 1:
        return text
    named = " and ".join(models)
    text += (f" `{ext.task}` is run on {len(models)} published models, {named}, each in its own result folder "
             f"(the task's `other_models`) and tested alike; *agree* where both show a difference in the same "
             f"direction and neither against it, *opposite* where they show opposite ones, *not run* where a "
             f"model has no runs of the comparison.")
    return text + (f" [model_size_{ext.task}.png](model_size_{ext.task}.png) draws each strategy family's frontier "
                   f"on each model." if figure else "")
