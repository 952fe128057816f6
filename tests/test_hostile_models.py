"""A model is checked, not trusted: one that writes into the tokens or masks it is given, one whose
value ids include the inputs' blank id, or one whose output has the wrong shape is a one-line
error (exit 2) before anything is scored, wherever in the decode it misbehaves.

The factories below are imported by `bench run --model test_hostile_models:NAME` (tests/ is on
sys.path under pytest)."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.cli import main
from bench.core import MaskedModel, ModelOutput
from bench.decode import decode
from bench.errors import BenchError
from bench.models import probe
from bench.registry import parse_strategy
from tasks.sudoku.task import SudokuTask

SUDOKU = ["run", "--tasks", "sudoku", "--strategies", "topk:k=9", "--limit", "3", "--batch-size", "3"]
SUDOKU_INPUTS = SudokuTask().eval_set(2, 0)
FAST = settings(max_examples=40, deadline=None, database=None)  # no example database in the checkout


class Honest(MaskedModel):
    """Fixed logits: position p prefers value p % V. A subclass misbehaves from call ``from_call``
    on (0: already in the one-input probe before decoding; 1: first in the decode loop)."""
    vocab_size = 9
    checkpoint_id = "hostile"

    def __init__(self, from_call=1):
        self.value_tokens = torch.arange(1, 10)
        self.from_call, self.calls = from_call, 0

    def __call__(self, tokens, masked):
        misbehave = self.calls >= self.from_call
        self.calls += 1
        logits = torch.eye(self.vocab_size)[torch.arange(tokens.shape[1]) % self.vocab_size]
        return self.output(tokens, masked, logits.expand(tokens.shape[0], -1, -1).clone(), misbehave)

    def output(self, tokens, masked, logits, misbehave):
        return ModelOutput(logits=logits)


class WritesTokens(Honest):
    def output(self, tokens, masked, logits, misbehave):
        if misbehave:
            tokens[masked] = 5          # "fills in" every blank: would be scored as decoded
        return super().output(tokens, masked, logits, misbehave)


class WritesMasked(Honest):
    def output(self, tokens, masked, logits, misbehave):
        if misbehave:
            masked.fill_(False)          # "finishes" every row after one pass
        return super().output(tokens, masked, logits, misbehave)


class FewerRows(Honest):
    def output(self, tokens, masked, logits, misbehave):
        return ModelOutput(logits=logits[:-1] if misbehave and len(logits) > 1 else logits)


def writes_tokens():
    return WritesTokens()


def writes_tokens_at_once():
    return WritesTokens(from_call=0)


def writes_masked():
    return WritesMasked()


def fewer_rows():
    return FewerRows()


def blank_valued():
    model = Honest()
    model.value_tokens = torch.arange(0, 9)   # 0 is Sudoku's blank: a "revealed" cell would stay blank
    return model


@pytest.mark.parametrize("factory,message", [
    ("writes_tokens", "the model wrote into the tokens it was given at pass 0"),
    ("writes_tokens_at_once", "wrote into the tokens it was given"),
    ("writes_masked", "the model wrote into the masked it was given at pass 0"),
    ("fewer_rows", "the model returned logits of shape [2, 81, 9] for 3 rows of 81 positions at pass 0; "
                   "expected [3, 81, 9]"),
    ("blank_valued", "value_tokens hold 0, the id the inputs hold at masked positions"),
])
def test_a_misbehaving_model_is_one_line_and_nothing_is_scored(tmp_path, capsys, factory, message):
    code = main([*SUDOKU, "--model", f"test_hostile_models:{factory}", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]    # after the run's own line and bar when caught mid-decode
    assert code == 2 and last.startswith("error: ") and message in last, err
    assert err.count("error: ") == 1 and "Traceback" not in err, err
    # no records, partial or summary (the runner keeps an empty .lock of a cell that stopped on an error)
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".lock"]


def start(rows, positions):
    tokens = torch.zeros(rows, positions, dtype=torch.long)
    return tokens, tokens == 0


class WritesOnce(Honest):
    """Writes one entry of ``what`` ("tokens" or "masked") of row ``row`` at position ``col`` at
    call ``from_call`` only."""

    def __init__(self, what, from_call, row, col):
        super().__init__(from_call)
        self.what, self.row, self.col = what, row, col

    def output(self, tokens, masked, logits, misbehave):
        if self.calls - 1 == self.from_call:
            target = tokens if self.what == "tokens" else masked
            row = min(self.row, len(target) - 1)
            target[row, self.col] = 7 if self.what == "tokens" else not target[row, self.col]
        return super().output(tokens, masked, logits, misbehave)


@FAST
@given(what=st.sampled_from(["tokens", "masked"]), call=st.integers(0, 2), row=st.integers(0, 4),
       col=st.integers(0, 5))
def test_one_write_into_one_input_at_any_pass_is_caught(what, call, row, col):
    model = WritesOnce(what, call, row, col)
    tokens, masked = start(5, 6)
    with pytest.raises(BenchError, match=f"wrote into the {what} it was given at pass {call}"):
        decode(model, tokens, masked, parse_strategy("topk:k=2"))   # 3 passes: calls 0, 1 and 2


@FAST
@given(rows=st.integers(1, 6), dropped=st.integers(1, 6), call=st.integers(0, 2))
def test_an_output_short_of_rows_at_any_pass_names_both_shapes(rows, dropped, call):
    class Short(Honest):
        def output(self, tokens, masked, logits, misbehave):
            return ModelOutput(logits=logits[dropped:] if misbehave else logits)
    tokens, masked = start(rows, 6)
    with pytest.raises(BenchError) as caught:
        decode(Short(call), tokens, masked, parse_strategy("topk:k=2"))
    assert f"logits of shape [{max(rows - dropped, 0)}, 6, 9] for {rows} rows of 6 positions at pass {call}" \
        in str(caught.value)
    assert len(str(caught.value).splitlines()) == 1


@FAST
@given(ids=st.permutations(range(10)).map(lambda p: p[:9]).filter(lambda ids: 0 in ids))
def test_value_ids_that_hold_the_blank_anywhere_are_refused_before_decoding(ids):
    model = Honest()
    model.value_tokens = torch.tensor(ids)
    with pytest.raises(BenchError, match="value_tokens hold 0, the id the inputs hold at masked positions"):
        probe(model, [], SUDOKU_INPUTS, "the model hostile")
    assert model.calls == 0   # refused before its first forward pass


def test_an_honest_model_decodes_and_its_inputs_are_its_own(tmp_path):
    """The loop's own state never leaks into the model: what a model is given is a copy."""
    seen = []

    class Keeps(Honest):
        def output(self, tokens, masked, logits, misbehave):
            seen.append(tokens)
            return super().output(tokens, masked, logits, misbehave)
    tokens, masked = start(2, 6)
    result = decode(Keeps(), tokens, masked, parse_strategy("topk:k=3"))
    assert (result.tokens > 0).all() and result.passes.tolist() == [2, 2]
    assert (seen[0] == 0).all()   # the first pass's input, unchanged by the loop's second fill


def test_the_pass_bar_counts_every_revealed_position(monkeypatch):
    """The bar under a batch (shown on a terminal) ends at the batch's masked positions."""
    import io

    import bench.decode
    bars = []

    def drawn_bar(masked):
        bars.append(bench.decode.tqdm(total=int(masked.sum()), file=io.StringIO(), mininterval=0, miniters=1))
        return bars[-1]
    monkeypatch.setattr(bench.decode, "pass_bar", drawn_bar)
    tokens, masked = start(3, 6)
    masked[0, :2] = False
    decode(Honest(), tokens, masked, parse_strategy("topk:k=4"))
    shown = bars[0].fp.getvalue()
    assert bars[0].n == bars[0].total == 16 and "pass 1, 2 rows left" in shown and "pass 2, 0 rows left" in shown
