"""The exact task's decomposition table for `bench report` (reports/hmm_decomposition.md).

On the exact chain (task ``hmm``) a strategy's KL is its own sampling error. On the trained MDM
(task ``hmm_mdm``) sequential decoding's KL is the denoiser's error, and a strategy's excess over
it (paired over the same inputs and seeds) is the strategy's error on that model. Imports no
model code: `bench report` loads this module alone.
"""
from pathlib import Path

from bench.paired import paired_difference
from bench.registry import register_report
from bench.report.render import markdown
from bench.report.verdicts import load_runs

TASKS = ("hmm", "hmm_mdm")


def runs_by_spec(store, task):
    """{strategy spec: Run} of ``task``'s runs of its own model that have records (seeds pooled).
    Runs of a model fine-tuned from it (``derived_from``: bench.report.denoisers pairs those) share
    its specs and are left out, so a row never holds another model's run."""
    results = [r for r in store.runs(quiet=True) if r["task"] == task and "derived_from" not in r["model"]]
    runs, _ = load_runs(results, store)
    return {run.summary["config"]["strategy_spec"]: run for run in runs}


def cell(value, low, high, digits=2):
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def kl_cell(run):
    if run is None:
        return "-", "-"
    metric = next(m for m in run.summary["metrics"] if m["name"] == "kl_nats")
    passes = next(m for m in run.summary["metrics"] if m["name"] == "passes")
    return f"{passes['value']:.1f}", cell(metric["value"], metric["ci_low"], metric["ci_high"])


def excess_cell(run, sequential):
    """The paired excess of ``run`` over sequential decoding on the same model, or '-'."""
    if run is None or sequential is None or len(run.quality.columns[0]) != len(sequential.quality.columns[0]):
        return "-"
    diff = paired_difference(run.quality, sequential.quality)
    return cell(diff["diff"], diff["ci_low"], diff["ci_high"]) + f", p {diff['p']:.3g}"


def decomposition_rows(chain_runs, mdm_runs):
    specs = [s for s in chain_runs if s in mdm_runs] + [s for s in chain_runs if s not in mdm_runs] + \
        [s for s in mdm_runs if s not in chain_runs]
    order = sorted(specs, key=lambda s: -float(kl_cell(chain_runs.get(s) or mdm_runs[s])[0]))
    mdm_sequential = next((run for spec, run in mdm_runs.items() if spec.startswith("sequential")), None)
    rows = []
    for spec in order:
        chain_passes, chain_kl = kl_cell(chain_runs.get(spec))
        mdm_passes, mdm_kl = kl_cell(mdm_runs.get(spec))
        rows.append([spec, chain_passes, chain_kl, mdm_passes, mdm_kl, excess_cell(mdm_runs.get(spec), mdm_sequential)])
    return rows


HEADER = ["strategy", "passes (chain)", "KL on the exact chain: the strategy's own error (nats)",
          "passes (MDM)", "KL on the trained MDM (nats)", "MDM excess over MDM sequential (paired diff [CI], p)"]


@register_report("hmm")
def report_hmm(store, out_dir, figures=True):
    """reports/hmm_decomposition.md when runs of either exact-task model exist in ``store``; returns
    the paths."""
    chain_runs, mdm_runs = (runs_by_spec(store, task) for task in TASKS)
    if not chain_runs and not mdm_runs:
        return []
    path = Path(out_dir) / "hmm_decomposition.md"
    intro = ("KL(q||p) in nats per sequence with 95% bootstrap CIs; seeds pooled. On the exact chain the "
             "KL is the strategy's own sampling error (sequential is exact: 0). On the trained MDM, "
             "sequential's KL is the denoiser's error and the last column is each strategy's excess over it.\n\n")
    path.write_text(intro + markdown(HEADER, decomposition_rows(chain_runs, mdm_runs)) + "\n")
    return [path]
