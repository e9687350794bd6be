"""Garbage collector port: pause the cyclic collector around allocation-heavy work."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol


class CollectorPause(Protocol):
    def __call__(self) -> AbstractContextManager[None]:
        """A context in which the cyclic garbage collector does not run; a collector that
        was already disabled stays disabled afterwards."""
        ...
