"""The protein degradation ladder: which quality metrics can tell a worse set from a better one.

Sets of known quality, scored against the reference (REFERENCE_A): the floor (REFERENCE_B, the
second natural sample) and sets degraded in known ways: REFERENCE_B with 10%, 30% or 100% of its
residues replaced by independent draws from the reference's composition, REFERENCE_B with the
residues shuffled within each sequence, a one-pass decode (every position drawn at once from the
shipped model's marginals given the all-masked input) and argmax-collapsed sequences (sequential
decoding at temperature 0). A metric passes when every degraded set is worse than the floor
beyond the 95% CI of the paired difference (inputs resampled jointly, the reference held fixed,
as bench.paired compares runs) and the substitutions are worse in order of their strength.

`python -m tasks.protein.ladder` writes reports/protein_ladder.md: the ladder, every candidate
definition on committed runs, and temperature 1 against argmax values.
"""
import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import sparse

from bench.checkpoints import cache_dir
from bench.errors import BenchError
from bench.results import Store, cached_json
from bench.stats import BOOT_SEED, basic_interval
from tasks.protein import metrics as pm
from tasks.protein.fasta import AMINO_ACIDS, read_fasta
from tasks.protein.split import REFERENCE_A, REFERENCE_B
from tasks.protein.statistics import jsd_bits, kmer_counts, stat_w1

LADDER_BOOT, SEED = 1000, 0   # the ladder's joint resamples (fewer than bench.stats.N_BOOT)
N_ARGMAX = 100            # argmax decoding is sequential: ~0.7 s a sequence on one core
SUBSTITUTIONS = (0.1, 0.3, 1.0)
VERSION = 1               # of the cached decoded sets: bump when how they are made changes
PUBLISHED = {"sequential": 0.093, "topk:k=12": 0.218}  # the issue's published protein numbers (bits)
RUNS = ("sequential:order=confidence", "eb:gamma=10.0,order=entropy", "mi:gamma=24.0,lam=1.0",
        "topk:k=12,order=confidence",
        "learned:T=5,temperature=1.0,mode=threshold,seed=0")
ARGMAX_SPECS = ("sequential", "topk:k=12")


# --- the sets -----------------------------------------------------------------------------------

def substitute(sequences, share, composition, rng):
    """Each residue replaced with probability ``share`` by an independent draw from ``composition``."""
    letters, p = np.array(list(AMINO_ACIDS)), composition / composition.sum()
    out = []
    for s in sequences:
        x = np.array(list(s))
        hit = rng.random(len(x)) < share
        x[hit] = rng.choice(letters, size=int(hit.sum()), p=p)
        out.append("".join(x))
    return out


def shuffle(sequences, rng):
    return ["".join(rng.permutation(list(s))) for s in sequences]


def natural_sets(floor, reference, seed=SEED):
    """{name: sequences} of the floor and its degradations made without a model."""
    rng = np.random.default_rng(seed)
    composition = kmer_counts(reference, AMINO_ACIDS, 1).sum(0)
    sets = {"floor": list(floor)}
    for share in SUBSTITUTIONS:
        sets[f"substituted {share:.0%}"] = substitute(floor, share, composition, rng)
    sets["shuffled"] = shuffle(floor, rng)
    return sets


def decode_set(model, lengths, spec, temperature, seed=SEED):
    """Sequences decoded from all-masked inputs of ``lengths`` by the strategy ``spec``."""
    import torch

    from bench.decode import decode
    from bench.registry import parse_strategy
    from tasks.protein.encoding import blank_batch, decode_sequences
    torch.set_num_threads(1)
    tokens, residue = blank_batch(lengths)
    result = decode(model, tokens, residue, parse_strategy(spec), temperature, seed=seed,
                    index=torch.arange(len(lengths)))
    return decode_sequences(result.tokens, residue)


