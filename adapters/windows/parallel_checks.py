"""``ParallelChecks`` on Windows: one check after the other.

Windows has no ``fork``; a spawned worker would start a new interpreter and be sent its part
of the log, which costs more than the stats it would take over at the sizes measured
(bench/README.md, the twenty-fourth pass)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

__all__ = ["InTurnChecks"]


class InTurnChecks:
    """``ParallelChecks``: every check in the caller, in order, stopping at the first False,
    when the answer is asked for."""

    def workers(self) -> int:
        return 1

    @contextmanager
    def started(self, checks: Sequence[Callable[[], bool]]) -> Iterator[Callable[[], bool]]:
        """Nothing runs before the block asks: then every check, in order."""
        yield lambda: all(check() for check in checks)
