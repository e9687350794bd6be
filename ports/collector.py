"""Garbage collector port: pause the cyclic collector around allocation-heavy work."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol


class CollectorPause(Protocol):
    def __call__(self) -> AbstractContextManager[None]:
        """A context in which the cyclic garbage collector does not run; a collector that
        was already disabled stays disabled afterwards."""
        ...


class CollectorPauseUntilDecided(Protocol):
    def __call__(self) -> AbstractContextManager[Callable[[], None]]:
        """A ``CollectorPause`` whose block is given a function to call once it knows the
        command ends with what it made: what is alive is then kept out of the collector's
        passes (frozen) before it runs again; otherwise nothing is frozen."""
        ...
