"""`--verify`: a few inputs of a run found complete are decoded again and must reproduce its
stored records: discrete fields exactly, floats within a stated tolerance."""
import json

import torch

from bench.errors import BenchError
from bench.provenance import describe_numerics, numerics
from bench.results import to_json
from bench.run.cell import decode_rows, remake_command

VOLATILE = ("batch", "batch_seconds")  # record fields that depend on the batching or the clock
# How far a float of a record decoded again may be from the stored one: another CPU or BLAS sums
# float32 in another order (a log q of -187.068882 against -187.068891 across machines).
# Records round floats to 6 decimals, hence the absolute part; discrete fields compare exactly.
FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-5


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
    to the stored records (the summary's ``derived_fields``), which a decode does not make."""
    if stored is None:
        return "no stored record"
    new = json.loads(to_json(new))  # as it would be stored: tuples become lists
    for key in sorted(set(stored) | set(new)):
        if key in VOLATILE or key in derived:
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


def verify_run(run, found, remake=None):
    """Decode ``run.verify`` inputs of a complete run (``found``: its summary and records) again:
    discrete fields must equal the stored records, floats agree within the stated tolerance.
    Returns a note for the run's line, with the largest float deviation seen; a record that does
    not reproduce is an error naming ``remake`` (default: ``remake_command(run)``). Runs that
    draw random numbers (sampled values, a sampling strategy) are checked too: each input draws
    from its own stream, so the inputs decoded alone draw what they drew in their batch."""
    summary, records = found
    task = run.task
    if run.verify == 0:
        return "not verified (--verify 0)"
    if task.temperature > 0 and records and "log_q" not in records[0]:
        # made before per-input streams (and log_q): its draws depended on its batch-mates
        return "not verified: made with one random generator per batch, before per-input streams; remake it to verify"
    rows = verify_rows(len(run.eval_set), run.verify)
    stored = {r["index"]: r for r in records}
    new, _ = decode_rows(run, torch.tensor(rows))
    worst = [0.0, None]
    for record in new:
        difference = record_difference(stored.get(record["index"]), record, worst,
                                       tuple(summary.get("derived_fields", ())))
        if difference:
            raise BenchError(f"{run.label}: the stored result does not reproduce (input {record['index']}: "
                             f"{difference}){platform_note(summary)}; remake it with: "
                             f"{remake or remake_command(run)}")
    drawn = " (their random draws included)" if draws_randomly(task, run.strategy) else ""
    floats = f"; largest float deviation {worst[0]:.2g} ({worst[1]})" if worst[1] else ""
    return f"{len(rows)} inputs decoded again reproduce it{drawn}{floats}{platform_note(summary)}"
