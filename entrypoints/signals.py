"""SIGINT, SIGTERM, SIGHUP and SIGQUIT cancel a command's async work; its cleanup still runs.

One set of stop signals for every command (``STOP_SIGNAL_NAMES``): a closed terminal or a
dropped ssh session (SIGHUP) and Ctrl-\\ (SIGQUIT) end a command exactly as SIGTERM does,
so its process groups and tool sessions are stopped and its Run is settled by the command
itself rather than left to a later dead-owner sweep. Commands with an event loop of their
own (the terminal reviewer, the monitor, the web reviewer) take ``stop_signals()``.

On Windows the event loop cannot watch signals (``add_signal_handler`` does not exist
there): Ctrl-C (SIGINT) and Ctrl-Break (SIGBREAK), the console's two interrupts, are caught
with ``signal.signal`` instead and handed to the loop, with the same effect. And since no
signal reaches another console's process, the command also waits on a named event of its
own (``ports.sessions.STOP_REQUEST_EVENT``: its pid and start time), which ``run cancel``
sets: the same stop, its cleanup included.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import signal

    import anyio.abc

T = TypeVar("T")
# The console interrupts a Windows process receives (SIGBREAK exists only there).
WINDOWS_INTERRUPTS = ("SIGINT", "SIGBREAK")
# Every signal that stops a command the way SIGTERM does (those the platform has).
STOP_SIGNAL_NAMES = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")


def stop_signals() -> tuple[signal.Signals, ...]:
    """The ``STOP_SIGNAL_NAMES`` this platform defines (SIGHUP and SIGQUIT are POSIX only)."""
    import signal

    return tuple(
        signal.Signals[name] for name in STOP_SIGNAL_NAMES if hasattr(signal.Signals, name)
    )


async def until_signal(work: Callable[[], Awaitable[T]]) -> T | None:
    """Run ``work``; a stop signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) cancels it (its cleanup still runs). None if cancelled."""
    import anyio

    result: T | None = None
    failure: Exception | None = None
    # The watcher ends in a cancel scope of its own, so its task returns: cancelled through
    # the group's scope, its task ended with a ``CancelledError`` that the task group's
    # callback kept in a local of its own frame, whose traceback holds that frame: a cycle
    # reaching, through the frames' callers, everything the command holds (a 10,000-Artifact
    # Run: 565,773 objects), left to the interpreter's final full collection (0.7-0.9 s).
    watching = anyio.CancelScope()
    async with anyio.create_task_group() as group:
        await group.start(_watch_within, watching, group.cancel_scope.cancel)
        try:
            result = await work()
        except Exception as exc:  # raised below, not wrapped in the task group's group
            failure = exc
        watching.cancel()
    if failure is not None:
        raise failure
    return result


async def _watch_within(
    scope: anyio.CancelScope,
    on_interrupt: Callable[[], None],
    *,
    task_status: anyio.abc.TaskStatus[None] | None = None,
) -> None:
    """``watch_interrupts`` until ``scope`` is cancelled (then it returns)."""
    with scope:
        await watch_interrupts(on_interrupt, task_status=task_status)


async def watch_interrupts(
    on_interrupt: Callable[[], None], *, task_status: anyio.abc.TaskStatus[None] | None = None
) -> None:
    """Call ``on_interrupt`` once at the first stop signal (on Windows: Ctrl-C or
    Ctrl-Break), then return; ``task_status`` is told once the handlers are in place."""
    watch = _watch_windows_interrupts if sys.platform == "win32" else _watch_signals
    await watch(on_interrupt, task_status)


async def _watch_signals(
    on_interrupt: Callable[[], None], task_status: anyio.abc.TaskStatus[None] | None
) -> None:
    import anyio

    with anyio.open_signal_receiver(*stop_signals()) as signals:
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

    def requested() -> None:
        loop.call_soon_threadsafe(interrupted.set)

    request = _StopRequest(requested)
    try:
        if task_status is not None:
            task_status.started()  # handlers are in place before any work starts
        await interrupted.wait()
        on_interrupt()
    finally:
        request.close()
        for number, old in previous.items():
            signal.signal(number, old)


_WAIT_INFINITE = 0xFFFFFFFF
_WAIT_OBJECT_0 = 0


class _StopRequest:
    """Windows: this process's stop-request event (``STOP_REQUEST_EVENT``), watched by a
    daemon thread that calls ``on_request`` once when ``run cancel`` sets it. Without the
    event (a name already taken, an API refused) the command is only stoppable from its
    console, and ``run cancel`` falls back to terminating it."""

    def __init__(self, on_request: Callable[[], None]) -> None:
        import ctypes
        import os
        import threading
        from ctypes import wintypes

        import psutil

        from artifactize.ports.sessions import STOP_REQUEST_EVENT

        # one calling convention on x64 Windows: CDLL loads kernel32 as WinDLL would
        self._api: Any = ctypes.CDLL("kernel32", use_last_error=True)
        self._api.CreateEventW.restype = wintypes.HANDLE
        self._api.CreateEventW.argtypes = (
            ctypes.c_void_p,
            wintypes.BOOL,
            wintypes.BOOL,
            wintypes.LPCWSTR,
        )
        self._api.WaitForMultipleObjects.restype = wintypes.DWORD
        self._api.WaitForMultipleObjects.argtypes = (
            wintypes.DWORD,
            ctypes.POINTER(wintypes.HANDLE),
            wintypes.BOOL,
            wintypes.DWORD,
        )
        self._api.SetEvent.argtypes = (wintypes.HANDLE,)
        self._api.CloseHandle.argtypes = (wintypes.HANDLE,)
        name = STOP_REQUEST_EVENT.format(
            pid=os.getpid(), create_time=psutil.Process().create_time()
        )
        self._stop = self._api.CreateEventW(None, True, False, name)
        self._quit = self._api.CreateEventW(None, True, False, None)
        self._thread: threading.Thread | None = None
        if self._stop and self._quit:
            handles = (wintypes.HANDLE * 2)(self._stop, self._quit)

            def wait() -> None:
                if self._api.WaitForMultipleObjects(2, handles, False, _WAIT_INFINITE) == (
                    _WAIT_OBJECT_0
                ):
                    on_request()

            self._thread = threading.Thread(target=wait, name="stop-request", daemon=True)
            self._thread.start()

    def close(self) -> None:
        if self._quit:
            self._api.SetEvent(self._quit)
        if self._thread is not None:
            self._thread.join(timeout=5)
        for handle in (self._stop, self._quit):
            if handle:
                self._api.CloseHandle(handle)
