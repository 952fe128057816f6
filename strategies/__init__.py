"""Unmasking strategies. Every module here registers what it defines when imported
(``bench.registry.load_plugins`` imports them all); families with trained helpers are packages."""
