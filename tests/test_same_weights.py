"""A shipped checkpoint reproduced from its logged command (`bench train ... --same-as SHIPPED`, issue 33)."""
import torch

from conftest import run_cli


def save(path, weight, meta):
    torch.save({"config": {"d": 2}, "state_dict": {"w": weight}, "posterior_state_dict": {"v": weight * 2},
                "meta": meta}, path)


def test_weights_compare_bit_for_bit_and_ignore_the_files_other_fields(tmp_path):
    from bench.checkpoints import weight_difference
    weight = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    save(tmp_path / "a.pt", weight, {"command": "python -m bench train x", "seconds": 1038.5})
    save(tmp_path / "b.pt", weight.clone(), {"command": "python -m bench train x --out b.pt", "seconds": 307.9})
    assert weight_difference(tmp_path / "a.pt", tmp_path / "b.pt") == (2, True, 0.0)
    nudged = weight.clone()
    nudged[1, 2] += 1e-3
    save(tmp_path / "c.pt", nudged, {})
    count, identical, largest = weight_difference(tmp_path / "a.pt", tmp_path / "c.pt")
    assert (count, identical) == (2, False) and abs(largest - 2e-3) < 1e-6   # the posterior holds 2 x w


def test_each_file_written_beside_the_checkpoint_is_paired_with_its_shipped_twin(tmp_path):
    from bench.checkpoints import written_beside
    for name in ("new/order_policy_T8.pt", "new/order_policy_T8_init.pt", "new/order_policy_T8_denoiser.pt",
                 "new/order_policy_T16.pt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    pairs = written_beside(tmp_path / "new/order_policy_T8.pt", tmp_path / "shipped/order_policy_T8.pt")
    assert [(a.name, b.parent.name + "/" + b.name) for a, b in pairs] == [
        ("order_policy_T8.pt", "shipped/order_policy_T8.pt"),
        ("order_policy_T8_denoiser.pt", "shipped/order_policy_T8_denoiser.pt"),
        ("order_policy_T8_init.pt", "shipped/order_policy_T8_init.pt")]


def test_a_retraining_from_the_same_command_reproduces_the_weights_and_another_seed_does_not(tmp_path):
    """Two real (short) trainings of the chain's order policy: the same settings give bit-identical
    weights, initialisation included; another seed is reported as different, exit 1."""
    settings = ["T=8", "steps=2", "n_eval=8", "eval_every=1"]
    first = run_cli("train", "order", "--task", "hmm", *settings, "--out", tmp_path / "a" / "order_policy_T8.pt")
    assert first.returncode == 0, first.stderr
    again = run_cli("train", "order", "--task", "hmm", *settings, "--out", tmp_path / "b" / "order_policy_T8.pt",
                    "--same-as", tmp_path / "a" / "order_policy_T8.pt")
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("bit-identical") == 2      # the policy and its initialisation
    other = run_cli("train", "order", "--task", "hmm", *settings, "seed=1",
                    "--out", tmp_path / "c" / "order_policy_T8.pt", "--same-as", tmp_path / "a" / "order_policy_T8.pt")
    assert other.returncode == 1 and "differ (largest absolute difference" in other.stdout


def test_same_as_without_out_is_a_one_line_error():
    proc = run_cli("train", "order", "--task", "hmm", "T=8", "--same-as", "x.pt")
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("error: --same-as needs --out: train to another file, then compare it with the "
                                   "shipped one")
