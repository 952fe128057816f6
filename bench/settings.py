"""What a task and a strategy family declare about runs and verdicts, each in its own light
``presets`` module (no model code: `bench report` and `bench plan` load them without torch).

A task's ``tasks/<name>/presets.py`` calls ``register_task_settings``: the strategy specs of each
preset tier it takes part in, its input limit per tier, and its verdict settings (the reference
run, the pass budgets, the non-inferiority margin, which ablations apply); they are kept as a
TaskSettings in the parts each reader takes (``tiers``, ``claims``, ``drawn``). A strategy family's
``presets.py`` (a package under ``strategies/``) calls ``register_ablation`` for each idea it
must be credited against. ``bench`` itself names no task and no strategy.
"""
import sys
from dataclasses import dataclass, field, replace

from bench.errors import BenchError
from bench.registry import claim, load_plugins

TIERS = ("quick", "default", "paper", "ci", "retrained")   # the preset tiers a task may declare specs for
SPLIT_TIER = "default"   # the tier whose specs the validation preset runs on a task's validation split
BUDGET_TOLERANCE = 0.02   # a run is at a pass budget when its mean passes lie within 2% of it
TASK_SETTINGS = {}   # task name -> TaskSettings
MODEL_SETTINGS = {}  # (task name, --model) -> TaskSettings (register_model_settings)
ABLATIONS = {}       # key -> Ablation
DENOISER_ABLATIONS = {}   # key -> DenoiserAblation
DRAWN_ORDERS = {}    # (strategy name, parameters) -> the parameters (a dict) of runs that draw their order


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
class DenoiserAblation:
    """A denoiser fine-tuned from a task's model against that model, crossed with a trained order
    against heuristics: `bench report` pairs the runs of every model whose summaries name the task's
    compared model as ``derived_from`` with that model's runs on the same inputs (bench.report.denoisers).

    Attributes:
        idea: what the fine-tuning is, in words.
        order: the strategy name of the trained order; ``order_where`` its fixed parameters.
        heuristics: strategy names each order run is compared with at its mean passes, on each denoiser.
        stem: the report file is ``<stem>_<task>.md``.
        pair_ignores: parameters two order runs may differ in and still pair across the denoisers
            (the file of the order trained with each).
    """
    idea: str
    order: str
    order_where: dict
    heuristics: tuple
    stem: str
    pair_ignores: tuple = ()


@dataclass(frozen=True)
class Verdicts:
    """How `bench report` concludes on a task (headline metric units).

    Attributes:
        budgets: mean passes at which every strategy's frontier is compared (interpolated in log passes).
        margin: non-inferiority margin against the reference ("reaches the reference's quality").
        reference: the strategy name of the run every speed-up is measured against (None: the line
            with the most mean passes, the one that reveals least per pass).
        ablations: the Ablation objects that apply (resolved from the keys a task names).
        calibrated: the budget table compares runs whose mean passes hit each budget (the task's
            BudgetCalibration) instead of sweeps interpolated to it.
    """
    budgets: tuple
    margin: float
    reference: str | None = None
    ablations: tuple = ()
    calibrated: bool = False


@dataclass(frozen=True)
class Validation:
    """Where a task's choices are made (the ``validation`` preset runs its default specs there).

    Attributes:
        seed: the seed of the validation runs (a task whose inputs are drawn by the seed, as the
            exact tasks' are, gets its validation inputs from it).
        data: the task's validation input file (None: its default data, for a task whose inputs
            the seed draws).
        limit: inputs per validation run (None: all).
    """
    seed: int = 0
    data: str | None = None
    limit: int | None = None


@dataclass(frozen=True)
class Knob:
    """A strategy line whose budget-table runs are calibrated: ``template`` (NAME or NAME:k=v,...
    without the knob) with its continuous parameter ``knob`` searched over [low, high]."""
    template: str
    knob: str
    low: float
    high: float


@dataclass(frozen=True)
class BudgetCalibration:
    """The runs a task's budget table compares (issue 29): each Knob set so that mean passes hit
    each of its Verdicts budgets on the validation split (`bench calibrate --budgets`, which writes
    ``file``: JSON the presets add to the default and paper tiers). ``limit``: validation inputs
    each bisection decodes (None: the split's)."""
    knobs: tuple
    file: str
    limit: int | None = None


@dataclass(frozen=True)
class SecondReference:
    """A task's second reference sample (``register_task_settings(second_reference=...)``): ``metric``
    maps a result summary to its headline metric dict measured against the second sample (None where it
    does not apply to that run); ``first`` and ``second`` name the two samples in the claims."""
    first: str
    second: str
    metric: object


@dataclass(frozen=True)
class Tiers:
    """What `bench run` runs of a task (bench.presets, bench.run): its specs, input limits and seeds
    per preset tier, whether it is the headline task, and its validation split."""
    specs: dict                                  # tier -> list of strategy specs
    limits: dict = field(default_factory=dict)   # tier -> number of inputs (absent: the full data)
    seeds: dict = field(default_factory=dict)    # tier -> the seeds it runs here (absent: the preset's)
    headline: bool = False                       # what `bench run` without --tasks or --preset runs
    validation: Validation | None = None         # the split the validation preset runs on (None: the task has none)


