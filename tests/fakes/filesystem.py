"""In-memory filesystem fake for domain unit tests.

It implements the same ports as ``adapters.posix.filesystem`` and raises the same exceptions,
with the same messages, for the same situations; ``tests/unit/test_memory_filesystem.py``
runs one set of behavioural assertions against both to keep it faithful.

A tree is a mapping of entry names to nodes: ``bytes`` is a regular file, a mapping is a
directory, ``Symlink`` is a link (never followed) and ``Special`` is a FIFO, socket or device::

    MemoryFilesystem({"/repo": {"index.artf": b"name = 'x'", "docs": {}, "link": Symlink("docs")}})

The mappings given are used as they are, not copied: a handle pins the mapping object of its
directory, just as a descriptor pins an inode. A test can therefore simulate a race by
replacing an entry in a mapping after a handle was opened.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TypeAlias

from artifactize.ports.filesystem import (
    DirEntry,
    EntryKind,
    EntryNotFound,
    FileIdentity,
    FilesystemError,
    FileTooLarge,
    NotADirectory,
    NotRegularFile,
    SymlinkRefused,
)


@dataclass(frozen=True)
class Symlink:
    """A symbolic link; the target is kept for realism but never followed."""

    target: str


@dataclass(frozen=True)
class Special:
    """A FIFO, socket or device node: listed as ``OTHER``, never read."""


Node: TypeAlias = "bytes | Symlink | Special | Mapping[str, Node]"
Tree: TypeAlias = Mapping[str, Node]


def _check_name(name: str) -> None:
    """Same rule as the real adapter: one plain entry name, never a path."""
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        raise ValueError(f"not a single directory entry name: {name!r}")


def _join(parent: str, name: str) -> str:
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


def _check_canonical(path: str) -> None:
    """Same rule as the real adapter: absolute, no empty, ``.`` or ``..`` component."""
    if not path.startswith("/"):
        raise ValueError(f"not an absolute canonical path: {path!r}")
    if path != "/":
        for component in path[1:].split("/"):
            if component in ("", ".", "..") or "\0" in component:
                raise ValueError(f"not a canonical path: {path!r}")


def _kind(node: Node) -> EntryKind:
    if isinstance(node, bytes):
        return EntryKind.FILE
    if isinstance(node, Symlink):
        return EntryKind.SYMLINK
    if isinstance(node, Special):
        return EntryKind.OTHER
    return EntryKind.DIRECTORY


def _symlink_refused(name: str, path: str) -> SymlinkRefused:
    return SymlinkRefused(name, f"`{path}` is a symbolic link; links are never followed")


class MemoryDirectoryHandle:
    """A directory of the in-memory tree, pinned to its mapping object."""

    def __init__(self, filesystem: MemoryFilesystem, tree: Tree, physical_path: str) -> None:
        self._filesystem = filesystem
        self._tree = tree
        self._physical_path = physical_path
        self._closed = False
        filesystem.open_handles += 1

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"MemoryDirectoryHandle({self._physical_path!r}, {state})"

    @property
    def physical_path(self) -> str:
        return self._physical_path

    def _live_tree(self) -> Tree:
        if self._closed:
            raise ValueError(f"directory handle for `{self._physical_path}` is closed")
        return self._tree

    def _lookup(self, name: str) -> tuple[Node, str]:
        """The node for ``name`` and its physical path; missing entries raise like the OS."""
        _check_name(name)
        tree = self._live_tree()
        path = _join(self._physical_path, name)
        if name not in tree:
            raise EntryNotFound.at(name, path)
        return tree[name], path

    def entries(self, at_most: int | None = None) -> list[DirEntry]:
        tree = self._live_tree()
        found = [DirEntry(name, _kind(node)) for name, node in tree.items()]
        if at_most is not None:
            found = found[: at_most + 1]
        return sorted(found, key=_name)

    def entry(self, name: str) -> DirEntry:
        self._filesystem.entry_calls.append(name)
        node, _ = self._lookup(name)
        return DirEntry(name, _kind(node))

    def open_directory(self, name: str) -> MemoryDirectoryHandle:
        self._filesystem.open_directory_calls += 1
        node, path = self._lookup(name)
        if isinstance(node, Symlink):
            raise _symlink_refused(name, path)
        if not isinstance(node, Mapping):
            raise NotADirectory.at(name, path)
        return MemoryDirectoryHandle(self._filesystem, node, path)

    def read_file(self, name: str, max_bytes: int) -> bytes:
        self._filesystem.read_file_calls += 1
        _check_name(name)
        if max_bytes < 0:
            raise ValueError(f"max_bytes must not be negative, got {max_bytes}")
        node, path = self._lookup(name)
        if isinstance(node, Symlink):
            raise _symlink_refused(name, path)
        if not isinstance(node, bytes):
            raise NotRegularFile.at(name, path)
        if len(node) > max_bytes:
            raise FileTooLarge(name, f"`{path}` is larger than {max_bytes} bytes", limit=max_bytes)
        return node

    def read_listed_file(self, name: str, max_bytes: int) -> bytes:
        return self.read_file(name, max_bytes)

    def open_listed_file(self, name: str) -> MemoryFileHandle:
        return self.open_file(name)  # no stat before the open to skip here

    def open_file(self, name: str) -> MemoryFileHandle:
        self._filesystem.open_file_calls += 1
        _check_name(name)
        node, path = self._lookup(name)
        if isinstance(node, Symlink):
            raise _symlink_refused(name, path)
        if not isinstance(node, bytes):
            raise NotRegularFile.at(name, path)
        return MemoryFileHandle(node)

    def identity(self, name: str) -> FileIdentity | None:
        """Not told here: nothing about these files is kept in the file index."""
        return None

    def folder_identity(self, name: str) -> FileIdentity | None:
        """Not told here: no walk is kept in the file index."""
        return None

    def opened_identity(self) -> FileIdentity | None:
        """Not told here: no walk is kept in the file index."""
        return None

    def identities_below(self, paths: Sequence[str], *, folders: bool) -> list[FileIdentity | None]:
        """Not told here: no discovery is kept in the file index."""
        return [None] * len(paths)

    def identity_keys_below(self, paths: Sequence[str], *, folders: bool) -> list[str | None]:
        """Not told here: no walk is kept in the file index."""
        return [None] * len(paths)

    def read_link(self, name: str) -> str:
        _check_name(name)
        node, path = self._lookup(name)
        if not isinstance(node, Symlink):
            raise FilesystemError(name, f"`{path}` is not a symbolic link")
        return node.target

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._filesystem.open_handles -= 1

    def __enter__(self) -> MemoryDirectoryHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class MemoryFileHandle:
    """Sequential reads over the bytes a file held when it was opened."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._position = 0

    @property
    def identity(self) -> FileIdentity | None:
        return None

    @property
    def size(self) -> int:
        return len(self._data)

    def read(self, max_bytes: int) -> bytes:
        chunk = self._data[self._position : self._position + max_bytes]
        self._position += len(chunk)
        return chunk

    def close(self) -> None:
        self._position = len(self._data)

    def __enter__(self) -> MemoryFileHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _name(entry: DirEntry) -> str:
    return entry.name


