"""The wall clock in the stored timestamp form (``kernel.timestamps``), for adapters and the
store server that stamp what they write themselves."""

from __future__ import annotations

import time

from artifactize.kernel.timestamps import timestamp_ns

utc_timestamp = timestamp_ns  # nanoseconds since the epoch in the stored form


def utc_now() -> str:
    """The current wall-clock time in the stored form."""
    return timestamp_ns(time.time_ns())
