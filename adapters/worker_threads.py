"""``WorkerThreads`` on anyio's worker threads (the running event loop's own pool).

Kept apart from ``adapters/threads.py`` (the cleanup executor's pool) so a command that
only builds the port, such as ``status``, imports neither ``concurrent.futures`` nor
``logging`` for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, TypeVarTuple

import anyio
import anyio.to_thread

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class AnyioWorkerThreads:
    async def run(
        self,
        work: Callable[[*Ts], T],
        *args: *Ts,
        limiter: anyio.CapacityLimiter | None = None,
        abandon_on_cancel: bool = False,
    ) -> T:
        return await anyio.to_thread.run_sync(
            work, *args, limiter=limiter, abandon_on_cancel=abandon_on_cancel
        )
