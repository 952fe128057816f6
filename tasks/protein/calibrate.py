"""How often the ladder's paired interval calls a set worse than the floor, when it is not and when it is.

Each draw takes two disjoint samples of 500 natural sequences from the held-out cluster
representatives outside reference A (reference B and the others): the "floor" and a second
natural sample (a null: not worse) or the floor with 10% or 30% of its residues substituted as on
the ladder. It scores both against reference A and counts the draws whose paired 95% interval of
the difference (1,000 joint resamples) lies wholly above 0 ("worse") or below ("better"), for the
percentile and the basic bootstrap interval. The counts are in docs/protein_metrics.md.

`python -m tasks.protein.calibrate [--draws 200] [--metrics window_jsd,longest_run_w1,...]`
(minutes per metric on an idle core; the judge is left out: it would take minutes a draw).
"""
import argparse
import sys

import numpy as np

from bench.stats import basic_interval, percentile_interval
from tasks.protein import ladder as L
from tasks.protein import split as S
from tasks.protein.fasta import read_fasta

SIZE, CALIBRATION_BOOT, SEED = 500, 1000, 7


def natural_pool():
    """Held-out cluster representatives that are not in reference A (reference B among them)."""
    source = read_fasta(S.SOURCE_FASTA)
    sequence_of = dict(zip(source.names, source.sequences))
    held, _ = S.held_out_representatives(S.read_clusters())
    return [sequence_of[r] for r in held[S.REFERENCE_SIZE:]]


def calls(diff, replicates):
    """{interval: (worse, better)}: whether each 95% interval of ``diff`` excludes 0 on either side."""
    percentile, basic = percentile_interval(replicates), basic_interval(replicates, diff)
    return {"percentile": (percentile[0] > 0, percentile[1] < 0), "basic": (basic[0] > 0, basic[1] < 0)}


def draw(metric, pool, composition, rng):
    """{case: calls} for one draw of two disjoint samples."""
    pick = rng.choice(len(pool), 2 * SIZE, replace=False)
    floor, other = [pool[i] for i in pick[:SIZE]], [pool[i] for i in pick[SIZE:]]
    sets = {"null": other, "substituted 10%": L.substitute(floor, 0.1, composition, rng),
            "substituted 30%": L.substitute(floor, 0.3, composition, rng)}
    idx, full = rng.integers(0, SIZE, (CALIBRATION_BOOT, SIZE)), np.arange(SIZE)[None]
    base = metric.prepare(floor)
    out = {}
    for case, sequences in sets.items():
        scored = metric.prepare(sequences)
        out[case] = calls(float(scored.stat(full)[0] - base.stat(full)[0]), scored.stat(idx) - base.stat(idx))
    return out


def calibrate(metrics, reference, pool, draws):
    """Print, for each of ``metrics``, how many of ``draws`` draws each interval called worse / better."""
    composition = L.kmer_counts(reference, L.AMINO_ACIDS, 1).sum(0)
    for name, metric in metrics.items():
        rng, counts = np.random.default_rng(SEED), {}
        for _ in range(draws):
            for case, by_interval in draw(metric, pool, composition, rng).items():
                for interval, (worse, better) in by_interval.items():
                    tally = counts.setdefault((case, interval), [0, 0])
                    tally[0], tally[1] = tally[0] + worse, tally[1] + better
        for (case, interval), (worse, better) in counts.items():
            print(f"{name} | {case} | {interval}: worse in {worse}/{draws}, better in {better}/{draws}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tasks.protein.calibrate", description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200, help="pairs of natural samples drawn (default 200)")
    parser.add_argument("--metrics", default="window_jsd,longest_run_w1,low_complexity_w1",
                        help="comma-separated ladder metrics (default: the headline and the judge-free panel)")
    args = parser.parse_args(argv)
    reference = read_fasta(S.REFERENCE_A).sequences
    names = [n for n in args.metrics.split(",") if n]
    known = {m.name: m for m in L.candidate_metrics(reference, with_judge=False)}
    problem = ("--draws must be at least 1" if args.draws < 1 else
               f"unknown metric {', '.join(n for n in names if n not in known)}; choose from: {', '.join(known)}"
               if any(n not in known for n in names) else None)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    pool = natural_pool()
    print(f"pool: {len(pool)} natural sequences; {args.draws} draws of two samples of {SIZE}")
    calibrate({name: known[name] for name in names}, reference, pool, args.draws)
    return 0


if __name__ == "__main__":
    sys.exit(main())
