"""bench.allocator: with freed memory kept, a large block comes from the heap (not a fresh mapping)
and freeing it does not shrink the heap; without it glibc maps and unmaps it. Run in fresh
processes: the setting is process-wide."""
import ctypes
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import ctypes, sys
sys.path.insert(0, sys.argv[2])
libc = ctypes.CDLL(None)
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                "fsmblks", "uordblks", "fordblks", "keepcost")]
libc.mallinfo2.restype = Info
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
if sys.argv[1] == "kept":
    from bench.allocator import keep_freed_memory
    assert keep_freed_memory()
before = libc.mallinfo2()
block = libc.malloc(8 << 20)
during = libc.mallinfo2()
libc.free(block)
after = libc.mallinfo2()
print(during.hblks - before.hblks, during.arena - after.arena)
"""


def probe(mode):
    out = subprocess.run([sys.executable, "-c", PROBE, mode, str(ROOT)], capture_output=True, text=True, check=True)
    mapped, shrunk = map(int, out.stdout.split())
    return mapped, shrunk


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallinfo2"), reason="glibc >= 2.33 only (mallinfo2)")
def test_a_freed_8_mib_block_stays_in_the_heap_for_reuse():
    assert probe("default") == (1, 0)      # glibc's default: mapped on its own, unmapped when freed
    mapped, shrunk = probe("kept")
    assert mapped == 0 and shrunk == 0     # from the heap, and the heap keeps it after the free
