"""A toy task and a toy strategy, registered exactly as a real task folder and strategy file are
(docs/extending.md walks through them). Only tests/test_extending.py loads them."""
