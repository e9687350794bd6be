"""Clock port: wall time for records, monotonic time for deadlines, and waiting."""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards, for deadlines."""
        ...


class Sleeper(Protocol):
    def __call__(self, seconds: float, /) -> Awaitable[None]:
        """Wait ``seconds`` (``anyio.sleep``; a fake in tests returns at once)."""
        ...
