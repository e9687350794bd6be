"""RFC 3339 timestamps from other machines, normalized to the saved form.

Saved timestamps are UTC with exactly nine fractional digits (``domain/reviews/timestamps``),
so text order is time order. A remote store may send any RFC 3339 form (an offset, fewer
digits, a lowercase ``t``/``z``); it is converted here without losing the nanoseconds that
``datetime`` cannot hold.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

FRACTION_DIGITS_MAX = 9
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})"
    rf"(?:\.(\d{{1,{FRACTION_DIGITS_MAX}}}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)
_MAX_OFFSET_MINUTES = 23 * 60 + 59


def normalize_rfc3339(text: str) -> str | None:
    """``text`` as ``YYYY-MM-DDTHH:MM:SS.fffffffffZ`` in UTC, or None when it is not RFC 3339.

    Leap seconds (``:60``) and dates outside years 1-9999 after conversion are refused.
    """
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = (match.group(7) or "").ljust(FRACTION_DIGITS_MAX, "0")
    offset = timedelta(0)
    if match.group(8) is None:
        offset = timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        if int(match.group(11)) > 59 or offset > timedelta(minutes=_MAX_OFFSET_MINUTES):
            return None
        if match.group(9) == "-":
            offset = -offset
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=timezone(offset))
        utc = moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T"
        f"{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}.{fraction}Z"
    )
