"""Natural variation at a run's sizes: what natural sequences score against the reference.

A run decodes n sequences and is scored against the m reference sequences. The noise floor
(REFERENCE_B against REFERENCE_A, 500 against 500) is one draw at one size; a plug-in distance
shrinks as n grows, so a run of another size needs its own null. ``null_distribution`` draws
``draws`` sets of n natural sequences from a pool disjoint from the reference and scores each
against the reference like a run (every metric's point value, the reference held fixed):
per metric the draws' mean and 95th percentile. A run is "within natural variation" on a
metric where its value is at most that percentile (every protein metric is a distance: lower is
better).

The pool: for the shipped reference, the representatives of the held-out clusters other than
reference A's (reference B's and the validation clusters': the same one-per-cluster sampling
that made A); for a custom reference (``--data``) the reference itself, each draw's n
sequences scored against the other m - n (no second sample ships with it, so the reference side
is smaller than the run's; the label says so).
"""
import numpy as np

from tasks.protein.metrics import composition_counts, js_divergence, value_w1, window_values

NULL_DRAWS = 50      # sets of natural sequences per null distribution
NULL_SEED = 0
LEVEL = 0.95         # the percentile of the draws that bounds natural variation


def shipped_pool(reference):
    """Held-out cluster representatives not in ``reference`` (reference A): reference B's and the
    validation clusters', in the split's seeded order."""
    from tasks.protein.split import SOURCE_FASTA, held_out_representatives, read_clusters, read_fasta
    source = read_fasta(SOURCE_FASTA)
    sequence_of = dict(zip(source.names, source.sequences))
    held, _ = held_out_representatives(read_clusters())
    taken = set(reference)
    return [sequence_of[rep] for rep in held if sequence_of[rep] not in taken]


class PerSequence:
    """Each sequence's parts of every metric against one reference composition; ``panel``: the
    sequences' panel values ({metric: [n]}, computed once: the judge is the costly part)."""

    def __init__(self, sequences, reference_composition, panel):
        self.composition = np.stack([composition_counts(s) for s in sequences])
        self.window = window_values(sequences, reference_composition)
        self.panel = {name: np.asarray(values, float) for name, values in panel.items()}

    def take(self, index):
        out = object.__new__(PerSequence)
        out.composition, out.window = self.composition[index], self.window[index]
        out.panel = {name: values[index] for name, values in self.panel.items()}
        return out


def point_metrics(sample, reference):
    """{metric: point value} of ``sample`` against ``reference`` (two PerSequence), as a run's summary
    computes them (tasks/protein/task.py ``summarize_sequences``)."""
    values = {"window_jsd": value_w1(sample.window, reference.window),
              "composition_jsd": float(js_divergence(sample.composition.sum(0), reference.composition.sum(0)))}
    values.update({name: value_w1(sample.panel[name], reference.panel[name]) for name in sample.panel})
    return values


def null_distribution(pool, reference, n, panel, draws=NULL_DRAWS, seed=NULL_SEED):
    """{metric: {mean, bound, draws, n, m}} of ``draws`` sets of ``n`` pool sequences scored against
    ``reference``; ``bound`` is the LEVEL quantile (the worse end). ``panel(sequences)`` gives the
    panel's per-sequence values. ``pool`` None: the reference is its own pool, each draw scored
    against the rest. None where the pool is too small."""
    rng = np.random.default_rng(seed)
    if pool is None:
        return self_null(list(reference), n, panel, draws, rng)
    if len(pool) < n or not reference:
        return None
    composition = np.stack([composition_counts(s) for s in reference]).sum(0)
    parts = PerSequence(pool, composition, panel(pool))
    ref_parts = PerSequence(reference, composition, panel(reference))
    scored = [point_metrics(parts.take(rng.choice(len(pool), n, replace=False)), ref_parts) for _ in range(draws)]
    return summarise_draws(scored, n, len(reference))


def self_null(reference, n, panel, draws, rng):
    """Draws of n reference sequences against the other m - n (a custom reference's own null); the
    windowed composition is measured against each draw's own reference side, as a run's is."""
    m = len(reference) - n
    if n < 2 or m < 2:
        return None
    values = panel(reference)
    scored = []
    for _ in range(draws):
        order = rng.permutation(len(reference))
        sides = [[reference[i] for i in part] for part in (order[:n], order[n:])]
        composition = np.stack([composition_counts(s) for s in sides[1]]).sum(0)
        sample, rest = (PerSequence(side, composition, {k: v[part] for k, v in values.items()})
                        for side, part in zip(sides, (order[:n], order[n:])))
        scored.append(point_metrics(sample, rest))
    return summarise_draws(scored, n, m)


def summarise_draws(scored, n, m):
    return {name: {"mean": float(np.mean([s[name] for s in scored])),
                   "bound": float(np.quantile([s[name] for s in scored], LEVEL)),
                   "draws": len(scored), "n": n, "m": m}
            for name in scored[0]}