def model_sets(lengths, n_argmax=N_ARGMAX):
    """One-pass decode (all positions at once, temperature 1) on ``lengths`` and argmax decodes
    (temperature 0) of ARGMAX_SPECS on the first ``n_argmax``; cached by model and inputs."""
    from tasks.protein.model import load_protein_model
    model = load_protein_model(None)
    key = hashlib.sha256(json.dumps([VERSION, model.checkpoint_id, list(map(int, lengths)), n_argmax]).encode())
    path = cache_dir() / "protein" / f"ladder-{key.hexdigest()[:16]}.json"

    def make():
        print(f"decoding the ladder's model sets (cached in {path})", file=sys.stderr)
        sets = {"one pass": decode_set(model, lengths, f"topk:k={max(lengths) + 2}", 1.0)}
        for spec in ARGMAX_SPECS:
            sets[f"argmax {spec}"] = decode_set(model, lengths[:n_argmax], spec, 0.0)
        return sets
    return cached_json(path, make, lambda stored: isinstance(stored, dict))


# --- the metrics --------------------------------------------------------------------------------

def weights(idx, n):
    """[R, n] multiplicity of each input in each resample ``idx`` [R, n] (pooled sums are W @ X)."""
    rows = np.repeat(np.arange(len(idx)), idx.shape[1])
    return sparse.csr_matrix((np.ones(idx.size), (rows, idx.ravel())), shape=(len(idx), n))


@dataclass
class Scored:
    """A metric's per-sequence data for one set: ``stat(idx)`` gives [R] values on resamples."""
    stat: object
    n: int


class Metric:
    """A candidate metric: ``prepare(sequences)`` -> Scored; lower is better unless ``higher``."""
    higher = False

    def __init__(self, name, about, reference):
        self.name, self.about, self.reference = name, about, reference


class PooledJSD(Metric):
    def __init__(self, name, about, reference, k):
        super().__init__(name, about, reference)
        self.k, self.ref = k, kmer_counts(reference, AMINO_ACIDS, k).sum(0)

    def prepare(self, sequences):
        counts = sparse.csr_matrix(kmer_counts(sequences, AMINO_ACIDS, self.k))
        return Scored(lambda idx: jsd_bits((weights(idx, counts.shape[0]) @ counts).toarray(), self.ref),
                      len(sequences))


class PositionJSD(Metric):
    def __init__(self, name, about, reference):
        super().__init__(name, about, reference)
        self.ref = pm.position_profiles(reference).sum(0)

    def prepare(self, sequences):
        flat = pm.position_profiles(sequences).reshape(len(sequences), -1)
        return Scored(lambda idx: jsd_bits((weights(idx, len(flat)) @ flat).reshape(len(idx), *self.ref.shape),
                                           self.ref).mean(-1), len(sequences))


class ValueW1(Metric):
    """Wasserstein-1 between per-sequence values of the set and of the reference (fixed)."""

    def __init__(self, name, about, reference, per_sequence):
        super().__init__(name, about, reference)
        self.per_sequence = per_sequence
        self.ref = per_sequence(reference)

    def prepare(self, sequences):
        values = self.per_sequence(sequences)
        return Scored(lambda idx: stat_w1(values[idx], self.ref), len(sequences))


class Mean(Metric):
    """The mean of a per-sequence value; ``per_set`` maps a list of sequences to their values."""

    def __init__(self, name, about, reference, per_set, higher=False):
        super().__init__(name, about, reference)
        self.per_set, self.higher = per_set, higher

    def prepare(self, sequences):
        values = np.asarray(self.per_set(sequences), float)
        return Scored(lambda idx: values[idx].mean(-1), len(sequences))


class JudgeNLL(Metric):
    """UniRep negative log-likelihood per residue (nats): total NLL over total residues."""

    def prepare(self, sequences):
        nll = judge_nll(sequences)
        lengths = np.array([len(s) for s in sequences], float)
        return Scored(lambda idx: nll[idx].sum(-1) / lengths[idx].sum(-1), len(sequences))


class PairwiseIdentity(Metric):
    """Mean k-mer containment over pairs of different inputs of the set (diversity)."""

    def prepare(self, sequences):
        matrix = np.nan_to_num(pm.pairwise_identity_matrix(sequences))

        def stat(idx):
            w = weights(idx, len(matrix)).toarray()
            pairs = idx.shape[1] ** 2 - (w ** 2).sum(-1)
            return np.einsum("ri,ij,rj->r", w, matrix, w) / np.maximum(pairs, 1)
        return Scored(stat, len(sequences))


