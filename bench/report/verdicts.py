"""Verdicts over a task's runs on shared inputs: quality at equal pass budgets, the area under each
strategy's frontier, non-inferiority to a reference run, and paired ablations. From result files only.

One joint bootstrap over the inputs every run shares gives all the intervals: each replicate
resamples input indices once, and every run's mean passes and headline metric are recomputed on
that same resample, so differences between strategies keep their pairing.
"""
from dataclasses import dataclass, field

import numpy as np

from bench.multiplicity import ALPHA
from bench.paired import (
    N_BOOT,
    STATISTICS,
    BootstrapTest,
    PerInput,
    better_sign,
    chunked,
    difference_test,
    paired_difference,
    per_input,
    replicate_indices,
)
from bench.report.cost import Cost, pooled_cost, run_cost
from bench.report.interpolation import interpolate
from bench.report.sweeps import lower_estimate
from bench.results import Store, run_records
from bench.results.summary import batch_size_of, metric_of
from bench.settings import BUDGET_TOLERANCE as TOLERANCE
from bench.settings import order_is_drawn, task_settings

AREA_POINTS = 25  # log-spaced budgets the frontier area averages over
MAX_OUTSIDE = 0.05  # a lead whose budget lies outside a resampled line's range in more replicates is not shown


@dataclass
class ScoredRun:
    """A result with its headline and passes recomputable per input, and its Cost; ``lower``: for a
    run whose headline is only a bound (it draws its order: ``lower_end``), the headline's other end;
    ``second``: the headline measured against the task's second reference sample (``second_reference``)."""
    summary: dict
    quality: PerInput
    passes: PerInput
    cost: Cost | None = None
    lower: PerInput | None = None
    second: PerInput | None = None   # the headline against the task's second reference sample, if it has one
    label: str = field(init=False)

    def __post_init__(self):
        self.label = self.summary["label"]


def load_runs(results, root):
    """Runs of ``results`` (found in ``root``: a Store or its folder) whose headline can be
    recomputed from their records, restricted to the largest set sharing the same input indices;
    returns (runs, inputs left out as a count of runs)."""
    store, runs = root if isinstance(root, Store) else Store(root), []
    for result in results:
        path = store.records_file_of(result)
        if path is None:
            continue
        headline = metric_of(result, result["headline"])
        if headline is None:   # a run without the task's headline (a re-masking sampler's exact-task KL)
            continue
        records = run_records(result, path)
        quality = per_input(headline, records)
        passes = per_input({"name": "passes", "higher_is_better": False,
                            "per_input": {"statistic": "mean", "fields": ["passes"]}}, records)
        if quality is not None:
            cost = run_cost([r["passes"] for r in records], batch_size_of(result))
            scored = ScoredRun(result, quality, passes, cost, lower_end(result, records, quality),
                               second_headline(result, records))
            runs.append((tuple(r["index"] for r in records), scored))
    if not runs:
        return [], len(results)
    keys = [key for key, _ in runs]
    common = max(set(keys), key=keys.count)
    kept = [run for key, run in runs if key == common]
    return merge_seeds(kept), len(results) - len(kept)


def second_headline(result, records):
    """The PerInput of a run's headline against its task's second reference sample (``second_reference``
    in its settings), or None where the task has none or it does not apply to this run's data."""
    settings = task_settings(result["task"])
    second = settings.claims.second_reference if settings is not None else None
    metric = second.metric(result) if second is not None else None
    return per_input(metric, records) if metric is not None else None


def lower_end(result, records, quality):
    """For a run that draws its order, on a headline its task declares only an upper bound for such
    runs (``order_bounds``): the PerInput of its lower estimate (``order_lower``, where its summary
    holds one), else the declared lower end on every input; None for any other run."""
    settings = task_settings(result["task"])
    headline = result["headline"]
    if (settings is None or settings.drawn.bounds.get(headline) is None
            or not order_is_drawn(result["strategy"], result["config"]["strategy_params"])):
        return None
    estimate = lower_estimate(result, headline)
    lower = per_input(estimate, records) if estimate is not None else None
    if lower is not None:
        return lower
    floor = np.full(len(records), float(settings.drawn.bounds[headline]))
    return PerInput(quality.name, "mean", [floor], quality.higher_is_better, {})


