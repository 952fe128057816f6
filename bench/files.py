"""The one reader of every file the suite reads: data, checkpoints, helpers, caches, results.

A file is checked before a byte of it is read: it must exist, be a regular file (not a
directory, a FIFO, a device such as /dev/zero, a socket) and be at most ``limit`` bytes, where
each kind of file states its own limit as a named constant beside its reader (the general ones
are below). Every refusal is one ``BenchError`` line naming the file and what it was meant to
be (``what``). A FIFO never blocks: files are opened with O_NONBLOCK and checked on the open
descriptor (``fstat``), so what is checked is what is read. A file that grows past its limit
while it is read is refused too (procfs files say size 0 and may hold anything).

- ``read_bytes(path, what, limit)`` and ``read_text(path, what, limit)`` (UTF-8, a leading
  byte-order mark allowed; binary or non-UTF-8 data is refused);
- ``sha256_of(path, what, limit)``: the file's SHA-256, read a chunk at a time;
- ``checked_path(path, what, limit)`` for loaders that open the file themselves
  (``torch.load``, ``np.load``): the path, once checked.

An absent file raises ``MissingFile``, a ``BenchError`` that is also a ``FileNotFoundError``,
so a reader for which absence is normal (a partial result) catches it as such.
"""
import contextlib
import hashlib
import os
import stat
from pathlib import Path

from bench.errors import BenchError

MiB, GiB = 2 ** 20, 2 ** 30
# A model checkpoint: the shipped ones are 0.5-7.4 MB; published ESM-C 600M is 2.4 GB in
# float32. 8 GiB holds a 2-billion-parameter float32 model, as much as torch.load should be
# asked to put in memory on the machines this runs on.
CHECKPOINT_LIMIT = 8 * GiB
# A trained helper (MI estimator, order policy): the shipped ones are 4-183 KB; one for a
# 600M-parameter model is a few MB.
HELPER_LIMIT = 256 * MiB
# Arrays the cache keeps (bench.checkpoints.cached_arrays): the largest, the judge's normalised
# weights, is 73 MB.
CACHE_LIMIT = 1 * GiB

READ_CHUNK = 1 * MiB   # reads past the size stat gave (a file growing, a procfs file of size 0)
KINDS = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a named pipe (FIFO)", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


class MissingFile(BenchError, FileNotFoundError):
    """The file does not exist: one line like every BenchError, and a FileNotFoundError."""


def size_text(n):
    """'256 MiB', '2.4 GiB', '100 bytes'."""
    return f"{n / GiB:.4g} GiB" if n >= GiB else f"{n / MiB:.4g} MiB" if n >= MiB else f"{n:,} bytes"


def refuse_stat(path, what, info, limit):
    """The one-line error for a file whose stat ``info`` is not a regular file of at most
    ``limit`` bytes, or None."""
    if not stat.S_ISREG(info.st_mode):
        kind = KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
        return BenchError(f"{what} {path} is {kind}, not a regular file")
    if info.st_size > limit:
        return too_big(path, what, info.st_size, limit)
    return None


def too_big(path, what, size, limit):
    """The one-line error of a file of ``size`` bytes (None: it grew past ``limit`` as it was read)."""
    amount = f"more than {limit:,} bytes" if size is None else f"{size:,} bytes"
    return BenchError(f"{what} {path} is {amount}; the limit is {size_text(limit)}")


def os_error(path, what, err):
    """The one-line error of an OSError met opening or reading ``path``."""
    if isinstance(err, FileNotFoundError):
        return MissingFile(f"{what} not found: {path}")
    if isinstance(err, NotADirectoryError):
        return MissingFile(f"{what} not found: {path} (a part of the path is a file, not a folder)")
    return BenchError(f"{what} {path} cannot be read ({err.strerror or err})")


def checked_path(path, what, limit):
    """``path`` as a Path, after checking that it is a regular file of at most ``limit`` bytes
    (symbolic links followed); one-line BenchErrors otherwise, MissingFile when absent."""
    path = Path(path)
    try:
        info = os.stat(path)
    except OSError as err:
        raise os_error(path, what, err) from None
    except ValueError:   # an embedded NUL byte
        raise BenchError(f"{what} {path!r} is not a usable path") from None
    problem = refuse_stat(path, what, info, limit)
    if problem:
        raise problem
    return path


@contextlib.contextmanager
def opened(path, what, limit):
    """(unbuffered binary handle, its fstat) of regular file ``path`` of at most ``limit`` bytes.
    Opened with O_NONBLOCK (a FIFO's open would wait for a writer) and checked on the open
    descriptor: the path may name another file since ``checked_path`` looked."""
    path = checked_path(path, what, limit)  # a missing file and a bad path are named first
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise os_error(path, what, err) from None
    with open(fd, "rb", buffering=0) as handle:
        info = os.fstat(fd)
        problem = refuse_stat(path, what, info, limit)
        if problem:
            raise problem
        try:
            yield handle, info
        except OSError as err:
            raise os_error(path, what, err) from None


def read_bytes(path, what, limit):
    """The bytes of regular file ``path``, at most ``limit`` of them; a FIFO, a device or a
    directory is refused before anything is read, and without blocking."""
    with opened(path, what, limit) as (handle, info):
        data = read_at_most(handle, info.st_size, limit)
    if data is None:
        raise too_big(path, what, None, limit)
    return data


def sha256_of(path, what, limit):
    """The SHA-256 (hex) of regular file ``path`` of at most ``limit`` bytes, read a chunk at a
    time (a checkpoint of gigabytes is hashed without holding it)."""
    digest, total = hashlib.sha256(), 0
    with opened(path, what, limit) as (handle, _):
        while chunk := handle.read(READ_CHUNK):
            digest.update(chunk)
            total += len(chunk)
            if total > limit:
                raise too_big(path, what, None, limit)
    return digest.hexdigest()


def read_at_most(handle, expected, limit):
    """The bytes of ``handle``, or None past ``limit`` of them. The first read asks for the size
    stat gave (plus one, to see the end); more only when the file holds more than it said."""
    chunks, total, want = [], 0, expected + 1
    while total <= limit:
        chunk = handle.read(min(want, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total, want = total + len(chunk), READ_CHUNK
    return None


def read_text(path, what, limit):
    """The text of ``path`` (UTF-8, a leading byte-order mark allowed), read by ``read_bytes``;
    one-line errors for binary (NUL bytes) or non-UTF-8 data."""
    data = read_bytes(path, what, limit)
    if b"\0" in data:
        raise BenchError(f"{what} {path} is binary (it holds NUL bytes), not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise BenchError(f"{what} {path} is not UTF-8 text "
                         f"(byte {data[err.start]:#04x} at offset {err.start})") from None
