"""The antibody task: AntiBERTy (a published masked LM nobody here trained) fills the region of a
germline V domain from IMGT position 11 to the end of the V gene; scored against the input's
own germline and the nearest germline allele of its species and chain. ``--model sapiens``: Sapiens
(one network per chain type, trained on human chains) on the human domains only."""
import hashlib
import importlib.util
from pathlib import Path

import numpy as np

from bench.core import EvalSet, Task
from bench.errors import BenchError
from bench.provenance import portable_path
from bench.registry import register_task
from bench.stats import mean_metric
from tasks.antibody.encoding import (  # noqa: F401 (the task's ids)
    CLS_ID,
    LIGHT_CLS_ID,
    MASK_ID,
    PAD_ID,
    SEP_ID,
    VALUE_IDS,
    encode,
)
from tasks.antibody.germlines import AMINO_ACIDS, INSTALL, SPLITS, allele_matrix, domains


def antiberty_folder():
    """(the AntiBERTy checkpoint folder, its vocabulary file) inside the installed antiberty wheel
    (0.1.3 ships them; found without importing the package)."""
    spec = importlib.util.find_spec("antiberty")
    if spec is None or not spec.submodule_search_locations:
        raise BenchError(f"the antibody task needs AntiBERTy's weights (they ship inside antiberty 0.1.3's "
                         f"wheel): {INSTALL}")
    models = Path(list(spec.submodule_search_locations)[0]) / "trained_models"
    folder, vocab = models / "AntiBERTy_md_smooth", models / "vocab.txt"
    if not (folder / "config.json").is_file() or not vocab.is_file():
        raise BenchError(f"no AntiBERTy checkpoint in {models}; antiberty 1.0 fetches its weights at run time: "
                         f"pip install antiberty==0.1.3")
    return folder, vocab


def antiberty_hf_folder(out=None):
    """AntiBERTy's checkpoint and vocabulary copied into one folder, what ``--model hf:FOLDER``
    loads (the wheel keeps vocab.txt one folder up, where AutoTokenizer does not look); default
    ``<cache>/antiberty_hf``. Returns the folder. The CI gate runs the antibody task through it, so
    the generic ``hf:`` path is exercised on a published model (docs/ci-gate.md)."""
    import shutil

    from bench.checkpoints import cache_dir
    folder, vocab = antiberty_folder()
    target = Path(out) if out else cache_dir() / "antiberty_hf"
    target.mkdir(parents=True, exist_ok=True)
    for source in [p for p in sorted(folder.iterdir()) if p.is_file()] + [vocab]:
        if not (target / source.name).is_file() or (target / source.name).stat().st_size != source.stat().st_size:
            shutil.copyfile(source, target / source.name)
    return target


def filled_region(tokens_row, domain):
    """The amino acids the model wrote in the masked region of one row."""
    ids = tokens_row[1:len(domain.sequence) + 1].tolist()
    return "".join(AMINO_ACIDS[i - 5] if 5 <= i < 25 else "?" for i, m in zip(ids, domain.masked) if m)


def truth_region(domain):
    return "".join(c for c, m in zip(domain.sequence, domain.masked) if m)


def score_region(region, domain, matrices):
    """The record fields of a filled ``region``: recovery of the own germline's residues, identity
    to the nearest allele of the same species and chain (and its name), and whether it is exact."""
    truth = truth_region(domain)
    identity, nearest = nearest_germline(region, domain, matrices)
    return {"recovery": sum(a == b for a, b in zip(region, truth)) / len(truth), "identity": identity,
            "nearest_allele": nearest, "exact": int(region == truth)}


def nearest_germline(region, domain, matrices):
    """(identity to the nearest allele of the domain's species and chain over the masked IMGT
    positions, that allele's name)."""
    names, matrix = matrices[(domain.species, domain.chain)]
    columns = np.array([p - 1 for p, m in zip(domain.imgt, domain.masked) if m])
    same = matrix[:, columns] == np.frombuffer(region.encode(), dtype=np.uint8)
    identity = same.mean(1)
    best = int(identity.argmax())
    return float(identity[best]), names[best]


