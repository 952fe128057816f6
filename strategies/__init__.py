"""Unmasking strategies; importing this package registers every one of them."""
from strategies import eb, margin, sequential, threshold, topk  # noqa: F401
