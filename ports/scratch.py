"""Scratch space port: private per-call directories outside the reviewed workspace."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class ScratchSpace(Protocol):
    def create_private_directory(self, parent: str | None, prefix: str) -> str:
        """Create a new 0700 directory below ``parent`` (or the system's temporary folder)
        and return its canonical absolute path."""
        ...

    def remove_tree(self, path: str) -> None:
        """Remove a directory this port created, with everything in it, without following
        symlinks out of it. Raises ``OSError`` when it could not be removed."""
        ...

    def emptied(self, path: str, children: Sequence[str]) -> bool:
        """True when ``path`` is still a directory this port created (the user's alone,
        0700, not a link) holding exactly the directories ``children`` (their paths, each
        directly below ``path``), each the same and empty: as it was created. False
        otherwise, an error included."""
        ...
