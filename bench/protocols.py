"""Task protocols: what a strategy family needs of a task beyond ``bench.core.Task``, declared by
the family (its package under strategies/) and implemented by a task that defines the
members. This module imports no model code: the command line reads protocols without torch."""
from dataclasses import dataclass

from bench.errors import BenchError


@dataclass(frozen=True)
class TaskProtocol:
    """What a strategy family needs of a task beyond ``Task``: the members a task defines to
    support it (``required``) and those it may define (``optional``, with their meaning). A
    strategy names the protocols it needs in ``requires``; `bench run` refuses a strategy on a task
    without them in one line, and `bench list` says which task supports which."""
    name: str            # what it supports, e.g. 'order policy'
    declared_in: str     # the module that declares it, for the error line
    required: tuple
    optional: tuple = ()

    def missing(self, task):
        """The required members ``task`` does not define."""
        return [member for member in self.required if not hasattr(task, member)]

    def check(self, task, user):
        """A one-line error when ``task`` lacks a required member (``user``: who needs them)."""
        missing = self.missing(task)
        if missing:
            raise BenchError(f"{user} needs task {task.name} to support the {self.name} ({self.declared_in}); "
                             f"it lacks {', '.join(missing)}")
