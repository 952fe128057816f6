"""The one decode loop every strategy runs through, and the first pass its runs share."""
import copy
import dataclasses
import hashlib
import time
from dataclasses import dataclass

import torch
from tqdm import tqdm

from bench.core import Selection, StepState, all_finite
from bench.errors import BenchError
from bench.registry import check_positions
from bench.streams import Streams, categorical


@dataclass
class DecodeResult:
    tokens: torch.Tensor  # [B, N] final tokens
    passes: torch.Tensor  # [B] forward passes each row took
    seconds: float        # wall time of the whole batch
    aux_passes: torch.Tensor  # [B] passes the strategy spent besides decoding (an oracle's probing)
    log_q: torch.Tensor   # [B] float64: log-probability of the revealed values under the sampling
    #                       distribution at the pass that revealed them, summed (0 for argmax values)
    remasked: torch.Tensor | None = None   # [B] positions masked again (a re-masking strategy's; else None)
    reveal_pass: torch.Tensor | None = None   # [B, N] long: the pass (from 0) at which each position masked at
    #                                           the start took its final value; -1 where it was given


def fill_values(tokens, out, pick, value_tokens, *, temperature=0.0, streams=None, step=0, forced=None):
    """(``tokens`` [B, N] with a value written at every position of ``pick``, [B] float64
    log-probability of those values): argmax values (temperature 0: log-probability 0, nothing is
    drawn) or values drawn from the model's distribution at ``temperature``, each from its input's
    own stream (``streams``, bench.streams: purpose ``values``, pass ``step``). ``forced`` ([B, N]
    value indices) writes those values instead of drawing, with their log-probability (the
    likelihood of a given sample along the order the strategy picks). Only the picked positions
    are computed or drawn."""
    rows, cols = pick.nonzero(as_tuple=True)
    logits = out.logits[rows, cols]                                           # [P, V]
    log_q = torch.zeros(pick.shape[0], dtype=torch.float64)
    if temperature == 0 and forced is None:
        values = logits.argmax(-1)
    else:
        log_probs = torch.log_softmax(logits.float() / temperature, dim=-1)  # [P, V]
        streams = streams if streams is not None else Streams(0, rows=pick.shape[0])
        values = (forced[rows, cols] if forced is not None
                  else categorical(log_probs.exp(), streams.uniform(step, "values", rows, cols)))
        drawn = log_probs.gather(-1, values.unsqueeze(-1)).squeeze(-1).double()
        log_q = torch.zeros(pick.shape, dtype=torch.float64).index_put_((rows, cols), drawn).sum(1)
    filled = tokens.clone()
    filled[rows, cols] = value_tokens[values]
    return filled, log_q


def check_pick(pick, masked, strategy_name, step, may_skip=False):
    """A strategy must reveal a non-empty subset of the masked positions in every row (one with a
    pass budget, ``may_skip``, may reveal nothing: its budget bounds the loop)."""
    if not isinstance(pick, torch.Tensor) or pick.shape != masked.shape or pick.dtype != torch.bool:
        raise BenchError(f"strategy {strategy_name} returned {shape_text(pick)} {getattr(pick, 'dtype', '')}, "
                         f"expected bool {tuple(masked.shape)}")
    if (pick & ~masked).any():
        raise BenchError(f"strategy {strategy_name} revealed an already unmasked position at pass {step}")
    if not may_skip and not pick.any(1).all():
        raise BenchError(f"strategy {strategy_name} revealed nothing for an active row at pass {step}")


def budget_of(strategy):
    """The strategy's pass budget (bench.core.Strategy.pass_budget); None for an object that only
    has ``select`` (the loop's contract is ``select``; the rest has defaults)."""
    return strategy.pass_budget() if hasattr(strategy, "pass_budget") else None


