"""The timestamp form stored in state: RFC 3339 UTC with exactly nine fractional digits.

Fixed width (``2026-01-02T03:04:05.123456789Z``) makes text order equal time order, so
SQLite can sort and compare timestamps as plain TEXT.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

_NANOS_PER_SECOND = 1_000_000_000


def utc_timestamp(epoch_ns: int) -> str:
    """``epoch_ns`` (nanoseconds since the Unix epoch, UTC) in the stored form."""
    if epoch_ns < 0:
        raise ValueError(f"Timestamp before 1970 is not supported: {epoch_ns} ns")
    seconds, nanos = divmod(epoch_ns, _NANOS_PER_SECOND)
    whole = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{whole}.{nanos:09d}Z"


def utc_now() -> str:
    """The current wall-clock time in the stored form."""
    return utc_timestamp(time.time_ns())
