"""Tasks; importing this package registers every one of them."""
from tasks.protein import task as protein_task  # noqa: F401
from tasks.sudoku import task as sudoku_task  # noqa: F401