SAPIENS = "sapiens"                 # --model sapiens
SAPIENS_SPECIES = ("human",)        # its training chains' species: it reads only these domains


@register_task
class AntibodyTask(Task):
    """Antibody V domains from IMGT germlines: AntiBERTy fills IMGT 11 to the end of the V gene."""
    name = "antibody"
    headline = "recovery"
    temperature = 0.0      # argmax values: a fill is the model's best guess, scored against the germline
    weights_dir = Path(__file__).parent / "weights"   # the helpers trained on AntiBERTy's hidden states
    # CPU-sized MI label sets: 2 probed positions per context (41 AntiBERTy rows each, about 85 ms a
    # row on one thread); a GPU labels every masked position with --probe 0 (docs/mi.md)
    mi_label_sizes = {"train": 160, "heldout": 48, "ood": 48}
    mi_probe = 2
    # with 2 probed positions a context holds one pair probed both ways, so the estimator learns and
    # is scored on every pair with a probed direction too (strategies.mi.exact.label_target)
    mi_pairs = "either"
    # order policies: the reward is the region's recovery; 8 domains per step, steps = 300 / T, 32
    # held out; eb:gamma=13.7, 3.8, 1.2 take 4.3, 7.7 and 15.8 passes on the validation domains
    order_training = {"objective": "reward", "batch": 8, "step_units": 300, "n_eval": 32,
                      "init_gamma": {5: 10.0, 10: 2.5, 15: 1.3}}
    options = {"data": "split: test (default) or validation (genes apart from test's)",
               "model": "sapiens (Sapiens 1.0.5, human domains only; fetch: python -m bench data sapiens), or a "
                        "Hugging Face masked-LM folder (default: AntiBERTy from the antiberty wheel)"}
    install = INSTALL

    def __init__(self, data=None, model=None):
        if data is not None and data not in SPLITS:
            raise BenchError(f"--data {data}: the antibody task takes a split, one of {', '.join(SPLITS)}")
        self.split, self.sapiens, self.model = data or "test", model == SAPIENS, model
        self.model_path = None if self.sapiens else model
        if self.sapiens:   # its own helpers, trained on its hidden states (a helper refuses another model)
            self.weights_dir = AntibodyTask.weights_dir / SAPIENS
            # 45 times smaller than AntiBERTy (0.7 s a context at 4 probes on one thread): 4x the
            # contexts at 4x the probed positions (tasks/antibody/README.md, the estimator's quality)
            self.mi_label_sizes, self.mi_probe = {"train": 640, "heldout": 96, "ood": 96}, 8
            # its eb takes about T passes at these gammas on the validation domains (gamma 10: 11.9
            # passes, 30: 5.5; interpolated in log-log), as AntiBERTy's init_gamma do on it
            self.order_training = {**AntibodyTask.order_training, "init_gamma": {5: 35.0, 10: 13.0, 15: 7.5}}
        self.matrices = {}

    def missing(self):
        """anarci for the inputs, antiberty for the default model (a --model folder and Sapiens,
        whose weights `bench data sapiens` fetches, need none)."""
        needed = ["anarci"] + (["antiberty"] if self.model_path is None and not self.sapiens else [])
        return [name for name in needed if importlib.util.find_spec(name) is None]

    def config(self):
        model = portable_path(self.model_path) if self.model_path else "antiberty==0.1.3 AntiBERTy_md_smooth"
        if self.sapiens:
            model = "sapiens==1.0.5 models/v1 checkpoint_vh.pt, checkpoint_vl.pt (human domains)"
        return {"data": self.split, "model": model}

    def symbols(self):
        light = {LIGHT_CLS_ID: "<cls>"} if self.sapiens else {}   # a light chain's start (encoding.py)
        return {**dict(zip(VALUE_IDS.tolist(), AMINO_ACIDS)),
                PAD_ID: "<pad>", CLS_ID: "<cls>", SEP_ID: "<eos>", MASK_ID: "<mask>", **light}

    def load_model(self):
        from bench.hf import load_hf_model
        if self.sapiens:
            from tasks.antibody.sapiens import load_sapiens
            return load_sapiens(self.symbols(), CLS_ID, LIGHT_CLS_ID)
        if self.model_path:
            return load_hf_model(self.model_path, self.symbols())
        folder, vocab = antiberty_folder()
        return load_hf_model(folder, self.symbols(), vocab=vocab)

    def eval_set(self, limit=None, seed=0):
        """The split's domains in their fixed order (the first ``limit``; Sapiens: its human ones);
        the seed plays no part (argmax values, a fixed region)."""
        chosen = [d for d in domains(self.split) if not self.sapiens or d.species in SAPIENS_SPECIES][:limit]
        tokens, masked = encode(chosen, chain_starts=self.sapiens)
        text = "\n".join(f"{d.species} {d.chain} {d.v_allele} {d.j_allele} {d.sequence}" for d in chosen)
        return EvalSet(tokens=tokens, masked=masked, data_id=hashlib.sha256(text.encode()).hexdigest()[:12],
                       extras={"domains": chosen})

    def germline_matrices(self, keys):
        for key in keys:
            if key not in self.matrices:
                self.matrices[key] = allele_matrix(*key)
        return self.matrices

    def records(self, tokens, passes, rows, eval_set):
        chosen = [eval_set.extras["domains"][r] for r in rows.tolist()]
        matrices = self.germline_matrices({(d.species, d.chain) for d in chosen})
        found = []
        for tokens_row, n, row, domain in zip(tokens, passes.tolist(), rows.tolist(), chosen):
            region = filled_region(tokens_row, domain)
            found.append({"index": row, "passes": n, "species": domain.species, "chain": domain.chain,
                          "v_allele": domain.v_allele, "region": region, **score_region(region, domain, matrices)})
        return found

    def data_builders(self):
        from tasks.antibody.sapiens import fetch_checkpoints
        return {"sapiens": ("Sapiens 1.0.5's weights for --model sapiens (from its wheel, no dependencies)",
                            lambda args: print(f"Sapiens weights: {fetch_checkpoints()}")),
                "antiberty_hf": ("AntiBERTy as one Hugging Face folder for --model hf:FOLDER (prints the folder)",
                                 lambda args: print(antiberty_hf_folder()))}

    def value_frequencies(self):
        """[20] each residue's frequency in the helper species' V domains (PC-Sampler's background):
        OAS, AntiBERTy's training data, ships no residue counts, and the test genes must not set it."""
        from tasks.antibody.helpers import residue_frequencies
        return residue_frequencies()

    def mi_contexts(self, model, split, n, generator):
        from tasks.antibody.helpers import mi_contexts
        species = SAPIENS_SPECIES if self.sapiens else None
        return mi_contexts(model, split, n, generator, species, chain_starts=self.sapiens)

    def order_examples(self):
        from tasks.antibody.helpers import order_examples
        return order_examples(chain_starts=self.sapiens)

    def order_reward(self, x0, tokens, log_q):
        from tasks.antibody.helpers import residue_recovery
        return residue_recovery(x0, tokens)

    def summarize(self, records):
        def column(name):
            return np.array([r[name] for r in records], dtype=float)
        return [
            mean_metric("recovery", column("recovery"), True, "amino-acid recovery of the input's own germline",
                        field="recovery"),
            mean_metric("identity", column("identity"), True,
                        "identity to the nearest germline allele of the same species and chain", field="identity"),
            mean_metric("exact_share", column("exact"), True, "share of inputs filled exactly as their germline",
                        field="exact"),
            mean_metric("passes", column("passes"), False, "forward passes per domain", field="passes"),
        ]
