"""`--verify`: a few inputs of a run found complete are decoded again and must reproduce its
stored records: discrete fields exactly, floats within a stated tolerance."""
import json

import torch

from bench.decode import decode_shared
from bench.errors import BenchError
from bench.provenance import describe_numerics, numerics
from bench.results import to_json
from bench.run.cell import decode_rows, remake_command, rows_records, run_decoding

VOLATILE = ("batch", "batch_seconds")  # record fields that depend on the batching or the clock
# Record fields the decode makes since a later version: a stored record made before lacks them
# (not a difference); one that has them is compared as any field.
LATER_FIELDS = ("reveal_pass",)
# How far a float of a record decoded again may be from the stored one: another CPU or BLAS sums
# float32 in another order (a log q of -187.068882 against -187.068891 across machines).
# Records round floats to 6 decimals, hence the absolute part; discrete fields compare exactly.
FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-5
# Rows of the complete runs verified together in one forward call at most (``verify_runs``): the
# 4 inputs of 64 runs, about a run's own default batch (250), so no larger in memory.
SHARED_ROWS = 256


def draws_randomly(task, strategy):
    """Whether a run draws random numbers: sampled values (temperature > 0) or a strategy in a
    sampling mode (a policy that samples its reveals)."""
    return task.temperature > 0 or strategy.samples()


def verify_rows(n, count):
    """``count`` of ``n`` inputs spread evenly, first and last included: what --verify decodes."""
    if count >= n:
        return list(range(n))
    return sorted({round(i * (n - 1) / max(count - 1, 1)) for i in range(count)})


def field_difference(key, stored, new, worst):
    """Why field ``key`` of a record decoded again differs from its stored value ('' when it does
    not): what is discrete (ints, bools, text, lists of them) must be equal, a float within
    FLOAT_RTOL/FLOAT_ATOL. ``worst`` ([deviation, key]) keeps the largest float deviation seen."""
    if isinstance(stored, list) and isinstance(new, list) and len(stored) == len(new):
        return next((d for a, b in zip(stored, new) if (d := field_difference(key, a, b, worst))), "")
    floats = isinstance(stored, float) or isinstance(new, float)
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (stored, new))
    if not (floats and numbers):
        same = type(stored) is type(new) and stored == new   # True == 1 in Python; not in a record
        return "" if same else f"{key} {str(new)[:40]}, stored {str(stored)[:40]}"
    deviation = abs(new - stored)
    if deviation > worst[0]:
        worst[:] = [deviation, key]
    if deviation <= FLOAT_ATOL + FLOAT_RTOL * abs(stored):
        return ""
    return (f"{key} {new!r}, stored {stored!r}: off by {deviation:.3g}, beyond the float tolerance "
            f"(rtol {FLOAT_RTOL:g}, atol {FLOAT_ATOL:g})")


def record_difference(stored, new, worst, derived=()):
    """'passes 13, stored 12' for the first field of ``new`` that differs from ``stored`` beyond
    what reproduction allows (``field_difference``), or ''. ``derived``: fields a later step added
    to the stored records (the summary's ``derived_fields``), which a decode does not make; a field
    of LATER_FIELDS that the stored record lacks (made before the decode recorded it) is skipped."""
    if stored is None:
        return "no stored record"
    new = json.loads(to_json(new))  # as it would be stored: tuples become lists
    for key in sorted(set(stored) | set(new)):
        if key in VOLATILE or key in derived or (key in LATER_FIELDS and key not in stored):
            continue
        if key not in stored or key not in new:
            return f"field {key} is {'new' if key in new else 'gone'}"
        difference = field_difference(key, stored[key], new[key], worst)
        if difference:
            return difference
    return ""


def platform_note(summary):
    """Where the run was made, when that is not where it is checked now: floats may then differ
    in their last digits (another CPU or BLAS sums in another order)."""
    made, here = summary.get("provenance", {}).get("numerics"), numerics()
    if made == here:
        return ""
    made_text = describe_numerics(made) if made else "a platform it did not record"
    return f"; made on {made_text}, checked on {describe_numerics(here)}"


