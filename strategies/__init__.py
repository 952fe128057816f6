"""Unmasking strategies; importing this package registers every one of them."""
from strategies import eb, learned, margin, mi, mi_oracle, sequential, threshold, topk  # noqa: F401
