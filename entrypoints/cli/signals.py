"""SIGINT and SIGTERM cancel a command's async work; its cleanup still runs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def until_signal(work: Callable[[], Awaitable[T]]) -> T | None:
    """Run ``work``; SIGINT or SIGTERM cancels it (its cleanup still runs). None if cancelled."""
    import signal

    import anyio

    result: T | None = None
    failure: Exception | None = None
    async with anyio.create_task_group() as group:

        async def watch(*, task_status: anyio.abc.TaskStatus[None]) -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                task_status.started()  # handlers are in place before any work starts
                async for _ in signals:
                    group.cancel_scope.cancel()
                    return

        await group.start(watch)
        try:
            result = await work()
        except Exception as exc:  # raised below, not wrapped in the task group's group
            failure = exc
        group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result