def merge_seeds(runs):
    """One ScoredRun per strategy spec, its seeds pooled input by input: a resampled input index brings
    every seed's record of that index (seeds nested in inputs). Pairing across strategies holds input
    by input even where they ran different seeds (a sampled sweep's runs may have three, a
    deterministic rule one): a per-input metric takes each side's mean over its own seeds; a distance
    to a reference (whose plug-in value depends on how many samples it sees) pools only the seeds
    every run that depends on its seed has (``matched_seeds``), so that compared sets are equally large."""
    by_spec = {}
    for run in runs:
        by_spec.setdefault(run.summary["config"]["strategy_spec"], []).append(run)
    matched = matched_seeds(by_spec.values())
    return [pool_seeds(group, matched) for group in by_spec.values()]


def depends_on_seed(summary):
    """Whether a run's outputs change with its seed: it samples values (temperature > 0) or draws its order."""
    config = summary["config"]
    return (float(config.get("temperature") or 0.0) > 0
            or order_is_drawn(summary.get("strategy"), config.get("strategy_params", {})))


def matched_seeds(groups):
    """The seeds every seed-dependent spec of ``groups`` ran (sorted tuple), or None where no spec's headline
    is a distance, none depends on its seed, or they share none (then each pools all its own)."""
    sets = [{r.summary["config"]["seed"] for r in group} for group in groups
            if group[0].quality.distance and depends_on_seed(group[0].summary)]
    common = set.intersection(*sets) if sets else set()
    return tuple(sorted(common)) or None


def combine_seeds(parts):
    """One PerInput of the seeds' PerInputs ``parts``, pooled as its statistic declares: per-input values
    averaged ('mean'), counts added ('sum'), or each input's values of every seed joined ('join')."""
    first, pooled = parts[0], STATISTICS[parts[0].statistic].pooled
    if len(parts) == 1:
        return first
    if pooled == "join":
        columns = [np.stack([p.columns[k] for p in parts], 1) for k in range(len(first.columns))]
        return PerInput(first.name, first.statistic, columns, first.higher_is_better, first.extra, joined=True)
    columns = [sum(p.columns[k] for p in parts) for k in range(len(first.columns))]
    if pooled == "mean":
        columns = [c / len(parts) for c in columns]
    return PerInput(first.name, first.statistic, columns, first.higher_is_better, first.extra)


def seeds_for(group, metric, matched):
    """The runs of ``group`` whose ``metric`` (a PerInput name: 'quality', 'lower', 'second') pools: all,
    except that a distance of a seed-dependent run pools only the ``matched`` seeds."""
    first = getattr(group[0], metric)
    if matched is None or first is None or not first.distance or not depends_on_seed(group[0].summary):
        return group
    return [r for r in group if r.summary["config"]["seed"] in matched] or group


def pool_seeds(group, matched=None):
    """A ScoredRun whose per-input columns hold the seeds' records together (``combine_seeds``); a
    distance pools the ``matched`` seeds only (``seeds_for``), recorded as ``matched_seeds``."""
    group = sorted(group, key=lambda r: r.summary["config"]["seed"])
    seeds = [r.summary["config"]["seed"] for r in group]
    quality_runs = seeds_for(group, "quality", matched)
    if len(group) == 1:
        return group[0]
    summary = dict(group[0].summary, pooled_seeds=seeds, seed_values=[float(r.quality()) for r in group])
    if len(quality_runs) < len(group):
        summary["matched_seeds"] = [r.summary["config"]["seed"] for r in quality_runs]
    costs = [r.cost for r in group if r.cost is not None]
    lowers = [r.lower for r in seeds_for(group, "lower", matched)]
    lower = (None if any(x is None for x in lowers) else combine_seeds(lowers)
             if len({x.statistic for x in lowers}) == 1 else combine_seeds([floor_of(x) for x in lowers]))
    seconds = [r.second for r in seeds_for(group, "second", matched)]
    second = None if any(x is None for x in seconds) else combine_seeds(seconds)
    quality = combine_seeds([r.quality for r in quality_runs])
    return ScoredRun(summary, quality, combine_seeds([r.passes for r in group]),
                     pooled_cost(costs) if len(costs) == len(group) else None, lower, second)


