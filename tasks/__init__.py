"""Tasks; importing this package registers every one of them."""
from tasks.sudoku import task  # noqa: F401
