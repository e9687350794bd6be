"""Review leases: one machine reviews a reuse key while the others wait for its verdict.

A ``verify`` whose store token has the ``publish`` scope asks the store for the lease of a
key before it executes an Agent or runtime review of it. The store grants it to the first
asker; the holder renews it every ``lease_seconds / LEASE_RENEWALS_PER_TERM`` seconds while
it works and releases it once its verdict is published. A holder that dies stops renewing,
so its lease lapses within one term (at most LEASE_SECONDS_MAX) and the next asker takes
over. Lease requests are checked here (pure), for the server and its tests alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from artifactize.domain.reviews.remote.server_admission import Refusal, StoreRequestError

# How long a lease lives without renewal: "a dead holder's lease lapses within 60 s".
LEASE_SECONDS_DEFAULT = 60
LEASE_SECONDS_MIN = 1
LEASE_SECONDS_MAX = 60
# The holder renews this many times per term, so one lost renewal does not lose the lease.
LEASE_RENEWALS_PER_TERM = 3
HOLDER_MAX_CHARS = 128
LEASE_FIELDS = frozenset({"holder"})

_HOLDER = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.:-]{{0,{HOLDER_MAX_CHARS - 1}}}")


def check_lease_seconds(value: int) -> int:
    """``value`` when it is a whole number of seconds within the lease limits."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"lease seconds must be a whole number, got {value!r}")
    if not LEASE_SECONDS_MIN <= value <= LEASE_SECONDS_MAX:
        raise ValueError(
            f"lease seconds must be {LEASE_SECONDS_MIN}-{LEASE_SECONDS_MAX} "
            f"(a dead holder's lease must lapse within {LEASE_SECONDS_MAX} s), got {value}"
        )
    return value


def renew_interval(lease_seconds: int) -> float:
    """Seconds between a holder's renewals of a lease of ``lease_seconds``."""
    return lease_seconds / LEASE_RENEWALS_PER_TERM


def is_holder(value: object) -> bool:
    return isinstance(value, str) and _HOLDER.fullmatch(value) is not None


def parse_lease_request(body: Any) -> str:
    """The holder id of a lease request body ``{"holder": "..."}``."""
    if not isinstance(body, Mapping):
        raise StoreRequestError(Refusal.INVALID, 'The body must be {"holder": "..."}.')
    unknown = sorted(set(body) - LEASE_FIELDS)
    if unknown:
        raise StoreRequestError(
            Refusal.INVALID, f"Unknown field {unknown[0]!r} in a lease request."
        )
    holder = body.get("holder")
    if not is_holder(holder):
        raise StoreRequestError(
            Refusal.INVALID,
            f"holder must be 1-{HOLDER_MAX_CHARS} characters of A-Z a-z 0-9 _ . : - "
            "starting with a letter or digit.",
        )
    assert isinstance(holder, str)
    return holder