def judge_nll(sequences):
    """[n] summed UniRep NLL of each sequence, cached by the sequences (the judge is ~30 s per 500)."""
    from tasks.protein.judge import weights_path
    from tasks.protein.task import judge
    key = hashlib.sha256(json.dumps([str(weights_path()), sequences]).encode()).hexdigest()[:16]
    return np.array(cached_json(cache_dir() / "protein" / f"ladder-judge-{key}.json",
                                lambda: [float(nll.sum()) for nll in judge().residue_nll(sequences)],
                                lambda stored: isinstance(stored, list) and len(stored) == len(sequences)))


def each(per_sequence):
    return lambda sequences: [per_sequence(s) for s in sequences]


def judge_per_residue(sequences):
    """[n] UniRep NLL per residue of each sequence (the panel's judge values, from the cache)."""
    return judge_nll(sequences) / np.array([len(s) for s in sequences], float)


def panel_candidates(reference, with_judge):
    """The panel as reported (tasks.protein.task.PANEL: W1 to the reference's per-sequence values),
    and two-sided versions of the measures left out of it."""
    from tasks.protein.task import PANEL
    per_sequence = {name: values for name, (_, values) in PANEL.items()}
    if with_judge:
        per_sequence["judge_w1"] = judge_per_residue   # the same values, cached across ladder runs
    else:
        per_sequence.pop("judge_w1")
    found = [ValueW1(name, PANEL[name][0], reference, values) for name, values in per_sequence.items()]
    found += [ValueW1("distinct_3mer_w1", "distinct 3-mer share, W1 to the reference", reference,
                      lambda seqs: np.array(each(pm.distinct_3mer_share)(seqs), float)),
              ValueW1("pairwise_identity_w1", "mean 5-mer containment in the set's other sequences, W1",
                      reference, lambda seqs: np.nanmean(pm.pairwise_identity_matrix(seqs), 1)),
              ValueW1("train_identity_w1", "highest 5-mer containment in a training sequence, W1 to the reference",
                      reference, lambda seqs: np.asarray(pm.train_identity(seqs), float))]
    return found


def candidate_metrics(reference, with_judge=True):
    """Every candidate definition, the headline first, then the panel as reported."""
    composition = kmer_counts(reference, AMINO_ACIDS, 1).sum(0)
    def composition_jsds(seqs):       # each sequence's composition JSD from the reference's
        return jsd_bits(kmer_counts(seqs, AMINO_ACIDS, 1), composition[None])

    found = [
        ValueW1("window_jsd", f"headline: W1 of per-sequence {pm.WINDOW}-residue windowed composition JSD",
                reference, lambda seqs: pm.window_values(seqs, composition)),
        *panel_candidates(reference, with_judge),
        PooledJSD("composition_jsd", "pooled amino-acid composition JSD", reference, 1),
        PooledJSD("dipeptide_jsd", "pooled dipeptide JSD", reference, 2),
        PooledJSD("kmer3_jsd", "pooled 3-mer JSD", reference, 3),
        ValueW1("sequence_composition_w1", "W1 of per-sequence composition JSD", reference, composition_jsds),
        PositionJSD("position_jsd", f"per-position composition JSD, first {pm.POSITIONS} positions", reference),
        Mean("longest_run", "mean longest single-residue run", reference, each(pm.longest_run)),
        Mean("low_complexity_share", "share of residues in low-entropy windows", reference,
             each(pm.low_complexity_share)),
        Mean("distinct_3mer_share", "distinct 3-mers per sequence", reference, each(pm.distinct_3mer_share),
             higher=True),
        PairwiseIdentity("pairwise_identity", "mean pairwise 5-mer containment", reference),
        Mean("train_identity", "highest 5-mer containment in a training sequence", reference, pm.train_identity),
    ]
    if with_judge:
        found.insert(found.index(next(m for m in found if m.name == "longest_run")),
                     JudgeNLL("judge_nll", "UniRep NLL per residue (nats)", reference))
    return found


