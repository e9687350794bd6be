"""POSIX filesystem adapter: directories pinned by descriptors, walked without following links.

Every access below a root goes through an open directory descriptor and a single entry name
(``openat``/``fstatat`` with ``O_NOFOLLOW``), so a path is never re-resolved after it was
checked: a directory swapped for a symlink between two calls is refused, not followed. The
only place a user-given path string is resolved (and links in it followed) is
``PosixFilesystem.canonical_directory``.
"""

from __future__ import annotations

import errno
import itertools
import operator
import os
import stat
from collections.abc import Callable, Sequence
from typing import TypeVar

from artifactize.adapters.pinned_handles import OwnedHandle
from artifactize.adapters.posix.canonical import canonical_directory_path
from artifactize.adapters.posix.no_links_open import open_directory_without_links
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

# Non-blocking so that a FIFO swapped in for a directory or file can never hang the open;
# close-on-exec so that commands we spawn never inherit a workspace descriptor.
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_READ_CHUNK = 1 << 20
_T = TypeVar("_T")  # what ``_stats_below`` answers per entry
_BY_NAME = operator.itemgetter(0)  # a DirEntry's name
# ``tuple.__new__(DirEntry, (name, kind))`` is ``DirEntry(name, kind)`` without the
# Python-level ``__new__`` of a named tuple: one call less per entry listed.
_new_entry = tuple.__new__


def _check_name(name: str) -> None:
    """Refuse anything but one plain entry name: a path would be resolved by the kernel."""
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        raise ValueError(f"not a single directory entry name: {name!r}")


def _join(parent: str, name: str) -> str:
    """Physical path of ``name`` inside ``parent``, for messages and child handles."""
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


def _kind_of_mode(mode: int) -> EntryKind:
    if stat.S_ISLNK(mode):
        return EntryKind.SYMLINK
    if stat.S_ISDIR(mode):
        return EntryKind.DIRECTORY
    if stat.S_ISREG(mode):
        return EntryKind.FILE
    return EntryKind.OTHER


def _kind_of_entry(entry: os.DirEntry[str]) -> EntryKind:
    """Classify from ``d_type``; CPython itself falls back to ``fstatat`` when it is unknown.

    Without following links, ``is_file`` and ``is_dir`` hold only for a regular file and a
    real directory (a link is neither), so the most common kind is asked first."""
    if entry.is_file(follow_symlinks=False):
        return EntryKind.FILE
    if entry.is_dir(follow_symlinks=False):
        return EntryKind.DIRECTORY
    if entry.is_symlink():
        return EntryKind.SYMLINK
    return EntryKind.OTHER


def _not_walked(path: str) -> bool:
    """Whether a ``/``-joined path has an empty, ``.`` or ``..`` name: it is not one a walk
    gives. Framed by ``/`` at both ends, each such name shows as ``//``, ``/./`` or
    ``/../`` (half the time of splitting the path, asked for every entry a kept walk or
    discovery checks)."""
    framed = f"/{path}/"
    return "//" in framed or "/./" in framed or "/../" in framed


def _lstat_entry(dir_fd: int, name: str) -> os.stat_result:
    """No-follow stat of one entry of a pinned directory (a seam for race tests)."""
    return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)


