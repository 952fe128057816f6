"""Named run presets: which tasks, which strategies per task, how many inputs and which seeds.

``python -m bench run`` without ``--strategies`` runs the ``default`` preset's sweep for each
chosen task; ``--preset NAME`` picks another preset; ``--tasks``, ``--strategies``, ``--limit``
and ``--seed`` override the preset's fields.
"""
from dataclasses import dataclass

from bench.errors import BenchError
from bench.registry import TASKS, closest, lookup, split_specs


# THE ONE PLACE TO ADD A STRATEGY TO THE FULL RUN: every registered strategy, per task, over a
# sweep that spans its range (from near-sequential to few passes). The `default` and `paper`
# presets run exactly these lists. New strategies go here, e.g. "mi:gamma=0.1",
# "mi_oracle:gamma=0.3", "learned:...". `python -m bench list` names registered strategies
# that are missing here.
# mi_oracle probes the model ~1,600 times per protein (an hour for 500 on 2 CPU cores), so the
# protein sweep leaves it out; README shows how it is run on the first 100 sequences.
def sweep(name, key, values, extra=""):
    """['name:key=v1extra', ...]: one strategy over values of its swept parameter."""
    return [f"{name}:{key}={v:g}{extra}" for v in values]


EB_GAMMAS_SUDOKU = (0.02, 0.05, 0.1, 0.3, 1, 2)
MI_GAMMAS_SUDOKU = (0.05, 0.1, 0.3, 0.6, 1, 1.5)
MI_GAMMAS_PROTEIN = (6, 12, 24)


def learned_sweep(budgets):
    """The learned order at each budget T, sampled (the mode it is trained in) and thresholded, each
    beside its untrained initialisation (init=true: EB-Sampler with the policy's gamma, capped at T)."""
    return [f"learned:T={t},mode={mode}{init}" for init in ("", ",init=true") for mode in ("sample", "threshold")
            for t in budgets]


LEARNED = learned_sweep((5, 10, 15))
# Each idea runs beside its ablation on the same gammas: mi with lam=0 (the greedy rule alone)
# and mi_eb against eb (the MI term on EB's rule); see VERDICTS below.
SWEEPS = {
    "sudoku": (["sequential"] + sweep("topk", "k", (2, 3, 5, 7, 10)) + sweep("margin", "k", (2, 5, 10))
               + sweep("eb", "gamma", EB_GAMMAS_SUDOKU) + sweep("threshold", "tau", (0.99, 0.95, 0.9, 0.8, 0.7))
               + sweep("mi", "gamma", MI_GAMMAS_SUDOKU) + sweep("mi", "gamma", MI_GAMMAS_SUDOKU, ",lam=0")
               + sweep("mi_eb", "gamma", EB_GAMMAS_SUDOKU) + ["mi_oracle:gamma=0.3,target=directed"] + LEARNED),
    "protein": (["sequential"] + sweep("topk", "k", (3, 4, 12)) + sweep("margin", "k", (3, 4, 12))
                + sweep("eb", "gamma", (0.1, 0.3, 1, 3, 10, 20)) + sweep("threshold", "tau", (0.9, 0.7))
                + sweep("mi", "gamma", (2,) + MI_GAMMAS_PROTEIN) + sweep("mi", "gamma", MI_GAMMAS_PROTEIN, ",lam=0")
                + sweep("mi_eb", "gamma", (3, 10, 20)) + LEARNED),
}
# The exact task (64 positions): the same sweep on the exact chain and on the trained MDM; on the
# chain the MI oracle reads exact MI (no probing).
GAMMAS_HMM = (1, 2, 4, 8)
LEARNED_HMM = learned_sweep((8, 16, 32))
SWEEP_HMM = (["sequential"] + sweep("topk", "k", (2, 4, 8, 16)) + sweep("margin", "k", (2, 4, 8))
             + sweep("eb", "gamma", GAMMAS_HMM) + sweep("threshold", "tau", (0.9, 0.7, 0.5))
             + sweep("mi", "gamma", GAMMAS_HMM) + sweep("mi", "gamma", GAMMAS_HMM, ",lam=0")
             + sweep("mi_eb", "gamma", GAMMAS_HMM) + LEARNED_HMM)