def not_verified(run, records):
    """Why a complete run is not decoded again ('' when it is)."""
    if run.verify == 0:
        return "not verified (--verify 0)"
    if run.task.temperature > 0 and records and "log_q" not in records[0]:
        # made before per-input streams (and log_q): its draws depended on its batch-mates
        return "not verified: made with one random generator per batch, before per-input streams; remake it to verify"
    return ""


def verify_run(run, found, remake=None):
    """Decode ``run.verify`` inputs of a complete run (``found``: its summary and records) again:
    discrete fields must equal the stored records, floats agree within the stated tolerance.
    Returns a note for the run's line, with the largest float deviation seen; a record that does
    not reproduce is an error naming ``remake`` (default: ``remake_command(run)``). Runs that
    draw random numbers (sampled values, a sampling strategy) are checked too: each input draws
    from its own stream, so the inputs decoded alone draw what they drew in their batch."""
    skip = not_verified(run, found[1])
    if skip:
        return skip
    new, _ = decode_rows(run, torch.tensor(verify_rows(len(run.eval_set), run.verify)))
    return reproduced_note(run, found, new, remake)


def reproduced_note(run, found, new, remake=None):
    """The note of a run whose ``new`` records (its verification inputs decoded again) match its
    stored ones (``found``: summary, records); a BenchError naming the run and ``remake`` where
    one does not."""
    summary, records = found
    stored = {r["index"]: r for r in records}
    worst = [0.0, None]
    for record in new:
        difference = record_difference(stored.get(record["index"]), record, worst,
                                       tuple(summary.get("derived_fields", ())))
        if difference:
            raise BenchError(f"{run.label}: the stored result does not reproduce (input {record['index']}: "
                             f"{difference}){platform_note(summary)}; remake it with: "
                             f"{remake or remake_command(run)}")
    drawn = " (their random draws included)" if draws_randomly(run.task, run.strategy) else ""
    floats = f"; largest float deviation {worst[0]:.2g} ({worst[1]})" if worst[1] else ""
    return f"{len(new)} inputs decoded again reproduce it{drawn}{floats}{platform_note(summary)}"


def verify_runs(complete, limit=SHARED_ROWS):
    """(run, note) of each (run, found) of ``complete`` (runs of one task, model and inputs), in
    order, as ``verify_run`` gives them one by one: their verification inputs decoded in shared
    forward calls (bench.decode.decode_shared) of at most ``limit`` rows, so that many runs' few
    inputs each cost a few larger calls a pass, not one small call per run (which is slow on a
    busy CPU). Records do not depend on the rows decoded with them, so the check is the same.
    A run that does not reproduce is a BenchError naming it and its remake command."""
    for chunk in shared_chunks(complete, limit):
        decoded = decode_together([(run, verify_rows(len(run.eval_set), run.verify)) for run, found in chunk
                                   if not not_verified(run, found[1])])
        for run, found in chunk:
            yield run, not_verified(run, found[1]) or reproduced_note(run, found, decoded[id(run)])


def verified_rows(run, found):
    """Inputs ``verify_runs`` decodes again for ``run`` (0 for one it does not verify)."""
    return 0 if not_verified(run, found[1]) else len(verify_rows(len(run.eval_set), run.verify))


def shared_chunks(complete, limit):
    """``complete`` cut, in order, into chunks whose verification rows add up to at most ``limit``
    (a run of more rows is a chunk of its own)."""
    chunk, rows = [], 0
    for pair in complete:
        size = verified_rows(*pair)
        if chunk and rows + size > limit:
            yield chunk
            chunk, rows = [], 0
        chunk.append(pair)
        rows += size
    if chunk:
        yield chunk


def decode_together(run_rows):
    """{id(run): records} of each (run, eval-set rows) of ``run_rows``, decoded in one shared
    decode per model (runs of one task share it)."""
    decoded = {}
    for model in {id(run.model): run.model for run, _ in run_rows}.values():
        mine = [(run, torch.tensor(rows)) for run, rows in run_rows if run.model is model]
        results = decode_shared(model, [run_decoding(run, rows) for run, rows in mine])
        decoded.update({id(run): rows_records(run, rows, result) for (run, rows), result in zip(mine, results)})
    return decoded
