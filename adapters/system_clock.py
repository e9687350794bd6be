"""System clock adapter: the real wall clock and the real monotonic clock."""

from __future__ import annotations

import time
from datetime import UTC, datetime


class SystemClock:
    """Wall time is for records (always UTC, never naive); monotonic time is for deadlines."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()