SWEEPS["hmm"] = SWEEP_HMM + sweep("mi_oracle", "gamma", (2, 4, 8))
# The oracle probes the trained MDM (V = 8 passes per probed row: about 12 minutes for 1,000
# sequences on 2 cores), so the hmm_mdm sweep leaves it out; the chain's exact oracle is in `hmm`.
SWEEPS["hmm_mdm"] = list(SWEEP_HMM)


def sweep_of(task_name, sweeps=SWEEPS):
    """The specs a preset runs on a task: its sweep, or for a task the sweeps do not name (a task
    folder just added) every registered strategy at its default spec."""
    from bench.registry import STRATEGIES, load_plugins
    if task_name in sweeps:
        return list(sweeps[task_name])
    load_plugins()
    return sorted(STRATEGIES)


DEFAULT_TASK = "sudoku"   # what `bench run` without --preset or --tasks runs


@dataclass(frozen=True)
class Ablation:
    """An idea against the same rule without it: two lines (strategy name + fixed parameters)
    compared at equal budgets, and run by run where their other parameters agree."""
    idea: str
    strategy: str
    where: dict
    without: str
    without_where: dict


@dataclass(frozen=True)
class Verdicts:
    """How `bench report` concludes on a task (headline metric units).

    Attributes:
        budgets: mean passes at which every strategy's frontier is compared (interpolated in log passes).
        margin: non-inferiority margin against sequential ("reaches sequential quality").
        ablations: each idea against its ablation.
    """
    budgets: tuple
    margin: float
    ablations: tuple = ()


MI_ABLATIONS = (
    Ablation("the MI term on the greedy rule (mi, lam=1 against lam=0)", "mi", {"lam": 1.0}, "mi", {"lam": 0.0}),
    Ablation("the MI term on EB's rule (mi_eb against eb)", "mi_eb", {"lam": 1.0}, "eb", {"order": "entropy"}),
)
# The symmetric oracle (the estimator's own target) probes every candidate that fits, several
# times the directed one's passes, so the default sweep keeps the committed directed run; the
# symmetric comparison appears wherever both runs exist (e.g. a --limit run of both).
ORACLE = (Ablation("exact symmetric MI by probing instead of the estimator (mi_oracle against mi, same target)",
                   "mi_oracle", {"target": "symmetric"}, "mi", {"lam": 1.0}),
          Ablation("exact directed MI by probing instead of the estimator (mi_oracle target=directed against mi; "
                   "the estimator learns the symmetric mean)", "mi_oracle", {"target": "directed"}, "mi", {"lam": 1.0}))
# Not an ablation but the exact task's question (issue 13): the two rules at equal passes.
MI_VS_EB = (Ablation("MI-guided decoding against EB-Sampler at equal passes (mi, lam=1 against eb; a comparison of "
                     "two rules, not an ablation)", "mi", {"lam": 1.0}, "eb", {"order": "entropy"}),)
# Issue 16: a trained order policy is credited only with what it adds over its initialisation.
MODE_WORD = {"sample": "sampled", "threshold": "thresholded"}
LEARNED_ABLATIONS = tuple(
    Ablation(f"the trained order policy over its untrained initialisation ({MODE_WORD[mode]}; learned against "
             f"learned init=true)", "learned", {"init": False, "mode": mode}, "learned", {"init": True, "mode": mode})
    for mode in ("sample", "threshold"))
VERDICTS = {
    "sudoku": Verdicts(budgets=(5, 6, 8, 12, 16, 24), margin=0.01, ablations=MI_ABLATIONS + ORACLE + LEARNED_ABLATIONS),
    # the headline (W1, bits): 0.003 is about the ladder's 10% substitution rung over the floor
    # (reports/protein_ladder.md), the smallest degradation the metric is built to see
    "protein": Verdicts(budgets=(8, 12, 16, 24), margin=0.003, ablations=MI_ABLATIONS + LEARNED_ABLATIONS),
    # KL in nats per sequence; sequential is exact (KL 0) on the chain
    "hmm": Verdicts(budgets=(8, 16, 24, 32), margin=0.1,
                    ablations=MI_ABLATIONS + ORACLE + MI_VS_EB + LEARNED_ABLATIONS),
    "hmm_mdm": Verdicts(budgets=(8, 16, 24, 32), margin=0.1, ablations=MI_ABLATIONS + MI_VS_EB + LEARNED_ABLATIONS),
}


