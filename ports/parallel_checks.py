"""Parallel checks port: independent yes-or-no checks run at the same time.

A kept answer at 10,000 Artifacts is confirmed by asking again every question its
computation asked of the files: about 140,000 no-follow stats, most of a replayed
``verify``'s time. ``git status`` spreads the same kind of work over threads
(``core.preloadIndex``); in CPython the stats' Python around each system call holds the
interpreter lock, so threads only take turns (measured: slower than one). The port lets
the composition root back the checks with processes where the platform can start them
cheaply (``adapters/posix/parallel_checks.py``: ``fork``), and with one check after the
other elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Protocol


class ParallelChecks(Protocol):
    def workers(self) -> int:
        """How many checks can run at the same time now (1: one after the other)."""
        ...

    def started(
        self, checks: Sequence[Callable[[], bool]]
    ) -> AbstractContextManager[Callable[[], bool]]:
        """The checks, started now; the block is given a function that waits for them and
        tells whether every one answered True (the block may do other work first). Checks
        may run at the same time, each in a process of its own that shares nothing with the
        caller afterwards: a check must only look (no writes, no output) and must answer by
        its return value. A check that raises, or cannot answer, counts as False. Nothing
        started is left running when the block ends, however it ends."""
        ...
