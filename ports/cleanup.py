"""Cleanup executor port: where cleanup work runs when it must not depend on the caller.

Tool sessions keep harness processes alive across the calls of a review. Their cleanup
(``stop``, killing and reaping the groups, removing the session directory) has to finish
even when the event loop that started them is ending or already gone, and a session set
that nobody closed is cleaned up once it is dropped. This port owns the threads and the
event loops that takes, so the domain itself starts none.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

T = TypeVar("T")


class DropGuard(Protocol):
    """A callback registered with ``CleanupExecutor.on_drop``."""

    def __call__(self) -> object:
        """Run the callback now, unless it already ran or was detached (at most once)."""
        ...

    def detach(self) -> object:
        """The owner was cleaned up in order: never run the callback (what it returns is
        of no interest)."""
        ...


class CleanupExecutor(Protocol):
    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` in an event loop of its own on the executor's thread and wait for it
        without blocking the caller's loop; returns what ``work`` returns, raises what it
        raises. The caller shields the wait when cancellation must not interrupt it."""
        ...

    def submit(self, work: Callable[[], Awaitable[object]]) -> None:
        """Start ``work`` like ``run`` without waiting for it; what it raises is dropped.

        Once the executor takes no more work (the interpreter is exiting), ``work`` runs
        right here in an event loop of its own instead, and what it raises propagates."""
        ...

    def start_watcher(self, work: Callable[[], Awaitable[None]], name: str) -> None:
        """Run ``work`` in an event loop of its own on a new daemon thread called ``name``,
        for as long as it takes; nobody waits for it."""
        ...

    def on_drop(self, owner: object, callback: Callable[[], None]) -> DropGuard:
        """Call ``callback`` once ``owner`` is garbage-collected, or at interpreter exit if
        ``owner`` is still alive then. ``callback`` must not refer to ``owner``."""
        ...
