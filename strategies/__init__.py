"""Unmasking strategies; importing this package registers every one of them."""
from strategies import sequential, topk  # noqa: F401
