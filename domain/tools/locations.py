"""From a logical path to a pinned physical location, with the messages a reviewer sees.

Resolution is logical first (mount aliases, child prefixes, the file-Artifact rule, the
admitted scope), then physical: the workspace root is pinned and every component below it,
the Artifact's own folder included, is opened one at a time without following links. A
folder swapped for a symlink after the workspace was loaded is therefore refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import NamedTuple

from artifactize.domain.declarations.model import ArtifactKind
from artifactize.domain.logical_paths import (
    LOGICAL_PATH_MAX_UTF16,
    LOGICAL_PATH_RULE,
    LogicalPathError,
)
from artifactize.domain.project.scope import Ownership, ScopeError, resolve_ownership
from artifactize.domain.project.workspace import Artifact, Workspace
from artifactize.domain.tools.results import ToolError
from artifactize.ports.filesystem import (
    DirectoryHandle,
    DirEntry,
    EntryKind,
    EntryNotFound,
    Filesystem,
    FilesystemError,
    NotADirectory,
    NotRegularFile,
    SymlinkRefused,
)

SYMLINK_REFUSED = "Cannot open Artifact input without symlink traversal."
SPECIAL_REFUSED = "Artifact input must be a regular file or directory."


@dataclass(frozen=True)
class Location:
    """A logical path resolved to the Artifact that owns it and its physical components."""

    request_path: str
    ownership: Ownership
    artifact: Artifact  # the resolved Artifact
    components: tuple[str, ...]  # physical, from the workspace root

    @property
    def is_artifact_root(self) -> bool:
        return not self.ownership.remaining

    @property
    def is_file_artifact_root(self) -> bool:
        """The virtual root of a file Artifact: it holds the target file and the mounts."""
        return self.artifact.kind is ArtifactKind.FILE and not self.ownership.remaining


def resolve_location(
    workspace: Workspace,
    owner: str,
    path: str,
    scope: tuple[str, ...],
    *,
    allow_virtual_root: bool = False,
) -> Location:
    try:
        ownership = resolve_ownership(
            workspace, owner, path, scope, allow_virtual_root=allow_virtual_root
        )
    except LogicalPathError:
        raise ToolError(LOGICAL_PATH_RULE) from None
    except ScopeError as exc:
        raise ToolError(str(exc)) from None
    artifact = workspace.artifact(ownership.resolved_artifact_id)
    base = tuple(artifact.folder.split("/")) if artifact.folder else ()
    if artifact.kind is ArtifactKind.FILE:
        assert artifact.target is not None
        components = base + ((artifact.target,) if ownership.remaining else ())
    else:
        components = base + ownership.remaining
    return Location(path, ownership, artifact, components)


# Whether every character of a name is one of ``[A-Za-z0-9._+@-]`` (ASCII letters and
# digits, not Unicode ones): one match runs several times faster than a set's
# ``issuperset`` over the characters, and ``all_plain_children`` asks it of a whole folder.
_plain_chars = re.compile(r"[A-Za-z0-9._+@-]*").fullmatch


class _FolderRule(NamedTuple):
    """What ``plain_children`` asks of a name that depends on its folder alone."""

    room: int  # UTF-16 units left for the name in a logical path
    mounts: Mapping[str, str]  # mount aliases (at the Artifact's root only)
    children: Collection[str]  # where the Artifact's children's folders start
    prefix: str  # the folder's path inside its Artifact, with a final "/"


def _folder_rule(parent: Location) -> _FolderRule | None:
    """None: no name in ``parent`` is plain (it is not inside a folder Artifact)."""
    artifact = parent.artifact
    if artifact.kind is not ArtifactKind.FOLDER:
        return None
    remaining = parent.ownership.remaining
    return _FolderRule(
        LOGICAL_PATH_MAX_UTF16 - (len(parent.request_path) + 1 if parent.request_path else 0),
        artifact.mounts if not remaining else {},
        artifact.children,
        "/".join(remaining) + "/" if remaining else "",
    )


def plain_children(parent: Location) -> Callable[[str], bool]:
    """Whether ``parent.request_path + "/" + name`` is a case no resolution rule touches,
    for each ``name`` of one folder (what depends on the folder alone is worked out once).

    A traversal resolves every entry it meets; most are a plain name inside a folder
    Artifact that is neither a mount alias (at the Artifact's root) nor where a child
    Artifact's folder starts, and for those the result is the parent's Artifact with the
    name appended to its components. False: resolve the joined path in full.
    """
    rule = _folder_rule(parent)
    if rule is None:
        return _never
    room, mounts, children, prefix = rule
    plain_chars = _plain_chars

    def plain(name: str) -> bool:
        return (
            len(name) <= room  # ASCII below: one UTF-16 unit per character
            and plain_chars(name) is not None
            and name not in (".", "..")
            and name not in mounts
            and not (children and prefix + name in children)
        )

    return plain


def all_plain_children(parent: Location, names: list[str]) -> bool:
    """Whether ``plain_children(parent)`` holds for every one of ``names``: the same tests
    made once over the whole folder (a few calls, not one per name), for the common case
    of a folder whose entries are all plain. False: ask ``plain_children`` name by name."""
    rule = _folder_rule(parent)
    if rule is None or not names:
        return rule is not None
    room, mounts, children, prefix = rule
    return (
        max(map(len, names)) <= room  # ASCII below: one UTF-16 unit per character
        and _plain_chars("".join(names)) is not None
        and "." not in names
        and ".." not in names
        and mounts.keys().isdisjoint(names)
        and not (children and any(prefix + name in children for name in names))
    )


def _never(name: str) -> bool:
    return False


def child_location(parent: Location, name: str) -> Location | None:
    """``resolve_location`` of ``parent.request_path + "/" + name`` when ``plain_children``
    holds; None means it does not: resolve the joined path in full."""
    if not plain_children(parent)(name):
        return None
    artifact = parent.artifact
    path = f"{parent.request_path}/{name}" if parent.request_path else name
    ownership = Ownership(
        parent.ownership.artifact_id, artifact.name, (*parent.ownership.remaining, name)
    )
    return Location(path, ownership, artifact, (*parent.components, name))


def missing_message(path: str, owner: str) -> str:
    """The not-found text, with a hint when the path starts with the Artifact's own name."""
    quoted = json.dumps(path, ensure_ascii=False)
    if path == owner:
        return (
            f"No {quoted} in Artifact {owner}; paths are relative to the Artifact, "
            'without its name (its root is "").'
        )
    if path.startswith(owner + "/"):
        rest = json.dumps(path[len(owner) + 1 :], ensure_ascii=False)
        return (
            f"No {quoted} in Artifact {owner}; paths are relative to the Artifact "
            f"(for example {rest}), without its name."
        )
    return f"No {quoted} in Artifact {owner}."


def open_failure(error: FilesystemError, request_path: str, owner: str) -> ToolError:
    """Translate a port refusal into the reviewer-facing message."""
    if isinstance(error, EntryNotFound):
        return ToolError(missing_message(request_path, owner))
    if isinstance(error, SymlinkRefused):
        return ToolError(SYMLINK_REFUSED)
    if isinstance(error, NotRegularFile):
        return ToolError(SPECIAL_REFUSED)
    if isinstance(error, NotADirectory):
        return ToolError("Cannot open Artifact input: Not a directory (os error 20)")
    return ToolError(f"Cannot open Artifact input: {error.message}")


@contextmanager
def open_directory_at(
    filesystem: Filesystem, root_path: str, components: tuple[str, ...]
) -> Iterator[DirectoryHandle]:
    """Pin the workspace root and walk ``components`` no-follow; yields the last directory."""
    with ExitStack() as stack:
        handle = stack.enter_context(filesystem.open_root(root_path))
        for component in components:
            handle = stack.enter_context(handle.open_directory(component))
        yield handle


class DirectoryChain:
    """The pinned workspace root and the directories below it that the last lookup opened.

    For many lookups in a row (grep reading thousands of files in sorted order): a lookup
    reuses the descriptors of the leading components it shares with the previous one and
    opens only the rest, each no-follow from its pinned parent, as ``open_directory_at``
    does. Close it (or use it as a context manager) to release the descriptors.
    """

    def __init__(self, filesystem: Filesystem, root_path: str) -> None:
        self._filesystem = filesystem
        self._root_path = root_path
        self._names: list[str] = []
        self._handles: list[DirectoryHandle] = []  # the root, then one per name
        self._key: tuple[str, ...] | None = None  # the components ``_names`` hold

    def open(self, components: tuple[str, ...]) -> DirectoryHandle:
        """The directory at ``components``; valid until the next ``open`` or ``close``."""
        if self._handles and components == self._key:
            return self._handles[-1]  # the common case: the same folder as last time
        shared = 0
        for held, wanted in zip(self._names, components, strict=False):
            if held != wanted:
                break
            shared += 1
        self._keep(shared)
        if not self._handles:
            self._handles.append(self._filesystem.open_root(self._root_path))
        for component in components[shared:]:
            self._handles.append(self._handles[-1].open_directory(component))
            self._names.append(component)
        self._key = components
        return self._handles[-1]

    def _keep(self, depth: int) -> None:
        self._key = None
        while len(self._names) > depth:
            self._names.pop()
            self._handles.pop().close()

    def close(self) -> None:
        self._keep(0)
        while self._handles:
            self._handles.pop().close()

    def __enter__(self) -> DirectoryChain:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@dataclass(frozen=True)
class Opened:
    """A location whose parent directory is pinned, with its final entry classified."""

    parent: DirectoryHandle
    name: str | None  # None: the location is the workspace root itself
    kind: EntryKind


@contextmanager
def open_location(
    filesystem: Filesystem, root_path: str, location: Location, owner: str
) -> Iterator[Opened]:
    """Pin the parent of the location and classify its final entry without following it."""
    parents, name = location.components[:-1], (location.components or (None,))[-1]
    try:
        with open_directory_at(filesystem, root_path, parents) as parent:
            if name is None:
                yield Opened(parent, None, EntryKind.DIRECTORY)
                return
            entry: DirEntry = parent.entry(name)
            if entry.kind is EntryKind.SYMLINK:
                raise ToolError(SYMLINK_REFUSED)
            yield Opened(parent, name, entry.kind)
    except FilesystemError as exc:
        raise open_failure(exc, location.request_path, owner) from None