def reported(metric):
    """Whether ``metric`` is one the protein results report (the headline and the panel)."""
    from tasks.protein.task import PANEL
    return metric.name in ("window_jsd", *PANEL)


# --- scoring ----------------------------------------------------------------------------------

def interval(replicates, value):
    """The basic bootstrap interval [2v - q97.5, 2v - q2.5]: the metrics are plug-in distances
    (W1, JSD), biased upwards, the more so the nearer the set is to the reference, so a difference
    from the floor is biased downwards on resamples and its percentile interval is too (the
    floor's own percentile interval lies almost wholly above its value). The result files' CIs
    use the same interval (docs/protein_metrics.md gives its calibration)."""
    return basic_interval(replicates, value)


def score(metric, sets, floor="floor"):
    """{set: dict(value, ci, diff, diff_ci)}: each set's value with a basic bootstrap CI over its
    sequences, and its paired difference from the floor's first n sequences (n: the set's size)."""
    prepared = {name: metric.prepare(seqs) for name, seqs in sets.items()}
    out, rng = {}, np.random.default_rng(BOOT_SEED)
    draws = {}
    for name, scored in prepared.items():
        idx = draws.setdefault(scored.n, rng.integers(0, scored.n, (LADDER_BOOT, scored.n)))
        boots = scored.stat(idx)
        value = float(scored.stat(np.arange(scored.n)[None])[0])
        row = {"value": value, "ci": interval(boots, value), "n": scored.n}
        if floor in sets:
            floor_part = prepared[floor] if scored.n == prepared[floor].n else metric.prepare(sets[floor][:scored.n])
            row["diff"] = value - float(floor_part.stat(np.arange(scored.n)[None])[0])
            row["diff_ci"] = interval(boots - floor_part.stat(idx), row["diff"])
        out[name] = row
    return out


def step(metric, sets, weaker, stronger):
    """Paired difference (stronger - weaker) of two degradations of the same sequences."""
    a, b = metric.prepare(sets[weaker]), metric.prepare(sets[stronger])
    idx = np.random.default_rng(BOOT_SEED + 1).integers(0, a.n, (LADDER_BOOT, a.n))
    full = np.arange(a.n)[None]
    diff = float(b.stat(full)[0] - a.stat(full)[0])
    return diff, interval(b.stat(idx) - a.stat(idx), diff)


def worse(metric, ci):
    """Whether a CI of a difference lies wholly on the worse side of 0."""
    return ci[1] < 0 if metric.higher else ci[0] > 0


def verdict(metric, rows, steps):
    """(passes, what failed): every degradation worse than the floor beyond the paired CI, and the
    substitutions worse in order of strength."""
    failed = [name for name, row in rows.items() if name != "floor" and not worse(metric, row["diff_ci"])]
    failed += [f"{b} vs {a}" for (a, b), (_, ci) in steps.items() if not worse(metric, ci)]
    return not failed, failed


def ladder(sets, metrics):
    """{metric name: (rows, steps, passes, failed)} over ``sets`` (which hold 'floor')."""
    subs = [f"substituted {s:.0%}" for s in SUBSTITUTIONS if f"substituted {s:.0%}" in sets]
    out = {}
    for metric in metrics:
        rows = score(metric, sets)
        steps = {(a, b): step(metric, sets, a, b) for a, b in zip(subs, subs[1:])}
        out[metric.name] = (rows, steps, *verdict(metric, rows, steps))
    return out


# --- the report ---------------------------------------------------------------------------------

def sig4(x):
    return f"{x:.4g}"


def ladder_markdown(results, metrics, sets):
    names = list(sets)
    lines = ["| metric | " + " | ".join(f"{n} (n={len(sets[n])})" for n in names) + " | passes |",
             "|---|" + "---|" * (len(names) + 1)]
    for metric in metrics:
        rows, steps, passes, failed = results[metric.name]
        cells = []
        for n in names:
            row = rows[n]
            cell = f"{sig4(row['value'])} [{sig4(row['ci'][0])}, {sig4(row['ci'][1])}]"
            if n != "floor":
                mark = "" if worse(metric, row["diff_ci"]) else " **x**"
                cell += f"<br>Δ {row['diff']:+.3g} [{row['diff_ci'][0]:+.3g}, {row['diff_ci'][1]:+.3g}]{mark}"
            cells.append(cell)
        said = "yes" if passes else "no: " + ", ".join(failed)
        lines.append(f"| {metric.name} ({'higher' if metric.higher else 'lower'} is better) | "
                     + " | ".join(cells) + f" | {said} |")
    return "\n".join(lines)


