"""Depth-first traversal of logical directories for ``glob`` and ``grep``.

Entries come from the same listing as ``list``: children are walked as folders and mounts
at an Artifact's root are followed, but a location already on the ancestor chain is never
re-entered, so mount cycles do not repeat. At most 10,000 entries are visited; past that
the walk stops and the search reports ``truncated``. Symlinks and special files are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from typing import NamedTuple

from artifactize.domain.tools.builtins.listing import join_logical, list_location
from artifactize.domain.tools.context import BuiltinContext
from artifactize.domain.tools.locations import (
    DirectoryChain,
    Location,
    all_plain_children,
    child_location,
    plain_children,
)

TRAVERSAL_ENTRIES_MAX = 10_000


class FoundFile(NamedTuple):
    """A file the walk found: a tuple, since a search makes one per file of its tree."""

    relative: str  # relative to the searched path
    parents: tuple[str, ...]  # its folder's physical components, from the workspace root
    name: str  # its entry in that folder, which the listing classified as a regular file


# ``tuple.__new__(FoundFile, (...))`` is ``FoundFile(...)`` without the Python-level
# ``__new__`` a named tuple defines: one call less per file of the tree.
_new_found = tuple.__new__
_NAME = itemgetter(0)  # a LogicalEntry's name
_KIND = itemgetter(1)  # and its kind


@dataclass
class Traversal:
    context: BuiltinContext
    directories: DirectoryChain | None = None  # pinned once for every folder listed
    visited: int = 0
    truncated: bool = False
    _chain: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def files(self, start: Location) -> list[FoundFile]:
        """Every file below ``start``, in walk order (a list: each file passes through one
        call, not through a generator per folder level)."""
        found: list[FoundFile] = []
        self._walk(start, "", found)
        return found

    def _walk(self, directory: Location, relative: str, found: list[FoundFile]) -> None:
        key = (directory.artifact.name, directory.ownership.remaining)
        if key in self._chain:
            return
        self._chain.append(key)
        add = found.append
        components = directory.components
        prefix = f"{relative}/" if relative else ""
        try:
            entries = list_location(self.context, directory, self.directories)
            # Most folders hold only plain names: asked once for all, not once per name.
            plain = plain_children(directory)
            names = list(map(_NAME, entries))
            every = all_plain_children(directory, names)
            visited = self.visited  # a local in the loop, written back before any return
            if (
                every
                and visited + len(entries) <= TRAVERSAL_ENTRIES_MAX
                and list(map(_KIND, entries)).count("file") == len(entries)
            ):
                # A folder of plain files within the limit (most folders of a tree): what the
                # loop below would add, made without a Python step per file.
                self.visited = visited + len(entries)
                relatives = map(prefix.__add__, names) if prefix else names
                found.extend(
                    map(_new_found, repeat(FoundFile), zip(relatives, repeat(components), names))
                )
                return
            for name, kind, _target in entries:
                if visited >= TRAVERSAL_ENTRIES_MAX:
                    self.visited = visited
                    self.truncated = True
                    return
                visited += 1
                if kind == "file":
                    if every or plain(name):
                        # what child_location would give, without building its Location
                        add(_new_found(FoundFile, (prefix + name, components, name)))
                        continue
                elif kind != "directory" and kind != "mount":
                    continue
                self.visited = visited
                child = child_location(directory, name) or self.context.locate(
                    join_logical(directory.request_path, name)
                )
                if kind == "file":
                    add(FoundFile(prefix + name, child.components[:-1], child.components[-1]))
                else:
                    self._walk(child, prefix + name, found)
                if self.truncated:
                    return
                visited = self.visited
            self.visited = visited
        finally:
            self._chain.pop()
