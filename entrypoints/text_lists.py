"""Lists of names in one line of text, cut where a screen or a terminal line would drown:
a 10,000-Artifact workspace has thousands of evals waiting, unmet or using one backend."""

from __future__ import annotations

from collections.abc import Sequence

NAMED_AT_MOST = 10  # names a line lists before "(+N more)"


def named(items: Sequence[str], shown: int = NAMED_AT_MOST) -> str:
    """``a, b, c`` — or the first ``shown`` and ``(+N more)``."""
    more = len(items) - shown
    return ", ".join(items[:shown]) + (f" (+{more} more)" if more > 0 else "")
