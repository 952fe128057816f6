"""unmask-bench: which masked positions should a masked diffusion model reveal at each pass?"""
import os

# Before torch is imported anywhere: OpenMP threads that wait for work sleep instead of spinning.
# With spinning (libgomp's default) a forward call on a loaded 2-core machine took 10-90x longer
# (AntiBERTy and the Sudoku model on 2 rows at load 6-7; docs/timing.md), the threads of one
# process burning the cores the other threads of that process need. A user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
