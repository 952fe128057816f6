"""The core subcommands, one module each, registered as plugins register theirs
(``bench.registry.register_command``): each module declares its command's arguments and defaults
beside the function that runs it, and imports its heavy code (torch, matplotlib) only when it runs,
so `bench --help`, `report` and `compare` start without model code. Importing this package
registers them, in the order `bench --help` lists them (``CORE``)."""
import importlib

CORE = ("list_command", "run", "calibrate", "compare", "report", "rescore", "migrate", "train", "throughput", "data")

for _name in CORE:
    importlib.import_module(f"bench.commands.{_name}")