def split_selection(chosen, state, strategy, step):
    """(reveal, remask or None) of what ``select`` returned, checked: a Selection only from a
    strategy that declares ``remasks`` and a pass budget, its re-masked positions decoded ones
    that were masked at the start (never a given, never an input's starting token)."""
    budget = budget_of(strategy)
    if not isinstance(chosen, Selection):
        check_pick(chosen, state.masked, strategy.name, step, may_skip=budget is not None)
        return chosen, None
    if not getattr(strategy, "remasks", False) or budget is None:
        raise BenchError(f"strategy {strategy.name} returned a Selection but does not declare remasks = True "
                         f"and a pass budget")
    check_pick(chosen.reveal, state.masked, strategy.name, step, may_skip=True)
    remask = chosen.remask
    if not isinstance(remask, torch.Tensor) or remask.shape != state.masked.shape or remask.dtype != torch.bool:
        raise BenchError(f"strategy {strategy.name} returned a remask of {shape_text(remask)}, "
                         f"expected bool {tuple(state.masked.shape)}")
    if (remask & (state.masked | ~state.start_masked)).any():
        raise BenchError(f"strategy {strategy.name} re-masked a position that is masked, given or a starting "
                         f"token at pass {step}; only positions revealed since the start may be masked again")
    return chosen.reveal, remask


def keep_memory(memory, updated, active, rows):
    """Write a pass's per-input state (``updated``, tensors [A, ...] of the active rows) back into
    ``memory`` (tensors [rows, ...]); a name first assigned at a pass (a shape known only from the
    model's output) is made for every row, zeros where no value was given yet."""
    for name, value in updated.items():
        if name not in memory:
            memory[name] = value.new_zeros((rows,) + tuple(value.shape[1:]))
        memory[name][active] = value


def check_budget(strategy, step, still_masked):
    """A strategy with a pass budget that leaves positions masked after it is an error, never a
    decode that loops on."""
    budget = budget_of(strategy)
    if budget is not None and step + 1 >= budget and still_masked.any():
        raise BenchError(f"strategy {strategy.name} left {int(still_masked.any(1).sum())} inputs with masked "
                         f"positions after its budget of {budget} passes")


def shape_text(value):
    return f"[{', '.join(map(str, value.shape))}]" if isinstance(value, torch.Tensor) else type(value).__name__


def check_output(out, rows, positions, values, step):
    """Logits [rows, positions, values] and hidden states, where the model gives them, [rows,
    positions, D]: one line naming both shapes, not an indexing error deep in a strategy."""
    logits = getattr(out, "logits", None)
    if not isinstance(logits, torch.Tensor) or tuple(logits.shape) != (rows, positions, values):
        raise BenchError(f"the model returned logits of shape {shape_text(logits)} for {rows} rows of {positions} "
                         f"positions at pass {step}; expected [{rows}, {positions}, {values}]")
    hidden = getattr(out, "hidden", None)
    if hidden is not None and not (isinstance(hidden, torch.Tensor) and hidden.dim() == 3
                                   and tuple(hidden.shape[:2]) == (rows, positions)):
        raise BenchError(f"the model returned hidden states of shape {shape_text(hidden)} for {rows} rows of "
                         f"{positions} positions at pass {step}; expected [{rows}, {positions}, D]")


def check_inputs_kept(given, kept, who, when):
    """``given`` (tokens, masked), the copies a model was called with, must still equal ``kept``."""
    for name, after, before in zip(("tokens", "masked"), given, kept):
        if not torch.equal(after, before):
            raise BenchError(f"{who} wrote into the {name} it was given {when}; a model must leave its inputs "
                             f"as they are (change a copy)")


def forward(model, tokens, masked, step):
    """The model's output at pass ``step`` on copies of ``tokens`` [A, N] and ``masked`` [A, N],
    checked. A model that writes into what it is given is an error, not a decode that goes on
    from (and is scored on) what it wrote; a copy and a compare cost microseconds a pass."""
    given_tokens, given_masked = tokens.clone(), masked.clone()
    out = model(given_tokens, given_masked)
    check_inputs_kept((given_tokens, given_masked), (tokens, masked), "the model", f"at pass {step}")
    check_output(out, *tokens.shape, len(model.value_tokens), step)
    if not all_finite(out.logits):
        raise BenchError(f"the model returned non-finite logits at pass {step}")
    return out


