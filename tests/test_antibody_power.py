"""tasks/antibody/power.py: the paired t-test's power and the domains it needs, against
statsmodels, and the SD of per-domain differences read from run records."""
import json

import numpy as np
import pytest
from statsmodels.stats.power import TTestPower

from bench.results import SCHEMA_VERSION, records_file_text, text_digest
from tasks.antibody.power import detectable, domains_needed, load_runs, pair_sds, paired_power


@pytest.mark.parametrize("sd", [0.03, 0.137, 0.21])
def test_power_and_domains_needed_agree_with_statsmodels(sd):
    solver = TTestPower()
    assert paired_power(60, sd, 0.02, 0.05) == pytest.approx(solver.power(0.02 / sd, 60, 0.05), abs=1e-6)
    needed = domains_needed(sd, 0.02, 0.8, 0.05)
    assert needed == int(np.ceil(solver.solve_power(0.02 / sd, nobs=None, alpha=0.05, power=0.8)))
    assert paired_power(needed - 1, sd, 0.02, 0.05) < 0.8 <= paired_power(needed, sd, 0.02, 0.05)
    assert paired_power(296, sd, detectable(296, sd, 0.8, 0.05), 0.05) == pytest.approx(0.8, abs=1e-6)


def write_run(folder, spec, values, passes, seed=0):
    """A complete run summary (as bench.results.Store reads one) with its records beside it."""
    config = {"task": "antibody", "strategy_spec": spec, "data_id": "d", "model_id": "m", "limit": len(values),
              "seed": seed, "task_options": {"data": "test"}}
    records = [{"index": i, "passes": passes, "recovery": v, "species": "human"} for i, v in enumerate(values)]
    text = records_file_text(config, records)
    stem = folder / f"{spec}-seed{seed}"
    summary = {"schema_version": SCHEMA_VERSION, "task": "antibody", "label": spec, "config": config, "metrics": [],
               "model": {"id": "m"}, "provenance": {}, "n_samples": len(records),
               "records_file": stem.with_suffix(".jsonl").name, "records_sha256": text_digest(text)}
    stem.with_suffix(".json").write_text(json.dumps(summary))
    stem.with_suffix(".jsonl").write_text(text)


def test_the_sd_of_per_domain_differences_from_records(tmp_path):
    write_run(tmp_path, "a", [0.5, 0.6, 0.7, 0.4], 10)
    write_run(tmp_path, "b", [0.4, 0.6, 0.5, 0.4], 11)
    write_run(tmp_path, "c", [0.1, 0.2, 0.3, 0.4], 40)
    write_run(tmp_path, "other-seed", [0.0] * 4, 10, seed=1)   # another group: left out
    _, runs, split, species = load_runs(tmp_path, "recovery")
    assert sorted(runs) == ["a", "b", "c"] and split == "test" and species == {"human"}
    sds = {(a, b): (sd, similar) for a, b, sd, similar in pair_sds(runs)}
    assert sds[("a", "b")][0] == pytest.approx(np.std([0.1, 0, 0.2, 0], ddof=1)) and sds[("a", "b")][1]
    assert not sds[("a", "c")][1]    # 10 against 40 mean passes: not the same budget
