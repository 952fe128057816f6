"""Running strategies on tasks: a run cell (``cell``: one strategy on one task's inputs at one seed),
its verification (``verify``), the checks before any decoding (``checks``), the local executor
(``local``), the Ray executor (``ray_executor``), the cost estimate (``plan``) and the throughput
measurement (``throughput``). Plugins import none of these: their API is the modules at ``bench/``.
"""

DEFAULT_BATCH_SIZE = 250   # inputs decoded together: `bench run --batch-size`
DEFAULT_VERIFY = 4         # inputs of a run found complete decoded again: `bench run --verify`
DEFAULT_OUT = "results"    # `bench run --out`
