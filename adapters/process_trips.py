"""``ProcessRunner.run_between`` in three steps, for runners that watch a run from the event
loop only (Windows, or POSIX without a pidfd and epoll): ``before`` on a worker thread, the
run on the loop, ``after`` on a worker thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread

from artifactize.ports.process import ProcessOutcome, ProcessRunner, ProcessSpec

T = TypeVar("T")


async def run_between_in_trips(
    runner: ProcessRunner, before: Callable[[], ProcessSpec], after: Callable[[ProcessOutcome], T]
) -> T:
    spec = await anyio.to_thread.run_sync(before)
    outcome = await runner.run(spec)
    return await anyio.to_thread.run_sync(after, outcome)