def copied(out):
    """A deep copy of a model output (a strategy may write into its tensors, nested ones too),
    or None for an output that cannot be copied (it is then not kept)."""
    try:
        return copy.deepcopy(out)
    except (TypeError, RuntimeError, copy.Error):
        return None


def output_bytes(out):
    """Bytes of the tensors an output holds as attributes (nested containers count as zero: the
    bound is on what is measured)."""
    values = vars(out).values() if hasattr(out, "__dict__") else ()
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


class FirstPasses:
    """The model's output on the starting states of a task's inputs, shared by the runs of one
    invocation: every strategy starts from the same state (the input as given), so the first pass
    of a batch is the same for every run on one model. Keyed by the batch's content (tokens and
    mask bytes), so a batch decoded again (another strategy, a verification) reuses it whatever
    produced it; each use gets a copy. Outputs beyond ``limit_bytes`` in all are not kept (those
    batches are computed as usual): the saving is one pass per input per run, not worth memory."""

    def __init__(self, model, limit_bytes=2 ** 31):
        self.model, self.limit_bytes, self.kept, self.used = model, limit_bytes, {}, 0
        self.hits = self.misses = self.hit_rows = 0

    @staticmethod
    def key(tokens, masked):
        digest = hashlib.sha1(tokens.cpu().numpy().tobytes())
        digest.update(masked.cpu().numpy().tobytes())
        return tuple(tokens.shape), digest.hexdigest()

    def __call__(self, tokens, masked):
        """The first pass on ``tokens``/``masked`` (the active rows of a batch at pass 0), checked."""
        key = self.key(tokens, masked)
        if key in self.kept:
            self.hits += 1
            self.hit_rows += len(tokens)
            return copied(self.kept[key])
        self.misses += 1
        out = forward(self.model, tokens, masked, 0)
        size = output_bytes(out)
        kept = copied(out) if self.used + size <= self.limit_bytes else None
        if kept is not None:
            self.kept[key] = kept
            self.used += size
        return out


def pass_bar(masked):
    """A bar over the batch's masked positions, advanced as passes reveal them, with the pass and
    the rows still to decode beside it: a one-batch run otherwise shows 0/1 batches until its end.
    Shown only on a terminal (tqdm's disable=None) and only after 1 s (short decodes: helper labels,
    training plays, tests); cleared when the batch ends."""
    return tqdm(total=int(masked.sum()), desc="  passes", unit="pos", leave=False, disable=None, delay=1.0)


def show_pass(bar, step, pick, still_masked):
    if not bar.disable:   # the sums cost a sync each; only for a bar that is drawn
        bar.set_postfix_str(f"pass {step + 1}, {int(still_masked.any(1).sum())} rows left", refresh=False)
        bar.update(int(pick.sum()))


