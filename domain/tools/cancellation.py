"""Cooperative cancellation for in-process tool work (built-ins run in a worker thread)."""

from __future__ import annotations

import threading

from domain.tools.results import ToolError

CANCELLED_MESSAGE = "Agent tool call was cancelled."


class Cancellation:
    """Set once by the caller; checked by long-running built-ins between steps."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise ToolError(CANCELLED_MESSAGE)


NEVER_CANCELLED = Cancellation()