def floor_of(lower):
    """A lower end as per-input values of one column (seeds whose lower ends were made differently
    pool on those)."""
    values = np.array([lower(np.array([[i]]))[0] for i in range(len(lower.columns[0]))])
    return PerInput(lower.name, "mean", [values], lower.higher_is_better, {})


def params(run):
    return run.summary["config"]["strategy_params"]


def same(value, wanted):
    """A run's parameter against a wanted one: numbers as floats, booleans and strings exactly; a run
    made before the parameter existed (None) matches nothing."""
    if value is None or isinstance(wanted, bool) or isinstance(value, bool):
        return value is wanted                       # JSON's true/false/null are singletons
    if isinstance(wanted, (int, float)):
        return float(value) == float(wanted)
    return value == wanted


def select_line(runs, strategy, where=None):
    """Runs of ``strategy`` whose parameters match ``where`` (numbers compared as floats), by passes."""
    def matches(run):
        wanted = (where or {}).items()
        return run.summary["strategy"] == strategy and all(same(params(run).get(k), v) for k, v in wanted)
    return sorted([r for r in runs if matches(r)], key=lambda r: r.passes())


@dataclass
class Line:
    """One strategy's sweep with its point values and bootstrap replicates."""
    name: str
    runs: list
    passes: np.ndarray        # [m] point values
    quality: np.ndarray       # [m]
    boot_passes: np.ndarray   # [R, m]
    boot_quality: np.ndarray  # [R, m]

    def at(self, budget, kind="linear"):
        """(point value, replicates [R]) of the quality at ``budget`` (``interpolate``'s ``kind``)."""
        return (interpolate(self.passes, self.quality, budget, kind),
                interpolate(self.boot_passes, self.boot_quality, budget, kind))

    def cost_at(self, budget):
        """(90th percentile of passes, batched steps per batch) at ``budget``: the runs' Costs
        interpolated like their quality (linear in log mean passes); NaN where a run has no Cost."""
        if not self.runs or any(run.cost is None for run in self.runs):
            return np.nan, np.nan
        return tuple(float(interpolate(self.passes, np.array([getattr(run.cost, name) for run in self.runs]), budget))
                     for name in ("p90", "steps_per_batch"))

    def area(self, low, high):
        """(point, replicates) of the mean quality over log-spaced budgets in [low, high]."""
        grid = np.exp(np.linspace(np.log(low), np.log(high), AREA_POINTS))
        points = [self.at(b) for b in grid]
        return float(np.mean([p for p, _ in points])), np.mean([r for _, r in points], axis=0)


def make_line(name, runs, idx):
    boot_p = np.stack([chunked(r.passes, idx) for r in runs], 1) if runs else np.zeros((len(idx), 0))
    boot_q = np.stack([chunked(r.quality, idx) for r in runs], 1) if runs else np.zeros((len(idx), 0))
    return Line(name, runs, np.array([r.passes() for r in runs]), np.array([r.quality() for r in runs]),
                boot_p, boot_q)


def is_distance(lines):
    """Whether the lines' quality metric is a plug-in distance (its statistic registered as one):
    its bootstrap replicates are reflected about the estimate (``BootstrapTest.of``)."""
    return any(line.runs and line.runs[0].quality.distance for line in lines)


@dataclass
class BudgetCell:
    value: float
    low: float
    high: float
    outside: float = 0.0    # share of bootstrap replicates whose budget lies outside the line's range
    best: bool = False      # best at this budget with its lead over the runner-up shown
    p90: float = np.nan     # 90th percentile of passes over inputs at this budget (Line.cost_at)
    steps_per_batch: float = np.nan   # batched steps of an average batch at this budget
    passes: float = np.nan  # a calibrated run's own mean passes here (NaN: the line interpolated to the budget)
    seed_values: tuple = ()  # a calibrated run's headline under each of its seeds (where it pools several)