class Decoding:
    """One decode's state, advanced a pass at a time: ``request`` gives the active rows' (tokens,
    masked), ``advance`` applies the model's output on them. ``decode`` loops one of these over its
    own forward calls; ``decode_shared`` feeds many of them from one forward call per pass, so
    a decode's records never depend on whether its rows shared a forward call (every random
    number comes from its own rows' streams, its strategy and memory see only its own rows).
    Arguments as ``decode``'s."""

    def __init__(self, model, tokens, masked, strategy, temperature=0.0, *, seed=0, index=None, first_pass=None,
                 forced=None):
        check_positions(strategy, tokens.shape[1])   # before any allocation or pass
        self.model, self.strategy, self.temperature = model, strategy, temperature
        self.first_pass, self.forced = first_pass, forced
        self.start_tokens, self.start = tokens.clone(), masked.clone()
        self.tokens, self.masked = tokens.clone(), masked.clone()
        self.streams = Streams(seed, index if index is not None else torch.arange(tokens.shape[0]))
        self.passes = torch.zeros(tokens.shape[0], dtype=torch.long)
        self.aux = torch.zeros_like(self.passes)
        self.log_q = torch.zeros(tokens.shape[0], dtype=torch.float64)
        self.remasked = torch.zeros_like(self.passes) if getattr(strategy, "remasks", False) else None
        self.reveal_pass = torch.full(tokens.shape, -1, dtype=torch.long)
        self.memory = strategy.start_memory(tokens, masked) if hasattr(strategy, "start_memory") else {}
        self.start_time, self.step, self.seconds, self.active = time.perf_counter(), 0, None, None

    def request(self):
        """(tokens, masked) of the rows still masked, [A, N] each, or None when every row is
        complete (the decode's seconds stop then)."""
        self.active = self.masked.any(1).nonzero().squeeze(1)  # [A]
        if self.active.numel() == 0:
            if self.seconds is None:
                self.seconds = time.perf_counter() - self.start_time
            return None
        return self.tokens[self.active], self.masked[self.active]

    def shared_first(self, tokens, masked):
        """Pass 0's output from the FirstPasses this decode was given, else None."""
        return self.first_pass(tokens, masked) if self.step == 0 and self.first_pass is not None else None

    def advance(self, out, bar=None):
        """Apply one pass: the strategy selects on ``out`` (the model's output on the rows of the
        last ``request``), the revealed values are filled in, re-masked positions go back."""
        active, strategy = self.active, self.strategy
        rows = self.streams.take(active)
        state = StepState(self.tokens[active], self.masked[active], out, self.step, rows, self.start[active],
                          {name: value[active] for name, value in self.memory.items()})
        pick, remask = split_selection(strategy.select(state), state, strategy, self.step)
        keep_memory(self.memory, state.memory, active, len(self.tokens))
        if "aux_passes" in vars(state):   # a strategy that spent passes (an oracle's probes) made it
            self.aux[active] += state.aux_passes  # counted apart from decoding passes
        self.tokens[active], drawn_log_q = fill_values(
            state.tokens, state.out, pick, self.model.value_tokens, temperature=self.temperature, streams=rows,
            step=self.step, forced=None if self.forced is None else self.forced[active])
        self.log_q[active] += drawn_log_q
        still_masked = state.masked & ~pick
        if remask is not None:   # back to the input's starting token, masked again
            self.tokens[active] = torch.where(remask, self.start_tokens[active], self.tokens[active])
            still_masked |= remask
            self.remasked[active] += remask.sum(1)
        self.masked[active] = still_masked
        self.reveal_pass[active] = revealed_at(self.reveal_pass[active], pick, remask, self.step)
        self.passes[active] += 1
        if bar is not None:
            show_pass(bar, self.step, pick, still_masked)
        check_budget(strategy, self.step, still_masked)
        self.step += 1

    def result(self):
        return DecodeResult(self.tokens, self.passes, self.seconds, self.aux, self.log_q, self.remasked,
                            self.reveal_pass)


def revealed_at(reveal_pass, pick, remask, step):
    """``reveal_pass`` [A, N] after pass ``step``: ``step`` where ``pick`` revealed a position, -1
    again where ``remask`` masked one back (its final value comes at a later pass)."""
    reveal_pass = torch.where(pick, step, reveal_pass)
    return reveal_pass if remask is None else torch.where(remask, -1, reveal_pass)


def decode(model, tokens, masked, strategy, temperature=0.0, *, seed=0, index=None, first_pass=None, forced=None):
    """Reveal every masked position of ``tokens`` [B, N], one forward pass per active row per step.

    Rows that are complete drop out of the batch, so their pass count stops. Row r is input
    ``index[r]`` (default r) of a run with ``seed``: every random number drawn for it (sampled
    values, a sampling strategy's draws through ``StepState.uniform``) comes from its own stream
    (bench.streams), so its result does not depend on the other rows of the batch. ``log_q``
    sums the log-probabilities of the drawn values: for a strategy whose picks depend only on the
    state it is log q(x), the log-probability of the whole sample under the decoding process (an
    exact task compares it with the true log p(x)). The model is called on copies and checked at
    every pass (``forward``): a misbehaving model is a BenchError, never a scored decode.
    ``first_pass``: a FirstPasses of this model, which gives pass 0's output when it has it.
    ``forced`` ([B, N] value indices): every revealed position takes its value from there instead
    of a draw, and ``log_q`` is that given sample's log-probability along the order the strategy
    picks (an exact task's estimate of q(x) over the orders a strategy draws).

    A strategy's per-input state (``Strategy.start_memory``) is kept here per row of this call and
    handed to each pass for its active rows, so it follows an input as others leave the batch.
    A re-masking strategy (``remasks``) may return a Selection: the positions it masks again go
    back to the input's starting token and are counted in ``remasked``; its ``pass_budget``
    bounds the passes (an input still masked after it is an error). One forward pass a pass, always.
    """
    decoding = Decoding(model, tokens, masked, strategy, temperature, seed=seed, index=index,
                        first_pass=first_pass, forced=forced)
    with pass_bar(decoding.masked) as bar:
        while (request := decoding.request()) is not None:
            out = decoding.shared_first(*request)
            decoding.advance(out if out is not None else forward(model, *request, decoding.step), bar)
    return decoding.result()


