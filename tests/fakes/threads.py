"""The worker threads the tests give the domain: the real adapter (anyio's worker threads),
so a test's blocking work runs off the event loop exactly as in the CLI."""

from __future__ import annotations

from typing import Any

from artifactize.adapters.worker_threads import AnyioWorkerThreads

THREADS = AnyioWorkerThreads()


class CountingThreads:
    """The real worker threads, naming each piece of work handed to them (one trip each)."""

    def __init__(self) -> None:
        self.work: list[str] = []

    async def run(self, work: Any, *args: Any, **options: Any) -> Any:
        self.work.append(work.__name__)
        return await THREADS.run(work, *args, **options)
