"""Whether the other tasks' orderings hold on a model trained elsewhere (bench.report.transfer, issue 31 item 5)."""
from types import SimpleNamespace

import pytest

IDEA = "EB-Sampler against top-k"


def shown_at(diff, p_holm, budget=None, outside=0.0):
    found = {"diff": diff, "ci_low": diff - 0.1, "ci_high": diff + 0.1, "p": p_holm / 2, "p_holm": p_holm,
             "outside": outside}
    return dict(found, budget=budget) if budget is not None else found


def verdict(task, at_budgets, higher_is_better=True, pairs=()):
    return SimpleNamespace(task=task, headline="accuracy", higher_is_better=higher_is_better,
                           ablations=[(IDEA, list(pairs), at_budgets)])


def test_a_cell_names_the_budgets_where_each_direction_is_shown():
    from bench.report.transfer import comparison_tests, task_cell
    v = verdict("a", [shown_at(0.2, 0.01, 8), shown_at(-0.2, 0.02, 16), shown_at(0.2, 0.3, 24),
                      shown_at(0.3, 0.01, 32, outside=0.4)])
    found, text = task_cell(v, comparison_tests(v.ablations[0][2], []))
    assert found == {"better": ["8"], "worse": ["16"]}
    assert text == "better at 8; worse at 16 (of 4 tested)"


def test_lower_is_better_turns_the_sign():
    from bench.report.transfer import comparison_tests, task_cell
    v = verdict("kl", [shown_at(-0.5, 0.001, 8)], higher_is_better=False)
    assert task_cell(v, comparison_tests(v.ablations[0][2], []))[0]["better"] == ["8"]


@pytest.mark.parametrize("others, external, ordering, said", [
    ([{"better": ["8"], "worse": []}], {"better": ["4"], "worse": []}, "better", "**holds**"),
    ([{"better": ["8"], "worse": []}], {"better": ["4"], "worse": ["16"]}, "better", "**reversed**"),
    ([{"better": [], "worse": ["8"]}], {"better": [], "worse": []}, "worse", "not shown"),
    ([{"better": ["8"], "worse": []}, {"better": [], "worse": ["8"]}], {"better": ["4"], "worse": []}, "mixed",
     "no ordering to carry (mixed on the other tasks)"),
    ([{"better": [], "worse": []}], {"better": ["4"], "worse": []}, "none shown",
     "no ordering to carry (none shown on the other tasks)"),
])
def test_the_verdict_on_the_external_task(others, external, ordering, said):
    from bench.report.transfer import others_ordering, transfer_verdict
    assert others_ordering(others) == ordering
    assert transfer_verdict(ordering, external) == said


def test_the_file_has_a_row_per_shared_comparison_and_the_external_tasks_numbers(monkeypatch):
    import bench.report.transfer as transfer
    from bench.settings import Claims
    settings = {name: SimpleNamespace(claims=Claims(external_model=name == "ext")) for name in ("own", "ext")}
    monkeypatch.setattr(transfer, "all_task_settings", lambda: settings)
    own = verdict("own", [shown_at(0.2, 0.01, 8)])
    pair = {"run": "a", "ablation": "b", "quality": shown_at(0.01, 0.5)}
    ext = verdict("ext", [shown_at(-0.05, 0.04, 4)], pairs=[pair])
    text = transfer.transfer_markdown([own, ext, None])
    row = next(line for line in text.splitlines() if line.startswith(f"| {IDEA}"))
    assert "better at 8 (of 1 tested)" in row and "worse at 4 (of 2 tested)" in row and "**reversed**" in row
    assert "4 passes: -0.05 [-0.15, 0.05] accuracy (p 0.020, Holm p 0.040; shown)" in text
    assert "`a` vs `b`: +0.01" in text and "not shown" in text
    assert transfer.transfer_markdown([own]) == ""    # no external task: no file
