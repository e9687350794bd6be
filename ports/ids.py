"""ID source port: the randomness behind Run and conversation IDs."""

from __future__ import annotations

from typing import Protocol


class IdSource(Protocol):
    def choose(self, alphabet: str, count: int) -> str:
        """``count`` characters, each drawn independently and uniformly from ``alphabet``
        by a source that is hard to predict (IDs must neither collide nor be guessed)."""
        ...