class MemoryFilesystem:
    """Read-only in-memory ``Filesystem`` with call counters for assertions.

    ``roots`` maps absolute paths to trees, e.g. ``{"/repo": {...}}``. Paths below a root
    (``/repo/docs``) are reached by walking the tree. Unlike the real adapter,
    ``canonical_directory`` does not resolve links: it refuses them.

    Counters: ``open_root_calls``, ``open_directory_calls`` and ``read_file_calls`` count every
    call, failed ones included (``entry_calls`` lists the names asked); ``open_handles`` is the number of handles not yet closed (so a
    test can prove nothing leaks); ``writes`` stays empty because nothing here can write, which
    lets a test assert that the code under test wrote nothing.
    """

    def __init__(self, roots: Mapping[str, Node]) -> None:
        for root in roots:
            if not root.startswith("/") or (root != "/" and root.endswith("/")):
                raise ValueError(f"root must be an absolute path without trailing slash: {root!r}")
        self._roots = roots
        self.open_root_calls = 0
        self.open_directory_calls = 0
        self.read_file_calls = 0
        self.open_file_calls = 0
        self.entry_calls: list[str] = []  # the names ``entry`` was asked, in order
        self.open_handles = 0
        self.writes: list[str] = []

    def canonical_directory(self, path: str) -> str:
        """Normalize lexically; accept a registered root or a directory below one.

        Unlike the real adapter it resolves no links (it refuses them) and no relative paths.
        """
        if not path or "\0" in path or not path.startswith("/"):
            raise EntryNotFound(path, f"`{path}` is not a usable directory path")
        canonical = "/" + posixpath.normpath(path).lstrip("/")
        try:
            node = self._resolve(canonical)
        except EntryNotFound as err:
            raise EntryNotFound.at(path, path) from err
        if not isinstance(node, Mapping):
            raise NotADirectory.at(path, path)
        return canonical

    def open_root(self, canonical_path: str) -> MemoryDirectoryHandle:
        self.open_root_calls += 1
        _check_canonical(canonical_path)
        node = self._resolve(canonical_path)
        if not isinstance(node, Mapping):
            name = canonical_path.rsplit("/", 1)[-1]
            raise NotADirectory.at(name, canonical_path)
        return MemoryDirectoryHandle(self, node, canonical_path)

    def _resolve(self, canonical: str) -> Node:
        """Find the node at ``canonical`` by walking down from the longest registered root."""
        for root in sorted(self._roots, key=len, reverse=True):
            if canonical == root:
                return self._roots[root]
            prefix = root if root == "/" else f"{root}/"
            if canonical.startswith(prefix):
                return self._walk(self._roots[root], root, canonical[len(prefix) :])
        raise EntryNotFound.at(canonical, canonical)

    def _walk(self, node: Node, path: str, rest: str) -> Node:
        """Descend one component at a time, refusing links like the real no-follow walk."""
        for component in rest.split("/"):
            _check_name(component)
            if not isinstance(node, Mapping):
                raise NotADirectory.at(path.rsplit("/", 1)[-1], path)
            if component not in node:
                raise EntryNotFound.at(component, _join(path, component))
            node, path = node[component], _join(path, component)
            if isinstance(node, Symlink):
                raise _symlink_refused(component, path)
        return node
