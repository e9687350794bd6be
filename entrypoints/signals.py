"""SIGINT and SIGTERM cancel a command's async work; its cleanup still runs.

On Windows the event loop cannot watch signals (``add_signal_handler`` does not exist
there): Ctrl-C (SIGINT) and Ctrl-Break (SIGBREAK), the console's two interrupts, are caught
with ``signal.signal`` instead and handed to the loop, with the same effect.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import anyio.abc

T = TypeVar("T")
# The console interrupts a Windows process receives (SIGBREAK exists only there).
WINDOWS_INTERRUPTS = ("SIGINT", "SIGBREAK")


async def until_signal(work: Callable[[], Awaitable[T]]) -> T | None:
    """Run ``work``; SIGINT or SIGTERM cancels it (its cleanup still runs). None if cancelled."""
    import anyio

    result: T | None = None
    failure: Exception | None = None
    async with anyio.create_task_group() as group:
        await group.start(watch_interrupts, group.cancel_scope.cancel)
        try:
            result = await work()
        except Exception as exc:  # raised below, not wrapped in the task group's group
            failure = exc
        group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result


async def watch_interrupts(
    on_interrupt: Callable[[], None], *, task_status: anyio.abc.TaskStatus[None] | None = None
) -> None:
    """Call ``on_interrupt`` once at the first SIGINT or SIGTERM (on Windows: Ctrl-C or
    Ctrl-Break), then return; ``task_status`` is told once the handlers are in place."""
    watch = _watch_windows_interrupts if sys.platform == "win32" else _watch_signals
    await watch(on_interrupt, task_status)


async def _watch_signals(
    on_interrupt: Callable[[], None], task_status: anyio.abc.TaskStatus[None] | None
) -> None:
    import signal

    import anyio

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        if task_status is not None:
            task_status.started()  # handlers are in place before any work starts
        async for _ in signals:
            on_interrupt()
            return


async def _watch_windows_interrupts(
    on_interrupt: Callable[[], None], task_status: anyio.abc.TaskStatus[None] | None
) -> None:
    import asyncio
    import signal

    import anyio

    loop = asyncio.get_running_loop()
    interrupted = anyio.Event()

    def handler(number: int, frame: Any) -> None:
        loop.call_soon_threadsafe(interrupted.set)

    numbers = [getattr(signal, name) for name in WINDOWS_INTERRUPTS if hasattr(signal, name)]
    previous = {number: signal.signal(number, handler) for number in numbers}
    try:
        if task_status is not None:
            task_status.started()  # handlers are in place before any work starts
        await interrupted.wait()
        on_interrupt()
    finally:
        for number, old in previous.items():
            signal.signal(number, old)