def budget_cell(value, replicates, distance, cost=(np.nan, np.nan)):
    """The BudgetCell of a line's point value and replicates at one budget, with its (p90,
    steps per batch) ``cost``."""
    test = BootstrapTest.of(replicates, value, distance)
    return BudgetCell(value, *test.interval(), test.dropped_share, False, *cost)


def lead_test(a, b, budget, kind, distance):
    """The BootstrapTest of line ``a`` minus line ``b`` at ``budget`` under ``kind`` interpolation."""
    (va, ra), (vb, rb) = a.at(budget, kind), b.at(budget, kind)
    return BootstrapTest.of(ra - rb, va - vb, distance)


@dataclass
class Lead:
    """The best line at a budget against the runner-up: the difference (best - runner-up) under
    linear interpolation (``test``) and under the monotone cubic (``pchip``). ``test["p"]`` is
    the larger of the two p-values (1 where the two differences disagree in sign): the lead holds
    under both interpolations or is not claimed. ``outside`` is the larger share of replicates
    whose budget lies outside a resampled line's range (they are left out of both)."""
    budget: float
    best: str
    runner_up: str
    test: dict
    pchip: dict
    outside: float
    chosen: bool = False    # the two lines were chosen on validation (the test inputs only confirm)
    runs: tuple = ()        # calibrated: the two runs compared (best, runner-up); () where interpolated

    @property
    def diff(self):
        return self.test["diff"]

    @property
    def shown(self):
        """Holm-adjusted p below ALPHA (``bench.report.claims`` adjusts the family) and few
        replicates outside the lines' ranges."""
        return self.test.get("p_holm", np.nan) < ALPHA and self.outside <= MAX_OUTSIDE


def interpolated_difference(a, b, budget, distance):
    """(test, pchip, outside) of line ``a`` minus line ``b`` at ``budget``: the linear
    interpolation's difference dict, whose ``p`` is the larger of both interpolations' p-values
    (1 where their differences disagree in sign; ``p_linear`` its own), the monotone cubic's
    dict, and the larger share of replicates outside a line's range."""
    linear, cubic = (lead_test(a, b, budget, kind, distance) for kind in ("linear", "pchip"))
    test, pchip = linear.summary(), cubic.summary()
    agree = np.sign(test["diff"]) == np.sign(pchip["diff"])
    test.update(p_linear=test["p"], p=max(test["p"], pchip["p"]) if agree else 1.0)
    return test, pchip, max(linear.dropped_share, cubic.dropped_share)


def make_lead(budget, best, runner_up, distance, chosen=False):
    """The Lead of line ``best`` over line ``runner_up`` at ``budget``."""
    return Lead(budget, best.name, runner_up.name, *interpolated_difference(best, runner_up, budget, distance), chosen)


def budget_table(lines, budgets, higher_is_better, chosen=None):
    """({line: {budget: BudgetCell}}, [Lead per budget]); the best is marked by ``mark_best`` once
    the family's p-values are adjusted. ``chosen`` ({budget: (best, runner-up)}, made on
    validation) names the two lines a budget's lead compares; where a chosen line does not reach
    the budget here, there is no lead at that budget."""
    cells, leads, sign, distance = {}, [], better_sign(higher_is_better), is_distance(lines)
    for budget in budgets:
        values = {line.name: line.at(budget) for line in lines}
        for line in lines:
            value, reps = values[line.name]
            cells.setdefault(line.name, {})[budget] = (None if np.isnan(value) else
                                                       budget_cell(value, reps, distance, line.cost_at(budget)))
        reached = {line.name: line for line in lines if not np.isnan(values[line.name][0])}
        if chosen is not None:
            pair = [reached.get(name) for name in chosen.get(budget, ())]
            if len(pair) == 2 and all(pair):
                leads.append(make_lead(budget, *pair, distance, chosen=True))
            continue
        ranked = sorted(reached.values(), key=lambda line: -sign * values[line.name][0])
        if len(ranked) >= 2:
            leads.append(make_lead(budget, ranked[0], ranked[1], distance))
    return cells, leads


