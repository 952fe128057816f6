"""The protein task's commands: training its model, building its data and judge, order-training examples."""
import sys

from bench.training import train_and_log


def train_model(settings, out):
    """`bench train protein KEY=VALUE...`: settings go to the model or the training config by name."""
    from tasks.protein.model import STAGE1_WEIGHTS
    from tasks.protein.train import ProteinModelConfig, ProteinTrainConfig, train
    train_and_log("protein", (ProteinModelConfig, ProteinTrainConfig), train, settings, out,
                  default_weights=STAGE1_WEIGHTS)


def build_unirep(args):
    """`bench data unirep`: fetch the judge's weights and print its check on natural sequences."""
    from tasks.protein.fasta import read_fasta
    from tasks.protein.judge import fetch_weights, natural_sequence_check
    from tasks.protein.split import REFERENCE_A
    print(f"UniRep judge weights: {fetch_weights()}", flush=True)
    sequences = read_fasta(REFERENCE_A).sequences
    print(f"checking the judge on the {len(sequences)} natural sequences of reference A and their shuffles "
          f"(about 1.5 minutes on 2 CPU cores)", file=sys.stderr, flush=True)   # its one long step, silent otherwise
    check = natural_sequence_check(sequences)
    print("judge check on reference A: perplexity {natural:.2f} natural, {shuffled:.2f} shuffled, "
          "{composition_only:.2f} composition-only; natural beats shuffled for "
          "{natural_beats_shuffled:.0%} of sequences".format(**check))


def build_windows(args):
    """`bench data protein`: the cached Swiss-Prot windows (needs metastudent-data and mmseqs2)."""
    from tasks.protein.bigdata import build_full_set
    path, counts = build_full_set()
    print(f"protein training windows: {counts['windows']} from {counts['distinct']} distinct Swiss-Prot "
          f"sequences, {counts['dropped_relatives']} dropped as relatives of held-out sequences -> {path}")


def order_examples():
    """(x0, start tokens, start masked) of the protein training sequences, fully masked at the start."""
    from tasks.protein.encoding import encode
    from tasks.protein.model import PAD_ID
    from tasks.protein.split import make_split
    tokens, residue = encode([sequence for _, sequence in make_split().train])
    return tokens, tokens.masked_fill(residue, PAD_ID), residue
