"""Reading a provider's token counters into the port's usage keys, inferring nothing.

A counter is kept only when the provider reported a non-negative integer for it (0 included);
``null``, strings, floats and booleans count as not reported, so the stored usage says exactly
what the provider said (reviews-and-store.md §6.4).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

UsagePath = tuple[tuple[str, ...], str]
"""(the path of keys inside the provider's ``usage`` object, the port's usage key)."""


def reported_counter(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def collect_usage(raw: Any, paths: Sequence[UsagePath]) -> dict[str, int]:
    """The counters of ``raw`` found at ``paths``, under the port's keys."""
    usage: dict[str, int] = {}
    for path, key in paths:
        node: Any = raw
        for step in path:
            node = node.get(step) if isinstance(node, dict) else None
        counter = reported_counter(node)
        if counter is not None:
            usage[key] = counter
    return usage