def runs_at_budgets(lines, budgets, tolerance=TOLERANCE):
    """{budget: {line: run label}}: each line's run whose mean passes lie within ``tolerance``
    of the budget (the closest where several do); a line with none is absent at that budget."""
    out = {}
    for budget in budgets:
        for line in lines:
            near = [(abs(p / budget - 1), run.label) for p, run in zip(line.passes, line.runs)
                    if abs(p / budget - 1) <= tolerance]
            if near:
                out.setdefault(budget, {})[line.name] = min(near)[1]
    return out


def calibrated_cell(line, j, distance):
    """The BudgetCell of run ``j`` of ``line`` itself (no interpolation), with its mean passes and Cost."""
    run = line.runs[j]
    cost = (run.cost.p90, run.cost.steps_per_batch) if run.cost is not None else (np.nan, np.nan)
    cell = budget_cell(line.quality[j], line.boot_quality[:, j], distance, cost)
    cell.passes = float(line.passes[j])
    cell.seed_values = tuple(run.summary.get("seed_values", ()))
    return cell


def calibrated_table(lines, budgets, higher_is_better, at_budget, chosen=None):
    """``budget_table`` from calibrated runs: at each budget, each line's run named in
    ``at_budget`` ({budget: {line: run label}}, the runs whose mean passes hit it: chosen on
    validation, or on these inputs) is its cell as it is, and the lead is the paired difference of
    two such runs, the two ``chosen`` names ({budget: (best, runner-up)}) or else the two best here."""
    cells, leads, sign, distance = {}, [], better_sign(higher_is_better), is_distance(lines)
    for budget in budgets:
        named, runs = at_budget.get(budget, {}), {}
        for line in lines:
            j = next((j for j, run in enumerate(line.runs) if run.label == named.get(line.name)), None)
            cells.setdefault(line.name, {})[budget] = None if j is None else calibrated_cell(line, j, distance)
            if j is not None:
                runs[line.name] = line.runs[j]
        ranked = sorted(runs, key=lambda name: -sign * runs[name].quality())
        pair = chosen.get(budget, ()) if chosen is not None else ranked[:2]
        if len(pair) == 2 and all(name in runs for name in pair):
            leads.append(calibrated_lead(budget, *pair, runs, chosen is not None))
    return cells, leads


def calibrated_lead(budget, best, runner_up, runs, chosen):
    """The Lead of calibrated run ``runs[best]`` over ``runs[runner_up]``: their paired difference
    (``paired_difference``: Tango score for 0/1 outcomes, else the paired bootstrap)."""
    test = paired_difference(runs[best].quality, runs[runner_up].quality)
    return Lead(budget, best, runner_up, test, None, 0.0, chosen, (runs[best], runs[runner_up]))


def mark_best(cells, leads, higher_is_better):
    """Mark each budget's best line where its lead is shown."""
    for lead in leads:
        cells[lead.best][lead.budget].best = lead.shown and better_sign(higher_is_better) * lead.diff > 0


def areas(lines, low, high):
    """{line: BudgetCell of the mean quality over [low, high]}, None where a line does not span it."""
    out, distance = {}, is_distance(lines)
    for line in lines:
        value, reps = line.area(low, high)
        out[line.name] = None if np.isnan(value) else budget_cell(value, reps, distance)
    return out


def non_inferiority(run, reference, tolerance):
    """'yes' (non-inferior: the one-sided test of run - reference against a difference at the
    non-inferiority margin ``tolerance`` in the worse direction gives p below ALPHA), 'no' (worse
    beyond it: the whole 95% CI is), or 'not shown'; with the paired difference dict, whose ``p``
    is that one-sided p (``p_zero``: the two-sided p of a difference of 0)."""
    test = difference_test(run.quality, reference.quality)
    sign = better_sign(run.quality.higher_is_better)
    result = test.summary()
    p = test.p_greater(-tolerance) if sign > 0 else test.p_less(tolerance)
    result.update(p_zero=result["p"], p=p, test=result["test"] + ", one-sided at the margin")
    best = max(sign * result["ci_low"], sign * result["ci_high"])
    verdict = "yes" if p < ALPHA else ("no" if best < -tolerance else "not shown")
    return verdict, result


def joint_indices(runs, n_boot=N_BOOT):
    """One [R, n] draw of input indices shared by every run."""
    return replicate_indices(len(runs[0].passes.columns[0]), n_boot)
