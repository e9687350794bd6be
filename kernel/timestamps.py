"""The stored timestamp form: RFC 3339 UTC with exactly nine fractional digits.

Fixed width (``2026-01-02T03:04:05.123456789Z``) makes text order equal time order, so the
state and the review store sort and compare timestamps as plain TEXT. Every layer writes
this form and reads other machines' RFC 3339 into it, so both live here, once, as plain
functions of their arguments (no clock is read: the caller passes the moment):

- ``timestamp`` (a timezone-aware ``datetime``, as the Clock port gives) and
  ``timestamp_ns`` (nanoseconds since the epoch) write the stored form;
- ``normalize_rfc3339`` turns any RFC 3339 text (an offset, fewer digits, a lowercase
  ``t``/``z``) into it without losing the nanoseconds that ``datetime`` cannot hold.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

FRACTION_DIGITS = 9
_NANOS_PER_SECOND = 1_000_000_000
_NANOS_PER_MICROSECOND = 1_000
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))",
    re.ASCII,  # \d is 0-9 only
)
_MAX_OFFSET = timedelta(hours=23, minutes=59)


def timestamp(moment: datetime) -> str:
    """``moment`` (timezone-aware) in the stored form."""
    utc = moment.astimezone(UTC)
    return _written(utc, utc.microsecond * _NANOS_PER_MICROSECOND)


def timestamp_ns(epoch_ns: int) -> str:
    """``epoch_ns`` (nanoseconds since the Unix epoch, UTC) in the stored form."""
    if epoch_ns < 0:
        raise ValueError(f"Timestamp before 1970 is not supported: {epoch_ns} ns")
    seconds, nanos = divmod(epoch_ns, _NANOS_PER_SECOND)
    return _written(datetime.fromtimestamp(seconds, UTC), nanos)


def normalize_rfc3339(text: str, *, truncate: bool = False) -> str | None:
    """``text`` in the stored form, or None when it is not RFC 3339.

    Digits past the ninth are refused, or with ``truncate`` dropped: a client refuses a
    record whose time it cannot hold exactly, the store server only orders by it
    (docs/review-store.md). A leap second (``:60``), an offset past 23:59 and a date
    outside years 1-9999 after conversion are refused.
    """
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = match.group(7) or ""
    if len(fraction) > FRACTION_DIGITS and not truncate:
        return None
    nanos = int(fraction[:FRACTION_DIGITS].ljust(FRACTION_DIGITS, "0"))
    offset = timedelta(0)
    if match.group(8) is None:
        offset_minutes = int(match.group(11))
        offset = timedelta(hours=int(match.group(10)), minutes=offset_minutes)
        if offset_minutes > 59 or offset > _MAX_OFFSET:
            return None
        if match.group(9) == "-":
            offset = -offset
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=timezone(offset))
        utc = moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return _written(utc, nanos)


def _written(utc: datetime, nanos: int) -> str:
    """The one writer: whole seconds of a UTC ``datetime`` and nine digits of nanoseconds."""
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T"
        f"{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}.{nanos:09d}Z"
    )