def split_output(out, sizes):
    """``out`` of one forward call on concatenated rows, cut back into one output per part of
    ``sizes`` rows: every tensor field with a leading row dimension (ModelOutput's logits and
    hidden; dataclasses.fields, so a field added there is cut too) is sliced, others kept whole."""
    total, parts, begin = sum(sizes), [], 0
    names = [f.name for f in dataclasses.fields(out)] if dataclasses.is_dataclass(out) else list(vars(out))
    for size in sizes:
        cut = {name: value[begin:begin + size] for name in names
               if isinstance(value := getattr(out, name), torch.Tensor) and value.dim() and len(value) == total}
        parts.append(dataclasses.replace(out, **cut) if dataclasses.is_dataclass(out) else cut_copy(out, cut))
        begin += size
    return parts


def cut_copy(out, cut):
    """A shallow copy of an output that is not a dataclass, with the ``cut`` attributes replaced."""
    part = copy.copy(out)
    for name, value in cut.items():
        setattr(part, name, value)
    return part


def decode_shared(model, decodings):
    """Run ``decodings`` (Decoding objects of one ``model``) to the end together: at every pass the
    active rows of all of them, grouped by sequence length, go through one forward call (checked
    as ``forward`` checks it) and each gets its own rows' output back. Many small decodes (a
    verification's few inputs of each of many runs) then cost a few larger forward calls a pass
    instead of one tiny call each. Returns their DecodeResults, in order."""
    with pass_bar(torch.cat([d.masked.flatten() for d in decodings] or [torch.zeros(0, dtype=torch.bool)])) as bar:
        while waiting := [(d, r) for d in decodings if (r := d.request()) is not None]:
            for group in by_length(waiting):
                for (decoding, _), out in zip(group, shared_forward(model, group)):
                    decoding.advance(out)
            show_shared(bar, decodings)
    return [d.result() for d in decodings]


def show_shared(bar, decodings):
    """The bar of a shared decode: positions revealed in all, and the rows still to decode."""
    if not bar.disable:   # the sums cost a sync each; only for a bar that is drawn
        still = [d.masked.any(1) for d in decodings]
        bar.set_postfix_str(f"pass {max(d.step for d in decodings)}, {int(sum(s.sum() for s in still))} rows left",
                            refresh=False)
        bar.update(bar.total - sum(int(d.masked.sum()) for d in decodings) - bar.n)


def by_length(waiting):
    """(decoding, request) pairs grouped by their sequences' length (one forward call a group)."""
    groups = {}
    for pair in waiting:
        groups.setdefault(pair[1][0].shape[1], []).append(pair)
    return list(groups.values())


def shared_forward(model, group):
    """Each (decoding, request)'s output: pass 0 from its FirstPasses where it has one, the rest
    from one forward call on their rows concatenated, cut back per decoding."""
    outs = [d.shared_first(*r) for d, r in group]
    rest = [i for i, out in enumerate(outs) if out is None]
    if rest:
        tokens = torch.cat([group[i][1][0] for i in rest])
        masked = torch.cat([group[i][1][1] for i in rest])
        joint = forward(model, tokens, masked, max(group[i][0].step for i in rest))
        for i, out in zip(rest, split_output(joint, [len(group[i][1][0]) for i in rest])):
            outs[i] = out
    return outs
