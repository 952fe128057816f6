"""How many domains a paired comparison of two antibody runs needs to detect a difference in
recovery: from committed per-domain records, the SD of per-domain differences between pairs of
runs on the same domains, and the smallest n at which a two-sided paired t-test at ``alpha`` has
the asked power for ``delta`` (the noncentral t, not the normal approximation).

    python -m tasks.antibody.power                                  # results/antibody
    python -m tasks.antibody.power results_sapiens/antibody --delta 0.02

"Typical pairs" are read two ways: every pair of runs of the folder's largest comparison group
(one model, data, limit and seed, as `bench report` groups them), and the pairs a claim would
compare: runs whose mean passes are within 25% of each other (same budget, different rule).
"""
import argparse
import itertools
from collections import Counter

import numpy as np
from scipy import optimize, stats

from bench.results import Store
from bench.results.identity import comparison_key

SIMILAR_PASSES = 1.25   # a pair at "the same budget": the larger mean passes at most 25% above the smaller


def group_key(summary):
    """The comparison group of a run (bench.results.identity): model, data, limit, seed and the rest."""
    return comparison_key(summary)


def load_runs(folder, field):
    """(the group's key, {spec: (mean passes, {domain index: field})}, its split, its species) of
    the largest comparison group in ``folder``."""
    store = Store(folder)
    summaries = dict(store.runs(with_paths=True))
    biggest = Counter(group_key(s) for s in summaries.values()).most_common(1)[0][0]
    runs, species, split = {}, set(), None
    for path, summary in summaries.items():
        if group_key(summary) != biggest:
            continue
        records = store.records(path, summary)
        runs[summary["config"]["strategy_spec"]] = (float(np.mean([r["passes"] for r in records])),
                                                    {r["index"]: float(r[field]) for r in records})
        species |= {r["species"] for r in records}
        split = summary["config"]["task_options"]["data"]
    return biggest, runs, split, species


def pair_sds(runs):
    """[(spec a, spec b, SD of per-domain differences, whether at similar passes)] over every pair."""
    found = []
    for (a, (passes_a, values_a)), (b, (passes_b, values_b)) in itertools.combinations(sorted(runs.items()), 2):
        shared = sorted(set(values_a) & set(values_b))
        if len(shared) < 3:
            continue
        diff = np.array([values_a[i] - values_b[i] for i in shared])
        similar = max(passes_a, passes_b) <= SIMILAR_PASSES * min(passes_a, passes_b)
        found.append((a, b, float(diff.std(ddof=1)), similar))
    return found


def paired_power(n, sd, delta, alpha):
    """Power of a two-sided paired t-test on ``n`` differences of SD ``sd`` for a true mean ``delta``."""
    df, shift = n - 1, delta / sd * np.sqrt(n)
    critical = stats.t.ppf(1 - alpha / 2, df)
    return float(stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift))


def domains_needed(sd, delta, power, alpha, most=100_000):
    """The smallest n whose paired t-test reaches ``power`` (None beyond ``most``)."""
    if sd == 0:
        return 2
    n = 2
    while paired_power(n, sd, delta, alpha) < power:
        n = n * 2 if paired_power(2 * n, sd, delta, alpha) < power else n + 1
        if n > most:
            return None
    return n


def detectable(n, sd, power, alpha):
    """The smallest true difference a paired t-test on ``n`` differences of SD ``sd`` detects at ``power``."""
    normal = (stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) * sd / np.sqrt(n)   # within 2x of it
    return float(optimize.brentq(lambda delta: paired_power(n, sd, delta, alpha) - power, normal / 2, 2 * normal))


def available_domains(split, species):
    """How many domains of the records' species the split holds (the antibody extra's anarci)."""
    from tasks.antibody.germlines import domains
    return sum(d.species in species for d in domains(split))


def report(folder, field, delta, power, alpha):
    """The lines the command prints."""
    key, runs, split, species = load_runs(folder, field)
    pairs = pair_sds(runs)
    n_domains, n_split = len(next(iter(runs.values()))[1]), available_domains(split, species)
    lines = [f"{folder}: {len(runs)} runs of model {key[1]} on {n_domains} domains (data {key[2]}, seed {key[4]}); "
             f"{field}: detect {delta} at power {power}, two-sided paired t-test at alpha {alpha}; "
             f"the {split} split holds {n_split} domains of {', '.join(sorted(species))}"]
    for name, chosen in (("every pair", pairs), (f"pairs within {SIMILAR_PASSES}x in mean passes",
                                                 [p for p in pairs if p[3]])):
        sds = np.array([p[2] for p in chosen])
        if not len(sds):
            continue
        lines.append(f"  {name} ({len(sds)}): SD of per-domain differences min {sds.min():.4f}, quartiles "
                     f"{np.percentile(sds, 25):.4f} / {np.median(sds):.4f} / {np.percentile(sds, 75):.4f}, "
                     f"90th percentile {np.percentile(sds, 90):.4f}, max {sds.max():.4f}")
        for label, sd in (("25th", np.percentile(sds, 25)), ("median", np.median(sds)),
                          ("75th", np.percentile(sds, 75)), ("90th", np.percentile(sds, 90))):
            needed = domains_needed(sd, delta, power, alpha)
            lines.append(f"    {label} SD {sd:.4f}: {needed} domains; power at the {n_domains} run "
                         f"{paired_power(n_domains, sd, delta, alpha):.2f}, at all {n_split} "
                         f"{paired_power(n_split, sd, delta, alpha):.2f}; detectable at {power} power with "
                         f"{n_domains}: {detectable(n_domains, sd, power, alpha):.3f}, with {n_split}: "
                         f"{detectable(n_split, sd, power, alpha):.3f}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default="results/antibody", help="a task's results folder")
    parser.add_argument("--field", default="recovery", help="the per-domain record field (default: recovery)")
    parser.add_argument("--delta", type=float, default=0.02, help="difference to detect (default 0.02)")
    parser.add_argument("--power", type=float, default=0.8)
    parser.add_argument("--alpha", type=float, default=0.05, help="two-sided level (default 0.05)")
    args = parser.parse_args(argv)
    print("\n".join(report(args.folder, args.field, args.delta, args.power, args.alpha)))


if __name__ == "__main__":
    main()