@dataclass(frozen=True)
class Claims:
    """How the report concludes on a task (bench.report: verdicts, claims, transfer) and what
    `bench calibrate` calibrates for its budget table."""
    verdicts: Verdicts | None = None
    ablation_keys: tuple = ()                    # keys of the registered Ablations that apply
    calibration: BudgetCalibration | None = None   # the budget table's calibrated runs (None: interpolated)
    second_reference: SecondReference | None = None   # every claim also tested against a second reference
    external_model: bool = False                 # its model was trained elsewhere (bench.report.transfer)
    model_label: str | None = None               # short name of the model its results hold ("AntiBERTy")
    # label -> results folder of the same task on another model, relative to the parent of the
    # results folder read (as validation/ is): transfer.md and the model-size figure read them
    other_models: dict = field(default_factory=dict)


@dataclass(frozen=True)
class DrawnOrders:
    """How the figures and claims read the metrics of runs that draw their order at random."""
    bounds: dict = field(default_factory=dict)   # metric -> lower end (None: undefined) of its range
    lower: dict = field(default_factory=dict)    # bounded metric -> the metric holding a run's lower estimate


@dataclass(frozen=True)
class TaskSettings:
    """One task's declaration, in the parts each reader takes: what runs (``tiers``), how the report
    concludes (``claims``), how drawn orders' metrics are read (``drawn``), and the strategy names
    drawn in grey in every family's panel (``figure_references``)."""
    task: str
    tiers: Tiers
    claims: Claims = field(default_factory=Claims)
    drawn: DrawnOrders = field(default_factory=DrawnOrders)
    figure_references: tuple = ()


def sweep(name, key, values, extra=""):
    """['name:key=v1extra', ...]: one strategy over values of its swept parameter."""
    return [f"{name}:{key}={v:g}{extra}" for v in values]


def caller_module(depth=2):
    return sys._getframe(depth).f_globals.get("__name__", "?")


def register_ablation(key, ablation):
    """Declare ``ablation`` under ``key`` (a task's settings name the keys that apply to it)."""
    return claim("ablation", ABLATIONS, key, ablation, origin=caller_module())


def register_denoiser_ablation(key, ablation):
    """Declare ``ablation`` (a DenoiserAblation) under ``key``: `bench report` writes its file for every
    task with runs of a model derived from the task's compared one."""
    return claim("denoiser ablation", DENOISER_ABLATIONS, key, ablation, origin=caller_module())


def denoiser_ablations():
    load_plugins("presets")
    return dict(DENOISER_ABLATIONS)


def register_drawn_order(strategy, where=None):
    """Declare that runs of ``strategy`` whose parameters include ``where`` (every run: None)
    draw their order at random (its ``samples()``; declare each case apart where there are
    several), for what reads result files without loading strategies: a figure draws such a run's
    order-dependent metrics as bounds (``order_bounds``). tests/test_figures_print.py checks the
    declarations against ``samples()`` on every preset spec."""
    where = dict(where or {})
    key = f"{strategy}:" + ",".join(f"{k}={v}" for k, v in sorted(where.items()))
    return claim("drawn order", DRAWN_ORDERS, key, (strategy, where), origin=caller_module())


def order_is_drawn(strategy, params):
    """Whether a run of ``strategy`` with ``params`` draws its order at random, as declared."""
    load_plugins("presets")
    return any(name == strategy and all(params.get(k) == v for k, v in where.items())
               for name, where in DRAWN_ORDERS.values())


