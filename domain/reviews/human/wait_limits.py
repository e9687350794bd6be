"""``--wait`` and ``--timeout-ms``: the limits of waiting for a person, and their check.

Apart from ``asking`` (which waits) so that a command parsing ``--timeout-ms`` (``verify``,
``run show``) and the Run's options read them without importing the Run's documents, the
workspace and discovery (start-up, issue 25 item 6).
"""

from __future__ import annotations

WAIT_TIMEOUT_DEFAULT_MS = 600_000
WAIT_TIMEOUT_MIN_MS = 1
WAIT_TIMEOUT_MAX_MS = 2_147_483_647
WAIT_TIMEOUT_RANGE = (
    f"--timeout-ms must be between {WAIT_TIMEOUT_MIN_MS} and {WAIT_TIMEOUT_MAX_MS}, got {{value}}."
)
WAIT_NEEDS_WAIT = "--timeout-ms requires --wait."


def check_wait_timeout(value: int) -> int:
    """``value`` when it is a valid ``--timeout-ms``; raises ValueError naming the range."""
    if isinstance(value, bool) or not WAIT_TIMEOUT_MIN_MS <= value <= WAIT_TIMEOUT_MAX_MS:
        raise ValueError(WAIT_TIMEOUT_RANGE.format(value=value))
    return value
