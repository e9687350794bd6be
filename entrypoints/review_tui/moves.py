"""The keys that move a selection up and down a list, shared by the reviewer's and the
monitor's screens, and the one-row step they make."""

from __future__ import annotations

DOWN_KEYS = ("j", "down")
UP_KEYS = ("k", "up")


def stepped(position: int, count: int, key: str) -> int:
    """``position`` moved one row by ``key`` (one of ``DOWN_KEYS`` or ``UP_KEYS``), kept
    within a list of ``count`` rows."""
    step = 1 if key in DOWN_KEYS else -1
    return min(count - 1, max(0, position + step))
