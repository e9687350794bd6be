"""``CleanupExecutor`` on threads: a small pool of its own, one event loop per piece of work.

Work runs in ``anyio.run`` on a pool thread, so it neither blocks nor depends on the
caller's event loop: a session started from one loop may be cleaned up after that loop
ended. Once the interpreter is shutting down the pool takes no more work (the standard
library's thread pools all refuse it then), and ``submit`` runs the work inline instead:
the finalizers of dropped session sets run at exit, after worker threads were joined.
"""

from __future__ import annotations

import concurrent.futures
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from artifactize.ports.cleanup import DropGuard

T = TypeVar("T")

CLEANUP_WORKERS = 2  # sessions of concurrent reviews are cleaned up side by side
THREAD_NAME_PREFIX = "artifactize-session-cleanup"


class ThreadCleanupExecutor:
    """The pool starts its threads on first use; one executor serves the whole process."""

    def __init__(self, max_workers: int = CLEANUP_WORKERS) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix=THREAD_NAME_PREFIX
        )

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        future = self._pool.submit(anyio.run, work)
        return await anyio.to_thread.run_sync(future.result)

    def submit(self, work: Callable[[], Awaitable[object]]) -> None:
        try:
            self._pool.submit(anyio.run, work)
        except RuntimeError:  # the interpreter is shutting down (or ``shutdown`` was called)
            anyio.run(work)

    def start_watcher(self, work: Callable[[], Awaitable[None]], name: str) -> None:
        threading.Thread(target=anyio.run, args=(work,), daemon=True, name=name).start()

    def on_drop(self, owner: object, callback: Callable[[], None]) -> DropGuard:
        return weakref.finalize(owner, callback)

    def shutdown(self) -> None:
        """Wait for the work taken; later ``submit`` calls run inline, ``run`` refuses."""
        self._pool.shutdown(wait=True)