def _identity_of(info: os.stat_result) -> FileIdentity:
    return FileIdentity(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _identity_key_of(info: os.stat_result) -> str:
    """``_identity_of(info).key()``, without the identity."""
    return f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"


def _symlink_refused(name: str, path: str) -> SymlinkRefused:
    return SymlinkRefused(name, f"`{path}` is a symbolic link; links are never followed")


def _os_failure(name: str, path: str, err: OSError) -> FilesystemError:
    """Map the errno values that have a port meaning; keep the OS text for the rest."""
    if err.errno == errno.ENOENT:
        return EntryNotFound.at(name, path)
    if err.errno == errno.ELOOP:
        return _symlink_refused(name, path)
    return FilesystemError(name, f"Cannot open `{path}`: {err.strerror or err}")


class PosixDirectoryHandle(OwnedHandle):
    """A directory held open by descriptor; every method takes one entry name, never a path."""

    def __init__(self, fd: int, physical_path: str, checked: os.stat_result | None = None) -> None:
        """Take ownership of ``fd``; it is closed by ``close()``. ``checked``: the no-follow
        stat that checked the folder before it was opened (its identity, built when asked:
        a walk from ``/`` asks none)."""
        self._owned = fd
        self._physical_path = physical_path
        self._checked = checked

    def __repr__(self) -> str:
        state = "closed" if self._owned is None else f"fd={self._owned}"
        return f"PosixDirectoryHandle({self._physical_path!r}, {state})"

    @property
    def physical_path(self) -> str:
        return self._physical_path

    def _release(self, handle: int) -> None:
        os.close(handle)

    def _descriptor(self) -> int:
        return self._held(f"directory handle for `{self._physical_path}`")

    def _path_of(self, name: str) -> str:
        return _join(self._physical_path, name)

    def entries(self, at_most: int | None = None) -> list[DirEntry]:
        """Enumerate the pinned directory, sorted by name; with ``at_most``, stop after
        ``at_most + 1`` entries (the port's contract).

        The listing reads a fresh descriptor of the same directory (``.`` opened relative to
        the pinned one): ``scandir`` on a dup would share the pinned descriptor's read
        position, so two listings at once (threads) would each see part of the entries.
        Names are returned exactly as the OS gives them; a name that is not valid UTF-8 keeps
        its undecodable bytes as lone surrogates (``surrogateescape``) and sorts by code point.
        """
        try:
            listing = os.open(".", _DIRECTORY_FLAGS, dir_fd=self._descriptor())
            try:
                with os.scandir(listing) as scan:
                    read = scan if at_most is None else itertools.islice(scan, at_most + 1)
                    file = EntryKind.FILE  # the common kind, without a call per entry
                    found = [
                        _new_entry(
                            DirEntry,
                            (
                                entry.name,
                                file
                                if entry.is_file(follow_symlinks=False)
                                else _kind_of_entry(entry),
                            ),
                        )
                        for entry in read
                    ]
            finally:
                os.close(listing)
        except OSError as err:  # an unreadable folder (EACCES), one gone meanwhile
            raise FilesystemError(
                ".", f"Cannot list `{self._physical_path}`: {err.strerror or err}"
            ) from err
        return sorted(found, key=_BY_NAME)

    def entry(self, name: str) -> DirEntry:
        _check_name(name)
        fd = self._descriptor()
        try:
            info = _lstat_entry(fd, name)
        except OSError as err:
            raise _os_failure(name, self._path_of(name), err) from err
        return DirEntry(name, _kind_of_mode(info.st_mode))

    def open_directory(self, name: str) -> PosixDirectoryHandle:
        """Open a child without following links, and prove it is the entry that was checked."""
        _check_name(name)
        fd = self._descriptor()
        path = self._path_of(name)
        expected = self._stat_directory(fd, name, path)
        child = self._open_child_directory(fd, name, path)
        try:
            opened = os.fstat(child)
            if (opened.st_dev, opened.st_ino) != (expected.st_dev, expected.st_ino):
                raise FilesystemError(name, f"`{path}` changed while it was being opened")
        except BaseException:
            os.close(child)
            raise
        return PosixDirectoryHandle(child, path, expected)

    def identity(self, name: str) -> FileIdentity | None:
        """No-follow ``fstatat`` of one entry: its identity when it is a regular file."""
        return self._identity_if(name, stat.S_ISREG)

    def folder_identity(self, name: str) -> FileIdentity | None:
        """No-follow ``fstatat`` of one entry: its identity when it is a real folder."""
        return self._identity_if(name, stat.S_ISDIR)

    def opened_identity(self) -> FileIdentity | None:
        checked = self._checked
        return None if checked is None else _identity_of(checked)

    def identities_below(self, paths: Sequence[str], *, folders: bool) -> list[FileIdentity | None]:
        """No-follow ``fstatat`` of each path relative to the pinned folder (its last name
        not followed; the caller checks the folders on the way)."""
        return self._stats_below(paths, folders, _identity_of)

    def identity_keys_below(self, paths: Sequence[str], *, folders: bool) -> list[str | None]:
        """``identities_below``, each as its identity's key text."""
        return self._stats_below(paths, folders, _identity_key_of)

    def _stats_below(
        self, paths: Sequence[str], folders: bool, answer: Callable[[os.stat_result], _T]
    ) -> list[_T | None]:
        fd = self._descriptor()
        kind = stat.S_ISDIR if folders else stat.S_ISREG
        found: list[_T | None] = []
        for path in paths:
            if _not_walked(path):
                found.append(None)
                continue
            try:
                info = _lstat_entry(fd, path)
            except (OSError, ValueError):
                found.append(None)
                continue
            found.append(answer(info) if kind(info.st_mode) else None)
        return found

    def _identity_if(self, name: str, kind: Callable[[int], bool]) -> FileIdentity | None:
        _check_name(name)
        try:
            info = _lstat_entry(self._descriptor(), name)
        except OSError:
            return None
        return _identity_of(info) if kind(info.st_mode) else None

    def _stat_directory(self, fd: int, name: str, path: str) -> os.stat_result:
        """No-follow stat that must show a real directory (not a link, file or special)."""
        try:
            info = _lstat_entry(fd, name)
        except OSError as err:
            raise _os_failure(name, path, err) from err
        if stat.S_ISLNK(info.st_mode):
            raise _symlink_refused(name, path)
        if not stat.S_ISDIR(info.st_mode):
            raise NotADirectory.at(name, path)
        return info

    def _open_child_directory(self, fd: int, name: str, path: str) -> int:
        """``openat`` with ``O_NOFOLLOW|O_DIRECTORY``; a link gives ELOOP or ENOTDIR."""
        try:
            return os.open(name, _DIRECTORY_FLAGS, dir_fd=fd)
        except OSError as err:
            if err.errno == errno.ENOTDIR:
                raise self._why_not_directory(fd, name, path) from err
            raise _os_failure(name, path, err) from err

    def _why_not_directory(self, fd: int, name: str, path: str) -> FilesystemError:
        """ENOTDIR is also what ``O_DIRECTORY|O_NOFOLLOW`` says for a link to a directory."""
        try:
            info = _lstat_entry(fd, name)
        except OSError as err:
            return _os_failure(name, path, err)
        if stat.S_ISLNK(info.st_mode):
            return _symlink_refused(name, path)
        return NotADirectory.at(name, path)

    def read_file(self, name: str, max_bytes: int) -> bytes:
        """Read a regular file of at most ``max_bytes``; never a link, FIFO, socket or device.

        A no-follow stat refuses special files before they are even opened (opening a device
        can have side effects); the ``fstat`` after the non-blocking open is what actually
        guarantees a regular file, since the entry may be swapped between the two calls.
        """
        _check_name(name)
        if max_bytes < 0:
            raise ValueError(f"max_bytes must not be negative, got {max_bytes}")
        fd = self._descriptor()
        path = self._path_of(name)
        self._refuse_non_regular(fd, name, path)
        try:
            file_fd = os.open(name, _FILE_FLAGS, dir_fd=fd)
        except OSError as err:
            raise _os_failure(name, path, err) from err
        try:
            return self._read_regular(file_fd, name, path, max_bytes)
        finally:
            os.close(file_fd)

    def read_listed_file(self, name: str, max_bytes: int) -> bytes:
        """``read_file`` of an entry that ``entries`` or ``entry`` of this directory has just
        classified as a regular file: that classification stands for the no-follow stat
        ``read_file`` makes before its open (both are checks made before the open, with the
        same window for a swap), so the open is the first system call. What guarantees the
        result is unchanged: the open refuses a link (``O_NOFOLLOW``) and never blocks
        (``O_NONBLOCK``), and the ``fstat`` of the descriptor refuses all but a regular file.
        """
        _check_name(name)
        if max_bytes < 0:
            raise ValueError(f"max_bytes must not be negative, got {max_bytes}")
        fd = self._owned if self._owned is not None else self._descriptor()  # (raises)
        try:
            file_fd = os.open(name, _FILE_FLAGS, dir_fd=fd)
        except OSError as err:
            raise _os_failure(name, self._path_of(name), err) from err
        try:
            return self._read_regular(file_fd, name, None, max_bytes)
        finally:
            os.close(file_fd)

    def open_file(self, name: str) -> PosixFileHandle:
        """Open a regular file for streaming; the same checks as ``read_file``."""
        _check_name(name)
        fd = self._descriptor()
        path = self._path_of(name)
        self._refuse_non_regular(fd, name, path)
        return self._open_regular(fd, name, path)

    def open_listed_file(self, name: str) -> PosixFileHandle:
        """``open_file`` without the no-follow stat before the open, for an entry just
        classified as a regular file (as ``read_listed_file``): the open refuses a link
        (``O_NOFOLLOW``) and never blocks (``O_NONBLOCK``), and the ``fstat`` of the
        descriptor refuses all but a regular file. A cold fingerprint walk makes one system
        call fewer per file."""
        _check_name(name)
        return self._open_regular(self._descriptor(), name, None)

    def _open_regular(self, fd: int, name: str, path: str | None) -> PosixFileHandle:
        try:
            file_fd = os.open(name, _FILE_FLAGS, dir_fd=fd)
        except OSError as err:
            raise _os_failure(name, path or self._path_of(name), err) from err
        try:
            info = os.fstat(file_fd)
            if not stat.S_ISREG(info.st_mode):
                raise NotRegularFile.at(name, path or self._path_of(name))
        except BaseException:
            os.close(file_fd)
            raise
        return PosixFileHandle(file_fd, info.st_size, _identity_of(info))

    def read_link(self, name: str) -> str:
        _check_name(name)
        try:
            return os.readlink(name, dir_fd=self._descriptor())
        except OSError as err:
            raise _os_failure(name, self._path_of(name), err) from err

    def _refuse_non_regular(self, fd: int, name: str, path: str) -> None:
        try:
            info = _lstat_entry(fd, name)
        except OSError as err:
            raise _os_failure(name, path, err) from err
        if stat.S_ISLNK(info.st_mode):
            raise _symlink_refused(name, path)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile.at(name, path)

    def _read_regular(self, file_fd: int, name: str, path: str | None, max_bytes: int) -> bytes:
        """Read at most ``max_bytes + 1`` bytes: the size in ``fstat`` may change meanwhile.
        ``path`` (for messages) is made from ``name`` when it is None."""
        info = os.fstat(file_fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile.at(name, path or self._path_of(name))
        size = info.st_size
        if size <= max_bytes:
            # One read of one byte more than the size: exactly the size back is the whole
            # file (a growth would have shown the extra byte), so no second read for its end.
            data = os.read(file_fd, size + 1)
            if len(data) != size:  # it changed size meanwhile: read on to its end or the limit
                data += _read_at_most(file_fd, max_bytes + 1 - len(data))
            if len(data) <= max_bytes:
                return data
        path = path or self._path_of(name)
        raise FileTooLarge(name, f"`{path}` is larger than {max_bytes} bytes", limit=max_bytes)


class PosixFileHandle(OwnedHandle):
    """A regular file held open by descriptor, read sequentially."""

    def __init__(self, fd: int, size: int, identity: FileIdentity | None = None) -> None:
        self._owned = fd
        self._size = size
        self._identity = identity
        self._position = 0  # bytes read so far
        self._ended = False  # a short read stopped at the size: its end, as of that read

    def _release(self, handle: int) -> None:
        os.close(handle)

    @property
    def size(self) -> int:
        return self._size

    @property
    def identity(self) -> FileIdentity | None:
        return self._identity

    def read(self, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` (fewer only at the end of the file). A read that returns
        fewer bytes than asked and stops exactly at the size the ``fstat`` gave is the end
        of the file as of that read (a file grown before it would have given more), so the
        next call answers ``b""`` with no system call: a small file is hashed in one
        ``read``, where reading to end of file takes three. A file grown after that read
        changed after it was read, which its identity shows (size and times)."""
        fd = self._held("file handle")
        if self._ended or max_bytes <= 0:
            return b""
        chunks: list[bytes] = []
        remaining = max_bytes
        while remaining > 0:
            asked = min(remaining, _READ_CHUNK)
            chunk = os.read(fd, asked)
            if not chunk:
                self._ended = True
                break
            chunks.append(chunk)
            remaining -= len(chunk)
            self._position += len(chunk)
            if len(chunk) < asked and self._position == self._size:
                self._ended = True
                break
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _read_at_most(fd: int, limit: int) -> bytes:
    """Read until end of file or ``limit`` bytes, whichever comes first."""
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, _READ_CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _open_unlinked_path(canonical_path: str) -> int | None:
    """The directory at ``canonical_path`` in one ``openat2`` that follows no link anywhere
    on the way (``no_links_open``): what the walk from ``/`` proves one component at a time.
    None otherwise (a link, a removed folder, no ``openat2``): the walk then decides, with
    its own errors. (The kernel's name for an ordinary open's folder is no such proof: a
    link through ``/proc/PID/root`` into another mount namespace reads back as the very
    path asked for.)"""
    return open_directory_without_links(canonical_path, _DIRECTORY_FLAGS)


def _root_components(canonical_path: str) -> list[str]:
    """Components of an absolute canonical path; anything that needs resolving is refused."""
    if not canonical_path.startswith("/"):
        raise ValueError(f"not an absolute canonical path: {canonical_path!r}")
    if canonical_path == "/":
        return []
    components = canonical_path[1:].split("/")
    for component in components:
        try:
            _check_name(component)
        except ValueError:
            raise ValueError(f"not a canonical path: {canonical_path!r}") from None
    return components


class PosixFilesystem:
    """Opens workspace roots on a POSIX system (Linux, macOS, BSD)."""

    def canonical_directory(self, path: str) -> str:
        """Resolve a user-given directory path once, following links, to its canonical form."""
        if not path or "\0" in path:
            raise EntryNotFound(path, f"`{path}` is not a usable directory path")
        named = canonical_directory_path(path)  # the kernel's name for it, when it is sure
        if named is not None:
            return named
        canonical = os.path.realpath(path)
        try:
            info = os.stat(canonical)
        except OSError as err:
            if err.errno == errno.ENOENT:
                raise EntryNotFound.at(path, path) from err
            raise FilesystemError(path, f"Cannot open `{path}`: {err.strerror or err}") from err
        if not stat.S_ISDIR(info.st_mode):
            raise NotADirectory.at(path, path)
        return canonical

    def open_root(self, canonical_path: str) -> PosixDirectoryHandle:
        """Open ``/`` and then each component in turn, no-follow, pinning each step.

        A link anywhere in the path is refused: canonical paths contain none, so one found
        here was planted after ``canonical_directory`` ran.
        """
        components = _root_components(canonical_path)
        opened = _open_unlinked_path(canonical_path) if components else None
        if opened is not None:
            return PosixDirectoryHandle(opened, canonical_path)
        handle = PosixDirectoryHandle(os.open("/", _DIRECTORY_FLAGS), "/")
        try:
            for component in components:
                parent, handle = handle, handle.open_directory(component)
                parent.close()
        except BaseException:
            handle.close()
            raise
        return handle