def steps_markdown(results, metrics):
    lines = ["| metric | step | difference [95% CI] |", "|---|---|---|"]
    for metric in metrics:
        for (a, b), (diff, ci) in results[metric.name][1].items():
            lines.append(f"| {metric.name} | {b} - {a} | {diff:+.3g} [{ci[0]:+.3g}, {ci[1]:+.3g}] |")
    return "\n".join(lines)


def committed_runs(results_dir):
    """{strategy spec: sequences} of the committed 500-sequence protein runs named in RUNS."""
    found, store = {}, Store(Path(results_dir, "protein"))
    for path, summary in store.runs(with_paths=True, quiet=True):
        spec = summary["config"]["strategy_spec"]
        if spec in RUNS and summary["n_samples"] == 500 and summary["config"].get("temperature") == 1.0:
            found[spec] = [r["sequence"] for r in store.records(path, summary)]
    return {spec: found[spec] for spec in RUNS if spec in found}


def values_markdown(metrics, sets):
    """A table of every metric's value (95% basic bootstrap CI) on each named set (no floor pairing)."""
    lines = ["| set | n | " + " | ".join(m.name for m in metrics) + " |", "|---|---|" + "---|" * len(metrics)]
    rows = {m.name: score(m, sets, floor=None) for m in metrics}
    for name, seqs in sets.items():
        cells = [f"{sig4(rows[m.name][name]['value'])} [{sig4(rows[m.name][name]['ci'][0])}, "
                 f"{sig4(rows[m.name][name]['ci'][1])}]" for m in metrics]
        lines.append(f"| {name} | {len(seqs)} | " + " | ".join(cells) + " |")
    return "\n".join(lines), rows


def short(spec):
    """'sequential', 'topk:k=12', 'eb:gamma=10.0': a spec without its default order and seed."""
    return "sequential" if spec.startswith("sequential") else spec.split(",")[0]


def published_markdown(metrics, rows_t1, rows_t0):
    """Which distance definition and temperature come nearest the published numbers (|log ratio|
    summed over the published strategies), and whether each keeps their ratio (top-12 / sequential)."""
    ratio = PUBLISHED["topk:k=12"] / PUBLISHED["sequential"]
    lines = ["| metric | temperature | " + " | ".join(f"{s} (published {v})" for s, v in PUBLISHED.items())
             + f" | top-12 / sequential (published {ratio:.2f}) | sum of abs(log ratio) |",
             "|---|---|" + "---|" * (len(PUBLISHED) + 2)]
    best = None
    # the published numbers are JSDs: only the JSD-based definitions are compared with them
    jsd_based = [m for m in metrics if isinstance(m, (PooledJSD, PositionJSD))
                 or m.name in ("window_jsd", "sequence_composition_w1")]
    for metric in jsd_based:
        for temperature, rows in (("1", rows_t1), ("0 (argmax)", rows_t0)):
            values = {s: rows[metric.name].get(k, {}).get("value") for s, k in published_keys(rows[metric.name])}
            if set(values) != set(PUBLISHED) or any(v is None or v <= 0 for v in values.values()):
                continue
            gap = sum(abs(np.log(values[s] / PUBLISHED[s])) for s in PUBLISHED)
            lines.append(f"| {metric.name} | {temperature} | " + " | ".join(sig4(values[s]) for s in PUBLISHED)
                         + f" | {values['topk:k=12'] / values['sequential']:.2f} | {gap:.2f} |")
            best = min(best or (np.inf, ""), (gap, f"{metric.name} at temperature {temperature}"))
    return "\n".join(lines), best


def published_keys(rows):
    """(published strategy, set name in ``rows``) pairs."""
    return [(s, next(k for k in rows if short(k.removeprefix("argmax ")) == s)) for s in PUBLISHED
            if any(short(k.removeprefix("argmax ")) == s for k in rows)]


