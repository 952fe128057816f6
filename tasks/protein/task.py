"""The protein task: unconditional generation of 500 sequences, scored against a reference set."""
import functools
import hashlib
import json
from pathlib import Path

import numpy as np

import bench.stats
from bench.checkpoints import cache_dir, file_id
from bench.core import EvalSet, Task
from bench.files import MiB
from bench.provenance import portable_path
from bench.registry import register_task
from bench.results import cached_json
from bench.stats import basic_bootstrap_groups, mean_metric
from tasks.protein import hooks
from tasks.protein import judge as judge_module
from tasks.protein import metrics as metrics_module
from tasks.protein import statistics as statistics_module
from tasks.protein.encoding import blank_batch, decode_sequences
from tasks.protein.fasta import AMINO_ACIDS, read_fasta
from tasks.protein.judge import UniRepJudge, weights_path
from tasks.protein.metrics import (
    WINDOW,
    composition_counts,
    js_divergence,
    longest_run,
    low_complexity_share,
    value_w1,
    window_values,
)
from tasks.protein.model import AA_IDS, BOS_ID, DEFAULT_WEIGHTS, EOS_ID, MASK_ID, PAD_ID, PUBLISHED, load_protein_model
from tasks.protein.split import REFERENCE_A, REFERENCE_B

N_SAMPLES = 500
MIN_FLOOR_HALF = 2  # sequences per half, at least, for a floor from a custom reference
# A reference FASTA (--data): the shipped ones are 44 KB (500 sequences). Every reference
# sequence is scored by the judge (16 s per 500 on a CPU, once; then cached): 64 MiB is about
# 600,000 sequences, hours of judging, past any reference a run needs.
REFERENCE_LIMIT = 64 * MiB


@functools.lru_cache(maxsize=1)
def judge():
    """The UniRep judge, loaded once per process."""
    return UniRepJudge()


