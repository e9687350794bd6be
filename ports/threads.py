"""Worker threads port: where the domain runs blocking work (reading a repository again,
fingerprints, directory setup and removal, reaping a process group) without blocking its
event loop.

The domain starts no thread itself (import-linter forbids ``threading`` and
``concurrent`` there); it hands the work to this port, which the composition root backs
with anyio's worker threads and a test may back with anything that runs the work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar, TypeVarTuple

if TYPE_CHECKING:
    import anyio

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class WorkerThreads(Protocol):
    async def run(
        self,
        work: Callable[[*Ts], T],
        *args: *Ts,
        limiter: anyio.CapacityLimiter | None = None,
        abandon_on_cancel: bool = False,
    ) -> T:
        """``work(*args)`` on a worker thread, awaited without blocking the caller's event
        loop; returns what it returns, raises what it raises. A cancelled caller still waits
        for the work to finish (it cannot be interrupted), then the cancellation goes on.
        ``limiter`` bounds how many such calls run at once (the default: the runtime's).
        ``abandon_on_cancel``: a cancelled caller does not wait; the work runs on, and what
        it returns or raises is dropped (for work that checks a cancellation of its own)."""
        ...