def report(out, results_dir="results", with_judge=True):
    reference = read_fasta(REFERENCE_A).sequences
    floor = read_fasta(REFERENCE_B).sequences
    sets = natural_sets(floor, reference)
    decoded = model_sets([len(s) for s in floor])
    sets["one pass"] = decoded["one pass"]
    sets["argmax sequential"] = decoded["argmax sequential"]
    metrics = candidate_metrics(reference, with_judge)
    results = ladder(sets, metrics)
    runs = committed_runs(results_dir)
    runs_text, _ = values_markdown(metrics, {**{"floor": floor}, **runs})
    first = {f"{short(s)}, temperature 1": runs[s][:N_ARGMAX] for s in runs if short(s) in PUBLISHED}
    argmax = {f"{s}, temperature 0": decoded[f"argmax {s}"] for s in ARGMAX_SPECS}
    temp_text, _ = values_markdown(metrics, {**first, **argmax})
    _, rows_t1 = values_markdown(metrics, {short(s): runs[s] for s in runs if short(s) in PUBLISHED})
    _, rows_t0 = values_markdown(metrics, {f"argmax {s}": decoded[f"argmax {s}"] for s in ARGMAX_SPECS})
    pub_text, best = published_markdown(metrics, rows_t1, rows_t0)
    text = render(metrics, results, sets, runs_text, temp_text, pub_text, best)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text)
    return results


def render(metrics, results, sets, runs_text, temp_text, pub_text, best):
    kept = [m.name for m in metrics if results[m.name][2]]
    shown = [m.name for m in metrics if reported(m)]
    failing = [name for name in shown if name not in kept]
    return f"""# Protein metrics: the degradation ladder

Generated by `python -m tasks.protein.ladder` (tasks/protein/ladder.py); definitions in
[docs/protein_metrics.md](../docs/protein_metrics.md). Every set is scored against the reference
(reference_a, 500 sequences). Cells: value [95% basic bootstrap CI over the set's sequences, the
reference held fixed]; under it Δ, the paired difference from the floor (the floor's first n
sequences when the set is smaller) with its 95% CI ({LADDER_BOOT} joint resamples). **x**: not worse
than the floor beyond the CI. A metric passes when no cell has **x** and each substitution
step is worse beyond its CI (second table).

Sets: `floor` = reference_b; `substituted p` = reference_b with a share p of residues replaced
by independent draws from the reference composition; `shuffled` = reference_b shuffled within
each sequence; `one pass` = every position drawn at once from the shipped model's marginals
(all-masked input, reference_b's lengths); `argmax sequential` = sequential decoding at
temperature 0 (the first {N_ARGMAX} of reference_b's lengths).

{ladder_markdown(results, metrics, sets)}

Substitution steps (paired, same sequences):

{steps_markdown(results, metrics)}

Metrics that pass: {', '.join(kept) if kept else 'none'}.

The protein results report the headline and the panel: {', '.join(shown)}
({'all pass' if not failing else 'failing: ' + ', '.join(failing)}); the pooled composition JSD
stays beside them as a secondary column although it fails, as the task's first definition.

## Every definition on committed runs (500 sequences, temperature 1)

{runs_text}

## Temperature 1 against argmax values (first {N_ARGMAX} inputs of the run's length draws)

{temp_text}

## Which definition and temperature come near the published numbers

{pub_text}

Nearest in magnitude: {best[1] if best else 'none'}. The ratio column says which definitions
also keep the published ordering (top-12 worse than sequential) and its size.
"""


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tasks.protein.ladder", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="reports/protein_ladder.md", help="where to write the report")
    parser.add_argument("--results", default="results", help="results folder of the committed runs")
    parser.add_argument("--no-judge", action="store_true", help="leave the UniRep judge out (it takes minutes)")
    args = parser.parse_args(argv)
    try:
        if not Path(args.results, "protein").is_dir():
            raise BenchError(f"--results {args.results}: no protein folder there")
        results = report(args.out, args.results, not args.no_judge)
    except BenchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}; passing: {', '.join(n for n, r in results.items() if r[2]) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
