"""Logical directory listings: physical entries plus mounts, as ``list``, ``glob`` and ``grep``
see them. A child Artifact's folder is an ordinary directory; a mount appears at the root of
the Artifact that declares it; a file Artifact's root holds only its target and mounts."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import NamedTuple

from artifactize.domain.tools.context import BuiltinContext
from artifactize.domain.tools.locations import (
    SPECIAL_REFUSED,
    DirectoryChain,
    Location,
    open_directory_at,
    open_failure,
)
from artifactize.domain.tools.results import ToolError
from artifactize.ports.filesystem import DirectoryHandle, DirEntry, EntryKind, FilesystemError

DIRECTORY_ENTRIES_MAX = 10_000

TOO_MANY_ENTRIES = "Directory exceeds the 10,000-entry listing limit; choose a narrower path."
NOT_UTF8 = "Artifact paths must be UTF-8."
MOUNT_OUTSIDE = "Mount is outside this eval's scope."
MOUNT_CONFLICT = "Logical mount conflicts with a physical entry."
NOT_A_DIRECTORY = "Listing requires a directory."


class LogicalEntry(NamedTuple):
    """A tuple, not a frozen dataclass: a listing builds one per entry, and a tuple is built
    several times faster (``grep`` lists every folder of its tree)."""

    name: str
    kind: str  # file, directory, symlink, other or mount
    mount_target: str | None = None

    def to_json(self, parent_path: str) -> dict[str, str]:
        data = {"name": self.name, "path": join_logical(parent_path, self.name), "kind": self.kind}
        if self.mount_target is not None:
            data["artifactId"] = self.mount_target
        return data


def join_logical(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def entries_json(entries: list[LogicalEntry], parent_path: str) -> list[dict[str, str]]:
    """``[entry.to_json(parent_path) for entry in entries]``, without a call per plain entry
    (a ``list`` page is 200 of them)."""
    prefix = f"{parent_path}/" if parent_path else ""
    return [
        {"name": name, "path": prefix + name, "kind": kind}
        if target is None
        else LogicalEntry(name, kind, target).to_json(parent_path)
        for name, kind, target in entries
    ]


def list_location(
    context: BuiltinContext, location: Location, directories: DirectoryChain | None = None
) -> list[LogicalEntry]:
    """Sorted entries of a logical directory; errors for files, specials and huge folders.

    ``directories``: the pinned directories of a walk that lists many folders (``glob``,
    ``grep``); without it, the workspace root is pinned and the path walked for this one."""
    context.cancellation.check()
    if location.is_file_artifact_root:
        entries = [_file_artifact_target(context, location)]
    else:
        entries = _physical_entries(context, location, directories)
    context.cancellation.check()  # a bounded step (10,001 entries at most) since the last
    if location.is_artifact_root:
        entries = _with_mounts(context, location, entries)
    if len(entries) > DIRECTORY_ENTRIES_MAX:
        raise ToolError(TOO_MANY_ENTRIES)
    return sorted(entries, key=_NAME)


_NAME = attrgetter("name")
# ``tuple.__new__(LogicalEntry, (name, kind, None))`` is ``LogicalEntry(name, kind)`` without
# the Python-level ``__new__`` of a named tuple: one call less per entry listed.
_new_entry = tuple.__new__
_NAME_OF = itemgetter(0)  # a DirEntry's name
_KIND_OF = itemgetter(1)  # and its kind
_KIND_VALUES = {kind: kind.value for kind in EntryKind}  # an enum's ``value`` is a property


def _kind_value(kind: EntryKind) -> str:
    """``kind.value``; files and folders by identity first (an enum's hash is Python code)."""
    if kind is EntryKind.FILE:
        return "file"
    if kind is EntryKind.DIRECTORY:
        return "directory"
    return _KIND_VALUES[kind]


def _physical_entries(
    context: BuiltinContext, location: Location, directories: DirectoryChain | None
) -> list[LogicalEntry]:
    parents, name = location.components[:-1], location.components[-1:]
    try:
        if directories is not None:
            found = _entries_in(directories.open(parents), name)
        else:
            with open_directory_at(context.filesystem, context.root_path, parents) as parent:
                found = _entries_in(parent, name)
    except FilesystemError as exc:
        raise open_failure(exc, location.request_path, context.owner) from None
    if len(found) > DIRECTORY_ENTRIES_MAX:
        raise ToolError(TOO_MANY_ENTRIES)
    kinds = list(map(_KIND_OF, found))
    file = EntryKind.FILE  # the common kind, without a call per entry
    values: Iterable[str] = (
        repeat("file")  # a folder of files only (most folders): no step per entry
        if kinds.count(file) == len(kinds)
        else ["file" if kind is file else _kind_value(kind) for kind in kinds]
    )
    entries = list(
        map(_new_entry, repeat(LogicalEntry), zip(map(_NAME_OF, found), values, repeat(None)))
    )
    try:  # one encode of all names: a str holds no surrogate pair, so a lone one fails it
        "".join([e.name for e in entries]).encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(NOT_UTF8) from None
    return entries


def _entries_in(parent: DirectoryHandle, name: tuple[str, ...]) -> list[DirEntry]:
    """The entries of ``parent``'s child ``name`` (of ``parent`` itself when ``name`` is empty)."""
    if not name:
        return parent.entries(DIRECTORY_ENTRIES_MAX)
    kind = parent.entry(name[0]).kind
    if kind is EntryKind.FILE:
        raise ToolError(NOT_A_DIRECTORY)
    if kind is EntryKind.OTHER:
        raise ToolError(SPECIAL_REFUSED)
    with parent.open_directory(name[0]) as directory:
        return directory.entries(DIRECTORY_ENTRIES_MAX)


def _file_artifact_target(context: BuiltinContext, location: Location) -> LogicalEntry:
    target = location.artifact.target
    assert target is not None
    folder = location.components
    try:
        with open_directory_at(context.filesystem, context.root_path, folder) as parent:
            kind = parent.entry(target).kind
    except FilesystemError as exc:
        raise open_failure(exc, location.request_path, context.owner) from None
    if kind is not EntryKind.FILE:
        raise ToolError("File Artifact target must remain a regular file.")
    return LogicalEntry(target, EntryKind.FILE.value)


def _with_mounts(
    context: BuiltinContext, location: Location, entries: list[LogicalEntry]
) -> list[LogicalEntry]:
    names = {e.name for e in entries}
    mounts = []
    for alias, target in location.artifact.mounts.items():
        if target not in context.scope:
            raise ToolError(MOUNT_OUTSIDE)
        if alias in names:
            raise ToolError(MOUNT_CONFLICT)
        mounts.append(LogicalEntry(alias, "mount", target))
    return entries + mounts
