"""Filesystem port: directories pinned by an open handle, walked one component at a time.

The domain never names a physical path below the workspace root. It opens the root once
and then asks each pinned directory for single entry names, so a path can never be
re-resolved (and redirected by a swapped symlink) after it was checked.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import NamedTuple, Protocol


class EntryKind(enum.Enum):
    FILE = "file"
    DIRECTORY = "directory"
    SYMLINK = "symlink"
    OTHER = "other"


class DirEntry(NamedTuple):
    """One entry of a pinned directory, classified without following symlinks.

    A tuple rather than a frozen dataclass: a listing builds one per entry, and a tuple is
    built several times faster (``grep`` lists every folder of its tree)."""

    name: str
    kind: EntryKind


@dataclass(frozen=True)
class FileIdentity:
    """What the operating system says about a regular file without reading it (a no-follow
    stat): two equal identities of a file that is not "racy" (``ports.file_index``) mean
    the same bytes. Nanosecond times; ``ctime_ns`` is the inode change time."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    def key(self) -> str:
        return f"{self.device}:{self.inode}:{self.size}:{self.mtime_ns}:{self.ctime_ns}"


class FilesystemError(Exception):
    """A refused or failed filesystem access. ``name`` is the entry that was asked for."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.message = message


class EntryNotFound(FilesystemError):
    """The entry does not exist."""

    @classmethod
    def at(cls, name: str, path: str) -> EntryNotFound:
        """The refusal every adapter gives, worded once."""
        return cls(name, f"`{path}` does not exist")


class SymlinkRefused(FilesystemError):
    """The entry is a symbolic link; links are never followed."""


class NotRegularFile(FilesystemError):
    """The entry exists but is not a regular file (a directory, FIFO, socket, device)."""

    @classmethod
    def at(cls, name: str, path: str) -> NotRegularFile:
        return cls(name, f"`{path}` is not a regular file; only regular files are read")


class NotADirectory(FilesystemError):
    """The entry exists but is not a directory."""

    @classmethod
    def at(cls, name: str, path: str) -> NotADirectory:
        return cls(name, f"`{path}` is not a directory")


class FileTooLarge(FilesystemError):
    """The file holds more bytes than the caller allowed."""

    def __init__(self, name: str, message: str, limit: int) -> None:
        super().__init__(name, message)
        self.limit = limit


class FileHandle(Protocol):
    """A regular file held open; reads are sequential from the start."""

    @property
    def size(self) -> int:
        """The size the file had when it was opened (it may change while it is read)."""
        ...

    @property
    def identity(self) -> FileIdentity | None:
        """The identity of the opened file when it was opened (``fstat``); None where the
        platform cannot tell (then nothing about the file is kept in the file index)."""
        ...

    def read(self, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` more bytes; ``b""`` at end of file."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> FileHandle: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class DirectoryHandle(Protocol):
    """A directory held open by the adapter; every method takes single entry names."""

    @property
    def physical_path(self) -> str:
        """The canonical physical path this handle was opened at (for display and envelopes)."""
        ...

    def entries(self, at_most: int | None = None) -> list[DirEntry]:
        """Every entry of the directory, sorted by name, classified without following links.

        With ``at_most``, a directory holding more entries gives ``at_most + 1`` of them
        (which ones is unspecified), sorted: enough for a caller to refuse it, without
        reading it whole."""
        ...

    def entry(self, name: str) -> DirEntry:
        """Classify one entry without following it; raises ``EntryNotFound`` when absent."""
        ...

    def open_directory(self, name: str) -> DirectoryHandle:
        """Open a child directory without following a symlink."""
        ...

    def identity(self, name: str) -> FileIdentity | None:
        """The identity of a regular file entry (a no-follow stat, nothing read); None for
        anything else (absent, a link, a folder, a special file) or where the platform
        cannot tell."""
        ...

    def folder_identity(self, name: str) -> FileIdentity | None:
        """The identity of a folder entry (a no-follow stat: its mtime and ctime change when
        an entry is added, removed or renamed in it); None for anything else or where the
        platform cannot tell."""
        ...

    def opened_identity(self) -> FileIdentity | None:
        """This folder's identity as ``open_directory`` checked it, before it was opened (so
        before any listing): ``folder_identity`` of its name then, without another stat;
        None for a root handle or where the platform cannot tell."""
        ...

    def identities_below(self, paths: Sequence[str], *, folders: bool) -> list[FileIdentity | None]:
        """``identity`` (``folder_identity`` with ``folders``) of entries below this folder,
        each named by its path from here (single names joined by ``/``), in one call: only
        the last name is not followed, so a caller trusts an answer only while every folder
        on the way checks unchanged too (a kept discovery checks every folder it entered: a
        folder on the way replaced by a link changes its parent's identity). None for an
        entry of another kind, absent, or where the platform cannot tell."""
        ...

    def identity_keys_below(self, paths: Sequence[str], *, folders: bool) -> list[str | None]:
        """``identities_below`` as each identity's ``FileIdentity.key()`` text, with no
        identity object built per entry (a kept walk compares the keys it stored)."""
        ...

    def read_file(self, name: str, max_bytes: int) -> bytes:
        """Read a regular file (never a link or special file) of at most ``max_bytes``."""
        ...

    def read_listed_file(self, name: str, max_bytes: int) -> bytes:
        """``read_file`` of an entry that ``entries`` or ``entry`` of this handle has just
        classified as a regular file (a search reading the files it listed): the same
        refusals, without classifying the entry a second time before it is opened."""
        ...

    def open_file(self, name: str) -> FileHandle:
        """Open a regular file for streaming reads; links and special files are refused."""
        ...

    def open_listed_file(self, name: str) -> FileHandle:
        """``open_file`` of an entry that ``entries``, ``entry`` or ``identity`` of this
        handle has just classified as a regular file (a fingerprint walk hashing what it
        listed): the same refusals, without classifying the entry a second time before it
        is opened."""
        ...

    def read_link(self, name: str) -> str:
        """The target text of a symbolic link entry, without following it."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> DirectoryHandle: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class Filesystem(Protocol):
    """Opens workspace roots. The only place a user-given path string is resolved."""

    def canonical_directory(self, path: str) -> str:
        """Canonical absolute form of a user-given directory path (``--repo``)."""
        ...

    def open_root(self, canonical_path: str) -> DirectoryHandle:
        """Pin the directory at an already canonical absolute path."""
        ...
