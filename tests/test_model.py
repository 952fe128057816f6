import pytest
import torch

from bench.errors import BenchError
from tasks.sudoku.checkpoint import load_sudoku_model, save_checkpoint
from tasks.sudoku.model import SudokuMDM, SudokuModelConfig, peer_mask
from tasks.sudoku.train import mask_batch

TINY = SudokuModelConfig(n_layers=1, d_model=16, n_heads=2, d_ff=32)


def test_peer_mask_has_each_cell_and_its_20_peers():
    mask = peer_mask()
    assert mask.sum(1).tolist() == [21] * 81
    assert mask[0, 8] and mask[0, 72] and mask[0, 20] and not mask[0, 30]


def test_one_layer_sees_only_peers():
    torch.manual_seed(0)
    model = SudokuMDM(TINY).eval()
    tokens = torch.randint(1, 10, (1, 81))
    masked = torch.zeros(1, 81, dtype=torch.bool)
    base, _ = model(tokens, masked)
    changed = tokens.clone()
    changed[0, 30] = changed[0, 30] % 9 + 1  # cell (3, 3): not a peer of cell 0
    after, _ = model(changed, masked)
    assert torch.allclose(base[0, 0], after[0, 0])
    assert not torch.allclose(base[0, 27], after[0, 27])  # (3, 0) shares its row


def test_shapes_and_hidden_layer_choice():
    cfg = SudokuModelConfig(n_layers=2, d_model=16, n_heads=2, d_ff=32, hidden_layer=0)
    model = SudokuMDM(cfg)
    logits, hidden = model(torch.randint(1, 10, (3, 81)), torch.rand(3, 81) < 0.5)
    assert logits.shape == (3, 81, 9) and hidden.shape == (3, 81, 16)


def test_training_masks_only_blanks_except_the_random_share():
    puzzles = torch.zeros(512, 81, dtype=torch.long)
    puzzles[:, :30] = 5  # 30 givens
    masked = mask_batch(puzzles, torch.Generator().manual_seed(0), random_share=0.0)
    assert not masked[:, :30].any() and masked.any(1).all()
    everywhere = mask_batch(puzzles, torch.Generator().manual_seed(0), random_share=1.0)
    assert everywhere[:, :30].any()


def test_checkpoint_round_trip_and_identity(tmp_path):
    model = SudokuMDM(TINY)
    save_checkpoint(tmp_path / "m.pt", model, {"note": "tiny"})
    loaded = load_sudoku_model(tmp_path / "m.pt")
    tokens, masked = torch.randint(1, 10, (2, 81)), torch.rand(2, 81) < 0.5
    assert torch.equal(loaded(tokens, masked).logits, model.eval()(tokens, masked)[0].detach())
    assert len(loaded.checkpoint_id) == 12 and loaded.meta == {"note": "tiny"}


def test_checkpoint_of_another_shape_is_a_clear_error(tmp_path):
    model = SudokuMDM(TINY)
    payload_path = tmp_path / "m.pt"
    save_checkpoint(payload_path, model, {})
    payload = torch.load(payload_path, weights_only=True)
    payload["config"]["d_model"] = 32
    torch.save(payload, payload_path)
    with pytest.raises(BenchError, match="does not match the model code"):
        load_sudoku_model(payload_path)
