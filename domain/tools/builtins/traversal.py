"""Depth-first traversal of logical directories for ``glob`` and ``grep``.

Entries come from the same listing as ``list``: children are walked as folders and mounts
at an Artifact's root are followed, but a location already on the ancestor chain is never
re-entered, so mount cycles do not repeat. At most 10,000 entries are visited; past that
the walk stops and the search reports ``truncated``. Symlinks and special files are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from artifactize.domain.tools.builtins.listing import join_logical, list_location
from artifactize.domain.tools.context import BuiltinContext
from artifactize.domain.tools.locations import Location, child_location

TRAVERSAL_ENTRIES_MAX = 10_000


@dataclass(frozen=True)
class FoundFile:
    relative: str  # relative to the searched path
    location: Location


@dataclass
class Traversal:
    context: BuiltinContext
    visited: int = 0
    truncated: bool = False
    _chain: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def files(self, start: Location) -> Iterator[FoundFile]:
        yield from self._walk(start, "")

    def _walk(self, directory: Location, relative: str) -> Iterator[FoundFile]:
        key = (directory.artifact.name, directory.ownership.remaining)
        if key in self._chain:
            return
        self._chain.append(key)
        try:
            for entry in list_location(self.context, directory):
                if self.visited >= TRAVERSAL_ENTRIES_MAX:
                    self.truncated = True
                    return
                self.visited += 1
                if entry.kind not in ("file", "directory", "mount"):
                    continue
                child_relative = join_logical(relative, entry.name)
                child = child_location(directory, entry.name) or self.context.locate(
                    join_logical(directory.request_path, entry.name)
                )
                if entry.kind == "file":
                    yield FoundFile(child_relative, child)
                else:
                    yield from self._walk(child, child_relative)
                if self.truncated:
                    return
        finally:
            self._chain.pop()