def register_task_settings(task, specs, *, limits=None, verdicts=None, ablations=(), headline=False,
                           figure_references=(), order_bounds=None, validation=None, order_lower=None,
                           calibration=None, seeds=None, external_model=False, second_reference=None,
                           model_label=None, other_models=None):
    """Declare task ``task``'s preset specs (tier -> specs), limits (tier -> inputs), verdict
    settings and the keys of the ablations that apply to it; checked in one line each.

    Figures: ``figure_references`` are the strategies every family's panel is drawn against (besides
    the reference run); ``order_bounds`` names the metrics whose value is only an upper bound for a
    strategy that draws its order at random (``Strategy.samples()``), each with the lower end of
    the range it is drawn as, or None for a metric that such a run does not estimate at all (its
    points are then left out). ``order_lower`` maps such a metric to the metric that holds a run's
    lower estimate of it where one was made (else the lower end counts): a claim on such a run is
    tested at both ends (bench.report.claims). ``validation`` (a Validation) is the split the task's choices are
    made on: the ``validation`` preset runs the task's default specs there. ``calibration`` (a
    BudgetCalibration, which needs ``validation`` and ``verdicts``): the budget table compares runs
    calibrated to each budget instead of interpolated sweeps. ``seeds`` (tier -> seeds): where a
    task runs other seeds than the preset's (a run that draws nothing runs the first only).
    ``external_model``: the task's model was trained by others, not by this project; `bench report`
    asks whether the orderings of the other tasks hold on it (bench.report.transfer).
    ``model_label`` names the model of the task's own results; ``other_models`` (label -> folder,
    relative to the parent of the results folder `bench report` reads) the runs of the same task on
    other models, kept apart because a report keeps one model's group per task: transfer.md gives
    each model's verdicts and `bench report` draws them side by side (``model_size_<task>``).
    ``second_reference`` (a SecondReference: the headline measured against a second reference sample,
    disjoint from the first): every claim is tested against both references and shown only where both
    agree."""
    unknown = sorted((set(specs) | set(limits or {}) | set(seeds or {})) - set(TIERS))
    if unknown:
        raise BenchError(f"task {task!r} declares specs for unknown preset tiers {', '.join(unknown)}; "
                         f"tiers are {', '.join(TIERS)}")
    if verdicts is not None and not (verdicts.budgets and all(b > 0 for b in verdicts.budgets)):
        raise BenchError(f"task {task!r} declares pass budgets {verdicts.budgets!r}; give at least one, each above 0")
    if calibration is not None and (validation is None or verdicts is None):
        raise BenchError(f"task {task!r} declares a budget calibration without a validation split and verdicts; "
                         f"give validation= and verdicts= too")
    if other_models and not model_label:
        raise BenchError(f"task {task!r} declares other models without a model_label; name its own model too")
    tiers = Tiers(dict(specs), dict(limits or {}), {tier: tuple(s) for tier, s in (seeds or {}).items()}, headline,
                  validation)
    claims = Claims(verdicts, tuple(ablations), calibration, second_reference, external_model, model_label,
                    dict(other_models or {}))
    drawn = DrawnOrders(dict(order_bounds or {}), dict(order_lower or {}))
    settings = TaskSettings(task, tiers, claims, drawn, tuple(figure_references))
    return claim("task settings", TASK_SETTINGS, task, settings, origin=caller_module())


def register_model_settings(task, model, specs, *, limits=None, validation=None, seeds=None, calibration=None):
    """The tiers task ``task`` runs under ``--model model`` (a second model of the task, say a
    published one that reads a subset of its inputs): its specs, limits, seeds, validation split and
    budget calibration replace the task's there; its verdicts, ablations and figures stay the task's.
    Declared after ``register_task_settings(task, ...)``, in the same module."""
    base = TASK_SETTINGS.get(task)
    if base is None:
        raise BenchError(f"model settings for task {task!r} before its task settings; register_task_settings first")
    tiers = replace(base.tiers, specs=dict(specs), limits=dict(limits or {}),
                    seeds={tier: tuple(s) for tier, s in (seeds or {}).items()},
                    validation=validation or base.tiers.validation)
    settings = replace(base, tiers=tiers, claims=replace(base.claims, calibration=calibration))
    return claim("model settings", MODEL_SETTINGS, (task, model), settings, origin=caller_module())


def calibration_entries(path):
    """The entries a budget-calibration file holds ([] where it does not exist yet)."""
    import json
    from pathlib import Path
    return json.loads(Path(path).read_text())["runs"] if Path(path).is_file() else []


def calibrated_specs(settings):
    """The specs ``settings``' budget calibration found within tolerance at its verdict budgets (its
    file; [] before `bench calibrate --budgets` has written it), each once, in the file's order."""
    if settings is None or settings.claims.calibration is None:
        return []
    found = calibration_entries(settings.claims.calibration.file)
    budgets = settings.claims.verdicts.budgets
    return list(dict.fromkeys(e["spec"] for e in found if e["within"] and e["budget"] in budgets))


def task_settings(task, model=None):
    """The settings task ``task`` declared (those of ``--model model`` where it declared them:
    ``register_model_settings``), or None (a task folder without a presets module)."""
    load_plugins("presets")
    return MODEL_SETTINGS.get((task, model)) or TASK_SETTINGS.get(task)


def all_task_settings():
    load_plugins("presets")
    return dict(TASK_SETTINGS)


def verdicts_for(task):
    """Task ``task``'s Verdicts with its ablations resolved, or None when it declares none. An
    ablation key no family registered is a one-line error naming the task and the keys known."""
    settings = task_settings(task)
    claims = settings.claims if settings is not None else Claims()
    if claims.verdicts is None:
        return None
    missing = [key for key in claims.ablation_keys if key not in ABLATIONS]
    if missing:
        raise BenchError(f"task {task!r} names ablations {', '.join(missing)} that no strategy family registers; "
                         f"registered: {', '.join(sorted(ABLATIONS)) or 'none'}")
    ablations = tuple(ABLATIONS[key] for key in claims.ablation_keys)
    v = claims.verdicts
    return Verdicts(v.budgets, v.margin, v.reference, ablations, claims.calibration is not None)