@register_task
class ProteinTask(Task):
    """Protein: 500 sequences of length 50-100 from all-masked, JSD against 500 held-out references."""
    name = "protein"
    headline = "window_jsd"   # pooled composition JSD fails the degradation ladder (tasks/protein/ladder.py)
    extra_figures = ("judge_w1",)  # `bench report` also draws pareto_protein_judge_w1
    weights_dir = Path(__file__).parent / "weights"  # the model's trained helpers (MI estimator, ...)
    temperature = 1.0  # values are sampled from the model's marginals
    # CPU-sized MI label sets (the shipped estimator's): 8 probed positions per context, about
    # 70 s per 32 contexts on one thread; a GPU labels in full with --probe 0 --n 3000 (docs/mi.md)
    mi_label_sizes = {"train": 800, "heldout": 200, "ood": 200}
    mi_probe = 8
    # order policies: 8 sequences per step, steps = 2000 / T, 64 held out; ~80 residues of entropy
    # ~2.7 nats, so gamma ~ 2.7 * 80 / T reveals ~80 / T residues per pass
    order_training = {"batch": 8, "step_units": 2000, "n_eval": 64, "init_gamma": {5: 40.0, 10: 20.0, 15: 13.0}}
    options = {"data": "reference FASTA (default: 500 held-out Swiss-Prot cluster representatives)",
               "model": "checkpoint path, or esmc_300m / esmc_600m from a local cache (default: the shipped model)"}

    def __init__(self, data=None, model=None):
        self.reference_path = Path(data) if data else REFERENCE_A
        self.model_name = model
        self.reference = None
        self.floor_metrics = None
        self.natural_pool = None   # the shipped reference's natural pool (null.py), read when first needed

    def config(self):
        model = self.model_name if self.model_name in PUBLISHED else portable_path(self.model_name or DEFAULT_WEIGHTS)
        return {"data": portable_path(self.reference_path), "model": model}

    def symbols(self):
        """ESM ids: the 20 amino acids by letter, and the start, end, padding and mask ids."""
        return {**dict(zip(AA_IDS.tolist(), AMINO_ACIDS)),
                BOS_ID: "<cls>", EOS_ID: "<eos>", PAD_ID: "<pad>", MASK_ID: "<mask>"}

    def load_model(self):
        judge()  # the judge must be present before any decoding starts
        return load_protein_model(self.model_name)

    def load_reference(self):
        if self.reference is None:
            self.reference = read_fasta(self.reference_path, limit=REFERENCE_LIMIT)
        return self.reference

    def problems(self):
        return self.load_reference().problems

    def eval_set(self, limit=None, seed=0):
        """N_SAMPLES all-masked sequences with lengths drawn from the reference's lengths."""
        reference = self.load_reference()
        lengths = np.random.default_rng(seed).choice([len(s) for s in reference.sequences], size=N_SAMPLES)
        tokens, residue = blank_batch(lengths[:limit])
        digest = hashlib.sha256("\n".join(reference.sequences).encode()).hexdigest()[:12]
        return EvalSet(tokens=tokens, masked=residue, data_id=digest, extras={"residue": residue})

    def records(self, tokens, passes, rows, eval_set):
        sequences = decode_sequences(tokens, eval_set.extras["residue"][rows])
        return [{"index": row, "passes": n, "length": len(seq), "sequence": seq}
                for seq, n, row in zip(sequences, passes.tolist(), rows.tolist())]

    def summarize(self, records):
        return summarize_sequences([r["sequence"] for r in records], self.load_reference().sequences,
                                   np.array([r["passes"] for r in records], float))

    def floor_samples(self):
        """(second sample, first sample) that the noise floor compares, or None. The shipped
        reference has a disjoint second sample; a custom one has none, so it is split into two
        halves (every other sequence, so a file sorted by length splits evenly)."""
        reference = self.load_reference().sequences
        if self.reference_path.resolve() == REFERENCE_A.resolve():
            return read_fasta(REFERENCE_B).sequences, reference
        return (reference[1::2], reference[0::2]) if len(reference) >= 2 * MIN_FLOOR_HALF else None

    def floor(self):
        """Every metric of the second sample against the first (the noise floor), or None.
        Computed once per set of inputs and kept in the cache (``cached_floor``)."""
        samples = self.floor_samples()
        if self.floor_metrics is None and samples is not None:
            self.floor_metrics = cached_floor(*samples)
        return self.floor_metrics

    def floor_label(self):
        samples = self.floor_samples()
        if self.reference_path.resolve() == REFERENCE_A.resolve():
            return super().floor_label()
        if samples is None:
            return (f"none: the custom reference has {len(self.load_reference().sequences)} sequences, "
                    f"too few for two halves of {MIN_FLOOR_HALF}")
        return (f"half of the custom reference against the other half, every other sequence "
                f"({len(samples[0])} vs {len(samples[1])}; no second sample ships with it)")

    def natural_variation(self, n):
        """What n natural sequences score against the reference (tasks/protein/null.py): drawn from
        the held-out representatives outside it for the shipped reference, from the reference
        itself (against the rest) for a custom one. Kept in the cache like the floor."""
        from tasks.protein import null
        reference = self.load_reference().sequences
        if self.natural_pool is None and self.reference_path.resolve() == REFERENCE_A.resolve():
            self.natural_pool = null.shipped_pool(reference)   # read once per task, not once per run
        pool = self.natural_pool
        key = floor_key(pool or [], reference)
        return cached_json(cache_dir() / "protein" / f"null-{key}-n{n}-d{null.NULL_DRAWS}.json",
                           lambda: null.null_distribution(pool, reference, n, panel_values),
                           lambda stored: stored is None or isinstance(stored, dict))

    def train_model(self, settings, out):
        hooks.train_model(settings, out)

    def data_builders(self):
        return {"protein": ("Swiss-Prot training windows (needs: apt-get install metastudent-data mmseqs2)",
                            hooks.build_windows),
                "unirep": ("the UniRep judge's weights, and its check on natural sequences", hooks.build_unirep)}

    def value_frequencies(self):
        """[20] each residue's frequency in the shipped model's training split (PC-Sampler's
        background, strategies/schedules): the members of the training clusters."""
        from tasks.protein.split import make_split
        counts = np.zeros(len(AMINO_ACIDS))
        for _, sequence in make_split().train:
            counts += np.array([sequence.count(a) for a in AMINO_ACIDS])
        return (counts / counts.sum()).tolist()

    def mi_contexts(self, model, split, n, generator):
        from tasks.protein.mi_sources import contexts
        return contexts(model, split, n, generator)

    def order_examples(self):
        return hooks.order_examples()

    def save_denoiser(self, model, path, meta):
        """A fine-tuned model (the learned order's denoiser=joint) as ``--model PATH`` loads it."""
        from tasks.protein.model import save_protein_checkpoint
        save_protein_checkpoint(path, model.network, model.network.config, meta)


FLOOR_CODE = (__file__, metrics_module.__file__, judge_module.__file__, bench.stats.__file__,
              statistics_module.__file__, str(Path(__file__).parent / "null.py"))


def floor_key(sample, reference):
    """What the floor depends on, hashed: both sets of sequences, the judge's weights and the code
    that scores them (this module, the metrics, the judge, the statistics)."""
    weights = weights_path()
    parts = {"sample": sample, "reference": reference, "judge": file_id(weights) if weights.is_file() else None,
             "code": [file_id(path) for path in FLOOR_CODE]}
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def cached_floor(sample, reference):
    """``summarize_sequences(sample, reference, None)`` (the judge alone takes about 33 s on 1,000
    sequences), read from ``<cache>/protein/floor-KEY.json`` when a process computed it before
    from the same inputs (``floor_key``), else computed and written there."""
    return cached_json(cache_dir() / "protein" / f"floor-{floor_key(sample, reference)}.json",
                       lambda: summarize_sequences(sample, reference, None), lambda stored: isinstance(stored, list))


