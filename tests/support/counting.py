"""A function that records each call before making it: tests count how often a step ran
(a Run decoded, an owner read), never how long it took."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def counted(real: Callable[[Any], T], name: str, calls: list[str]) -> Callable[[Any], T]:
    """``real``, appending ``name`` to ``calls`` on each call."""

    def counting(argument: Any) -> T:
        calls.append(name)
        return real(argument)

    return counting
