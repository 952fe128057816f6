"""The antibody task's degradation ladder: a metric is kept only if it ranks known degradations
worse than the truth. On every validation domain (genes apart from the test split's), each rung
fills the masked region in a known way: the truth (the own germline), 10% and 30% of its
residues replaced by uniform draws from the 20 amino acids, its residues shuffled, and
AntiBERTy's one-pass decode (the whole region revealed at once, argmax values). A metric passes
when every degraded rung is worse than the truth beyond the 95% CI of the paired difference
(domains resampled jointly); whether 30% substitutions score below 10% is shown beside it.

`python -m tasks.antibody.ladder` writes reports/antibody_ladder.md (about a minute on 2 cores).
"""
import argparse
from pathlib import Path

import numpy as np
import torch

from bench.decode import decode
from bench.registry import parse_strategy
from bench.stats import BOOT_SEED, N_BOOT
from tasks.antibody.germlines import AMINO_ACIDS
from tasks.antibody.task import AntibodyTask, filled_region, score_region, truth_region

METRICS = ("recovery", "identity", "exact")
SEED = 0


def substituted(region, share, rng):
    """``region`` with ``share`` of its residues (rounded, at least one) replaced by other amino acids."""
    chars = list(region)
    for i in rng.choice(len(chars), max(1, round(share * len(chars))), replace=False):
        chars[i] = rng.choice([a for a in AMINO_ACIDS if a != chars[i]])
    return "".join(chars)


def shuffled(region, rng):
    return "".join(rng.permutation(list(region)))


def one_pass(task, eval_set):
    """AntiBERTy's argmax fill of every domain's region in one forward pass."""
    model = task.load_model()
    result = decode(model, eval_set.tokens, eval_set.masked, parse_strategy("topk:k=1000"))
    return [filled_region(row, d) for row, d in zip(result.tokens, eval_set.extras["domains"])]


def rungs(task, eval_set, with_model=True):
    """{rung name: the filled region of every domain}."""
    rng = np.random.default_rng(SEED)
    truths = [truth_region(d) for d in eval_set.extras["domains"]]
    found = {"truth": truths, "substitute 10%": [substituted(t, 0.1, rng) for t in truths],
             "substitute 30%": [substituted(t, 0.3, rng) for t in truths],
             "shuffle": [shuffled(t, rng) for t in truths]}
    if with_model:
        found["one-pass decode"] = one_pass(task, eval_set)
    return found


def scores(task, eval_set, regions):
    """{metric: [n] per-domain values} of one rung's regions."""
    chosen = eval_set.extras["domains"]
    matrices = task.germline_matrices({(d.species, d.chain) for d in chosen})
    fields = [score_region(r, d, matrices) for r, d in zip(regions, chosen)]
    return {m: np.array([f[m] for f in fields], float) for m in METRICS}


def paired_interval(difference):
    """(mean, 95% percentile interval) of a per-domain difference over joint resamples."""
    rng = np.random.default_rng(BOOT_SEED)
    means = difference[rng.integers(0, len(difference), (N_BOOT, len(difference)))].mean(1)
    return difference.mean(), np.quantile(means, [0.025, 0.975])


def verdicts(table):
    """{metric: (kept, substitutions in order)}: kept when every degraded rung is worse than the
    truth beyond its CI; in order when 30% substitutions score below 10% (a finer ranking, shown)."""
    return {metric: (all(table[rung][metric][1][1][1] < 0 for rung in table if rung != "truth"),
                     table["substitute 30%"][metric][0] < table["substitute 10%"][metric][0])
            for metric in METRICS}


def ladder(task, eval_set, with_model=True):
    """{rung: {metric: (mean, (difference from the truth, [low, high]))}}."""
    filled = rungs(task, eval_set, with_model)
    by_rung = {rung: scores(task, eval_set, regions) for rung, regions in filled.items()}
    return {rung: {m: (values[m].mean(), paired_interval(values[m] - by_rung["truth"][m]))
                   for m in METRICS} for rung, values in by_rung.items()}


def markdown(table, n):
    lines = [f"# The antibody task's degradation ladder ({n} validation domains)", "",
             "Made by `python -m tasks.antibody.ladder` (tasks/antibody/ladder.py). Each cell: the rung's mean, "
             "then its paired difference from the truth with a 95% bootstrap interval over the domains.", "",
             "| rung | " + " | ".join(METRICS) + " |", "|---|" + "---|" * len(METRICS)]
    for rung, values in table.items():
        cells = [f"{v[0]:.3f}" if rung == "truth" else f"{v[0]:.3f} ({v[1][0]:+.3f} [{v[1][1][0]:+.3f}, "
                 f"{v[1][1][1]:+.3f}])" for v in values.values()]
        lines.append(f"| {rung} | " + " | ".join(cells) + " |")
    lines += ["", "| metric | kept: every rung worse than the truth beyond its CI | 30% substitutions below 10% |",
              "|---|---|---|"]
    lines += [f"| {m} | {'yes' if kept else 'no'} | {'yes' if ordered else 'no'} |"
              for m, (kept, ordered) in verdicts(table).items()]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tasks.antibody.ladder", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[2] / "reports" / "antibody_ladder.md"))
    parser.add_argument("--limit", type=int, default=None, help="validation domains (default: all)")
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    task = AntibodyTask(data="validation")
    eval_set = task.eval_set(limit=args.limit)
    Path(args.out).write_text(markdown(ladder(task, eval_set), len(eval_set)))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
