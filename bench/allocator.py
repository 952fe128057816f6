"""glibc's allocator told to keep freed memory for the next pass instead of giving it back.

A decode frees and allocates the same tensors every pass (the model's output, the strategy's
arrays). By default glibc returns large freed blocks to the kernel (``munmap``, or trimming the
top of its heap) and asks for fresh pages at the next allocation; a fresh page is zeroed by the
kernel on first touch, about 35 microseconds per 4 KiB page on the project's VM (8.6 ms per MB).
With both thresholds raised, blocks up to 32 MiB are reused from the heap instead (larger ones,
such as a big model's activations, still map fresh pages). The cost: the process keeps its peak
heap while it runs. Numbers do not change: tensors keep torch's 64-byte alignment either way.
Measured in docs/lab.md (2026-12-01, the decode loop's overhead).
"""
import ctypes
import ctypes.util

M_TRIM_LIMIT = -1    # glibc's M_TRIM_THRESHOLD parameter code
M_MMAP_LIMIT = -3    # glibc's M_MMAP_THRESHOLD parameter code
MMAP_LIMIT = 32 * 2 ** 20   # glibc's largest allowed on 64-bit systems
TRIM_LIMIT = 2 ** 30        # heap top kept unless a GiB of it is free


def keep_freed_memory():
    """Raise glibc's mmap and trim thresholds for this process; True where set, False where the C
    library has no ``mallopt`` (macOS, musl, Windows), which keep their own allocator's behaviour."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    # both together: setting either one alone stops glibc's adaptive mmap threshold and leaves the
    # other at its 128 KiB default, which made forward passes 1.3-2.3x slower when measured
    return bool(mallopt(M_MMAP_LIMIT, MMAP_LIMIT)) and bool(mallopt(M_TRIM_LIMIT, TRIM_LIMIT))
