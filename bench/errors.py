"""The one exception type the CLI turns into a one-line message."""


class BenchError(Exception):
    """A user-facing error: bad input, unknown name, missing file. Printed as one line."""