@dataclass(frozen=True)
class Preset:
    """Tasks with their strategy specs and input limits, and the seeds to run.

    Attributes:
        name: what ``--preset`` calls it.
        about: one line for ``bench list``.
        strategies: task name -> list of strategy specs.
        limits: task name -> number of inputs (None: the full data).
        seeds: every seed the preset runs (a tuple), or task name -> its seeds.
        any_task: a task the preset does not name runs every registered strategy (``sweep_of``).
    """
    name: str
    about: str
    strategies: dict
    limits: dict
    seeds: tuple | dict = (0,)
    any_task: bool = False


PRESETS = {p.name: p for p in [
    Preset("ci", "small and deterministic: the CI regression gate (baseline in baselines/ci/)",
           strategies={"sudoku": ["sequential", "topk:k=3", "eb:gamma=0.3", "threshold:tau=0.9"],
                       "protein": ["sequential", "topk:k=4", "eb:gamma=1", "threshold:tau=0.7"],
                       "hmm": ["sequential", "topk:k=8", "eb:gamma=2", "mi_oracle:gamma=2"],
                       "hmm_mdm": ["sequential", "topk:k=8", "eb:gamma=2", "threshold:tau=0.7"]},
           limits={"sudoku": 100, "protein": 40, "hmm": 200, "hmm_mdm": 200}),
    Preset("default", "every strategy's sweep (SWEEPS) on the full data: 1,000 puzzles, 500 proteins, "
                      "1,000 sequences of the exact task (hmm, hmm_mdm)",
           strategies=SWEEPS, limits={"sudoku": None, "protein": None, "hmm": None, "hmm_mdm": None}, any_task=True),
    # Three seeds per task; a run that draws nothing (argmax values and a deterministic strategy:
    # most of Sudoku's sweep) runs its first seed only, since the others would repeat its records.
    # `bench report` pools the seeds of a run in its verdicts.
    Preset("paper", "the default sweep on the full data; 3 seeds for every run that draws random numbers",
           strategies=SWEEPS, limits={"sudoku": None, "protein": None, "hmm": None, "hmm_mdm": None},
           seeds=(0, 1, 2), any_task=True),
]}


@dataclass(frozen=True)
class TaskPlan:
    """One task of a run: its strategy specs, input limit and seeds."""
    task: str
    specs: list
    limit: int | None
    seeds: tuple


def get_preset(name):
    """The preset called ``name``; a one-line BenchError listing the presets otherwise."""
    if name not in PRESETS:
        raise BenchError(f"unknown preset {name!r}{closest(name, PRESETS)}; available: {', '.join(PRESETS)}")
    return PRESETS[name]


def plan(preset_name=None, tasks=None, strategies=None, limit=None, seed=None):
    """Resolve a preset and command-line overrides into one TaskPlan per task.

    Args:
        preset_name: a key of PRESETS; None means ``default`` (with Sudoku alone unless ``tasks``).
        tasks: comma-separated task names overriding the preset's.
        strategies: comma-separated specs overriding the preset's lists (for every task).
        limit: number of inputs overriding the preset's limits.
        seed: one seed overriding the preset's seeds.

    Returns:
        A list of TaskPlan, in the order the tasks were named.
    """
    preset = get_preset(preset_name or "default")
    names = split_specs(tasks) if tasks else (list(preset.strategies) if preset_name else [DEFAULT_TASK])
    if limit is not None and limit < 1:
        raise BenchError(f"--limit must be at least 1, got {limit}")
    plans = []
    for name in names:
        lookup("task", name, TASKS)
        if strategies is None and name not in preset.strategies and not preset.any_task:
            raise BenchError(f"preset {preset.name!r} has no strategies for task {name!r}; "
                             f"give --strategies or one of its tasks: {', '.join(preset.strategies)}")
        specs = split_specs(strategies) if strategies else sweep_of(name, preset.strategies)
        task_limit = limit if limit is not None else preset.limits.get(name)
        seeds = preset.seeds.get(name, (0,)) if isinstance(preset.seeds, dict) else preset.seeds
        plans.append(TaskPlan(name, specs, task_limit, (seed,) if seed is not None else seeds))
    return plans


def unswept(registered):
    """Registered strategy names that the default sweep of some task leaves out."""
    swept = {spec.partition(":")[0] for specs in SWEEPS.values() for spec in specs}
    return sorted(set(registered) - swept)