def jsd_metric(name, counts, ref_counts, label, k):
    """Pooled-count JSD with a basic bootstrap CI that resamples both the generated and the
    reference sequences (both are samples; the plug-in JSD is biased upwards). Its per-input
    recipe recounts the k-mers of the records' sequences against the pooled reference counts."""
    value, low, high = basic_bootstrap_groups(
        [len(counts), len(ref_counts)], lambda i, j: js_divergence(counts[i].sum(0), ref_counts[j].sum(0)))
    recipe = {"statistic": "pooled_jsd", "fields": ["sequence"], "alphabet": AMINO_ACIDS, "k": k,
              "reference": ref_counts.sum(0).tolist()}
    return {"name": name, "label": label, "value": value, "ci_low": low, "ci_high": high,
            "higher_is_better": False, "n": len(counts), "ci_method": "basic bootstrap, both samples",
            "per_input": recipe}


def w1_metric(name, label, values, ref_values, recipe=None):
    """Wasserstein-1 between per-sequence ``values`` of the generated set and ``ref_values`` of the
    reference: lower is better, 0 when the generated sequences are, one by one, like natural ones
    in either direction. Basic bootstrap CI with both sets resampled (W1 of two finite samples is
    biased upwards, as the plug-in JSD is)."""
    value, low, high = basic_bootstrap_groups([len(values), len(ref_values)],
                                              lambda i, j: value_w1(values[i], ref_values[j]))
    out = {"name": name, "label": label, "value": value, "ci_low": low, "ci_high": high, "higher_is_better": False,
           "n": len(values), "ci_method": "basic bootstrap, both samples"}
    return {**out, "per_input": recipe} if recipe else out


def window_metric(sequences, reference, ref_comp):
    """The headline: W1 between the per-sequence windowed-composition JSDs of the generated and
    of the reference sequences (docs/protein_metrics.md); paired tests hold the reference's values
    fixed (``window_jsd_w1``, tasks/protein/statistics.py)."""
    composition = ref_comp.sum(0)
    values, ref_values = window_values(sequences, composition), window_values(reference, composition)
    recipe = {"statistic": "window_jsd_w1", "fields": ["sequence"], "alphabet": AMINO_ACIDS, "window": WINDOW,
              "reference": composition.tolist(), "reference_values": ref_values.tolist()}
    return w1_metric("window_jsd", f"windowed composition JSD, W1 to the reference (bits, {WINDOW} residues)",
                     values, ref_values, recipe)


def judge_values(sequences):
    """[n] UniRep NLL per residue of each sequence (nats)."""
    return np.array([float(nll.mean()) for nll in judge().residue_nll(sequences)])


def per_sequence(function):
    return lambda sequences: np.array([function(s) for s in sequences], float)


# The panel: each metric is the W1 distance between a per-sequence value's distribution over the
# generated set and over the reference, so that "too natural-looking" in one direction (argmax
# runs, which the judge likes) counts as worse like the other. The one-sided means (perplexity,
# longest run, ...) fail the degradation ladder (reports/protein_ladder.md), and so do the
# dipeptide JSD and the W1 forms of distinct 3-mers, pairwise identity (diversity) and training-set
# identity (novelty): they are not reported with the runs; the ladder report shows them.
PANEL = {   # name: (label, [n] per-sequence values of a list of sequences)
    "judge_w1": ("UniRep judge NLL per residue, W1 to the reference (nats)", judge_values),
    "longest_run_w1": ("longest single-residue run, W1 to the reference (residues)", per_sequence(longest_run)),
    "low_complexity_w1": ("share of residues in low-entropy 12-residue windows, W1 to the reference",
                          per_sequence(low_complexity_share)),
}


def panel_values(sequences):
    """{panel metric: [n] per-sequence values}."""
    return {name: values(sequences) for name, (_, values) in PANEL.items()}


def reference_panel_values(reference):
    """``panel_values(reference)``, kept in the cache like the floor (the judge takes about 16 s on
    500 sequences, which a one-input run should not pay each time)."""
    stored = cached_json(cache_dir() / "protein" / f"reference-panel-{floor_key([], reference)}.json",
                         lambda: {name: v.tolist() for name, v in panel_values(reference).items()},
                         lambda stored: isinstance(stored, dict) and set(stored) == set(PANEL))
    return {name: np.asarray(values, float) for name, values in stored.items()}


def summarize_sequences(sequences, reference, passes):
    """The headline (windowed composition JSD, W1), pooled composition JSD (bits) against
    ``reference``, the panel (PANEL: the judge and two collapse measures, each as W1 to the
    reference's per-sequence values) and passes; with 95% CIs."""
    comp = np.stack([composition_counts(s) for s in sequences])
    ref_comp = np.stack([composition_counts(s) for s in reference])
    values, ref_values = panel_values(sequences), reference_panel_values(reference)
    metrics = [
        window_metric(sequences, reference, ref_comp),
        jsd_metric("composition_jsd", comp, ref_comp, "amino-acid composition JSD (bits)", k=1),
        *(w1_metric(name, label, values[name], ref_values[name]) for name, (label, _) in PANEL.items()),
    ]
    if passes is not None:
        metrics.append(mean_metric("passes", passes, False, "forward passes per sequence", field="passes"))
    return metrics
