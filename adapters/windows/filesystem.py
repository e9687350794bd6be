"""Windows filesystem adapter: directories pinned by open handles, walked one name at a time.

The Windows counterpart of ``adapters/posix/filesystem.py``. Every access below a root goes
through an open directory handle and a single entry name: the child is opened with
``NtCreateFile`` *relative to its parent's handle* (``RootDirectory``), so a path is never
re-resolved after it was checked. Each open passes ``FILE_OPEN_REPARSE_POINT``: a symbolic
link, junction or mount point is opened as itself, never followed, and the opened handle's
attributes (not a name lookup that could be raced) decide whether it is refused. Folders are
opened with backup semantics (``FILE_OPEN_FOR_BACKUP_INTENT``), as folders must be.

Names are case-sensitive for artifactize on every OS (``reference/platforms.md``), but
Windows looks names up case-insensitively. Each name is therefore compared with the entry's
spelling on disk (a directory query filtered by that name on a fresh handle of the pinned
folder): a name that differs only by case is refused rather than read.

Listings are read from the pinned handle (a fresh handle opened relative to it, so that
concurrent listings never share a scan position). Handles are opened sharing read, write and
delete, as POSIX descriptors would not block a rename or removal by someone else.
"""

from __future__ import annotations

import ctypes
import ntpath
import os
from collections.abc import Sequence
from ctypes import wintypes

from artifactize.adapters.pinned_handles import OwnedHandle
from artifactize.adapters.windows import win32
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

__all__ = ["WindowsDirectoryHandle", "WindowsFileHandle", "WindowsFilesystem"]

# Access rights, share modes, dispositions and options of NtCreateFile.
_FILE_READ_DATA = 0x0001  # also FILE_LIST_DIRECTORY
_FILE_READ_ATTRIBUTES = 0x0080
_READ_CONTROL = 0x0002_0000
_SYNCHRONIZE = 0x0010_0000
_FILE_SHARE_ALL = 0x1 | 0x2 | 0x4  # read, write, delete
_FILE_OPEN = 1
_FILE_DIRECTORY_FILE = 0x0000_0001
_FILE_SYNCHRONOUS_IO_NONALERT = 0x0000_0020
_FILE_NON_DIRECTORY_FILE = 0x0000_0040
_FILE_SEQUENTIAL_ONLY = 0x0000_0004
_FILE_OPEN_FOR_BACKUP_INTENT = 0x0000_4000
_FILE_OPEN_REPARSE_POINT = 0x0020_0000
_OBJ_CASE_INSENSITIVE = 0x40
# File attributes.
_FILE_ATTRIBUTE_DIRECTORY = 0x10
_FILE_ATTRIBUTE_DEVICE = 0x40
_FILE_ATTRIBUTE_REPARSE_POINT = 0x400
# NTSTATUS values with a port meaning.
_STATUS_NO_MORE_FILES = 0x8000_0006
_STATUS_NO_SUCH_FILE = 0xC000_000F
_STATUS_OBJECT_NAME_INVALID = 0xC000_0033
_STATUS_OBJECT_NAME_NOT_FOUND = 0xC000_0034
_STATUS_OBJECT_PATH_NOT_FOUND = 0xC000_003A
_STATUS_FILE_IS_A_DIRECTORY = 0xC000_00BA
_STATUS_NOT_A_DIRECTORY = 0xC000_0103
_STATUS_STOPPED_ON_SYMLINK = 0x8000_002D
_STATUS_REPARSE_POINT_ENCOUNTERED = 0xC000_050B
_NOT_FOUND = (_STATUS_OBJECT_NAME_NOT_FOUND, _STATUS_OBJECT_PATH_NOT_FOUND, _STATUS_NO_SUCH_FILE)
# Information classes.
_FILE_DIRECTORY_INFORMATION = 1
_FILE_STANDARD_INFO = 1  # GetFileInformationByHandleEx
_FILE_ATTRIBUTE_TAG_INFO = 9
_FILE_TYPE_DISK = 1
# A name Windows cannot hold, or that would be a path rather than one entry.
_FORBIDDEN_IN_NAMES = frozenset('\\/:*?"<>|\0')
_LISTING_BUFFER_BYTES = 64 * 1024
_READ_CHUNK = 1 << 20


class _UnicodeString(ctypes.Structure):
    _fields_ = (
        ("Length", wintypes.USHORT),
        ("MaximumLength", wintypes.USHORT),
        ("Buffer", ctypes.c_void_p),
    )


class _ObjectAttributes(ctypes.Structure):
    _fields_ = (
        ("Length", wintypes.ULONG),
        ("RootDirectory", wintypes.HANDLE),
        ("ObjectName", ctypes.POINTER(_UnicodeString)),
        ("Attributes", wintypes.ULONG),
        ("SecurityDescriptor", ctypes.c_void_p),
        ("SecurityQualityOfService", ctypes.c_void_p),
    )


class _IoStatusBlock(ctypes.Structure):
    _fields_ = (("Status", ctypes.c_void_p), ("Information", ctypes.c_size_t))


class _NtError(OSError):
    """A failed NT call, with its NTSTATUS (unsigned)."""

    def __init__(self, status: int, what: str) -> None:
        super().__init__(f"{what} failed (NTSTATUS {status:#010x})")
        self.status = status


def _check_name(name: str) -> None:
    """Refuse anything but one plain entry name that Windows can hold."""
    if name in ("", ".", "..") or _FORBIDDEN_IN_NAMES.intersection(name):
        raise ValueError(f"not a single directory entry name: {name!r}")


def _join(parent: str, name: str) -> str:
    return parent + name if parent.endswith("\\") else f"{parent}\\{name}"


def _unicode_string(text: str) -> tuple[_UnicodeString, ctypes.Array[ctypes.c_wchar]]:
    """A UNICODE_STRING for ``text`` and the buffer it points into (keep both alive)."""
    buffer = ctypes.create_unicode_buffer(text)
    size = len(text.encode("utf-16-le"))
    return _UnicodeString(size, size, ctypes.cast(buffer, ctypes.c_void_p)), buffer


def _nt_open(root: int | None, name: str, access: int, options: int, attributes: int = 0) -> int:
    """``NtCreateFile(FILE_OPEN)`` of ``name`` relative to ``root``; raises ``_NtError``."""
    object_name, keep_alive = _unicode_string(name)
    object_attributes = _ObjectAttributes(
        ctypes.sizeof(_ObjectAttributes), root, ctypes.pointer(object_name), attributes, None, None
    )
    io_status = _IoStatusBlock()
    handle = wintypes.HANDLE()
    status = int(
        win32.ntdll().NtCreateFile(
            ctypes.byref(handle),
            access | _SYNCHRONIZE | _FILE_READ_ATTRIBUTES,
            ctypes.byref(object_attributes),
            ctypes.byref(io_status),
            None,
            0,
            _FILE_SHARE_ALL,
            _FILE_OPEN,
            options | _FILE_SYNCHRONOUS_IO_NONALERT | _FILE_OPEN_REPARSE_POINT,
            None,
            0,
        )
    )
    del keep_alive
    if status < 0:
        raise _NtError(status & 0xFFFF_FFFF, "NtCreateFile")
    assert handle.value is not None
    return handle.value


def _attributes(handle: int) -> int:
    """The file attributes of an open handle (what decides a refusal, race-free)."""
    info = win32.FileAttributeTagInfo()
    win32.check_bool(
        win32.kernel32().GetFileInformationByHandleEx(
            handle, _FILE_ATTRIBUTE_TAG_INFO, ctypes.byref(info), ctypes.sizeof(info)
        ),
        "GetFileInformationByHandleEx",
    )
    return int(info.FileAttributes)


def _kind_of_attributes(attributes: int) -> EntryKind:
    if attributes & _FILE_ATTRIBUTE_REPARSE_POINT:
        return EntryKind.SYMLINK  # symbolic links, junctions, mount points: never followed
    if attributes & _FILE_ATTRIBUTE_DEVICE:
        return EntryKind.OTHER
    if attributes & _FILE_ATTRIBUTE_DIRECTORY:
        return EntryKind.DIRECTORY
    return EntryKind.FILE


def _list(directory: int, name_filter: str | None) -> list[tuple[str, int]]:
    """(name as on disk, attributes) of each entry of the pinned ``directory``, through a fresh
    handle (a handle's first query fixes its filter and scan position)."""
    listing = _nt_open(directory, "", _FILE_READ_DATA, _FILE_DIRECTORY_FILE)
    try:
        found: list[tuple[str, int]] = []
        buffer = ctypes.create_string_buffer(_LISTING_BUFFER_BYTES)
        mask = None if name_filter is None else _unicode_string(name_filter)
        first = True
        while True:
            io_status = _IoStatusBlock()
            status = (
                int(
                    win32.ntdll().NtQueryDirectoryFile(
                        listing,
                        None,
                        None,
                        None,
                        ctypes.byref(io_status),
                        buffer,
                        len(buffer),
                        _FILE_DIRECTORY_INFORMATION,
                        name_filter is not None,  # one entry is all a filtered query wants
                        None if mask is None else ctypes.byref(mask[0]),
                        first,
                    )
                )
                & 0xFFFF_FFFF
            )
            first = False
            if status in (_STATUS_NO_MORE_FILES, _STATUS_NO_SUCH_FILE):
                return found
            if status & 0x8000_0000:
                raise _NtError(status, "NtQueryDirectoryFile")
            found.extend(_directory_records(buffer.raw))
            if name_filter is not None:
                return found
    finally:
        win32.close_handle(listing)


def _directory_records(raw: bytes) -> list[tuple[str, int]]:
    """Walk FILE_DIRECTORY_INFORMATION records: next offset at 0, attributes at 56, the name's
    byte length at 60 and the name (UTF-16) from 64."""
    records = []
    offset = 0
    while True:
        next_offset = int.from_bytes(raw[offset : offset + 4], "little")
        attributes = int.from_bytes(raw[offset + 56 : offset + 60], "little")
        length = int.from_bytes(raw[offset + 60 : offset + 64], "little")
        name = raw[offset + 64 : offset + 64 + length].decode("utf-16-le", "surrogatepass")
        if name not in (".", ".."):
            records.append((name, attributes))
        if next_offset == 0:
            return records
        offset += next_offset


def _symlink_refused(name: str, path: str) -> SymlinkRefused:
    return SymlinkRefused(
        name, f"`{path}` is a symbolic link or reparse point; links are never followed"
    )


def _case_differs(name: str, on_disk: str, path: str) -> EntryNotFound:
    return EntryNotFound(
        name,
        f"`{path}` does not exist: the entry on disk is spelled `{on_disk}`, "
        "and names must match it exactly",
    )


def _nt_failure(name: str, path: str, error: _NtError) -> FilesystemError:
    if error.status in _NOT_FOUND:
        return EntryNotFound.at(name, path)
    if error.status in (_STATUS_STOPPED_ON_SYMLINK, _STATUS_REPARSE_POINT_ENCOUNTERED):
        return _symlink_refused(name, path)
    if error.status == _STATUS_NOT_A_DIRECTORY:
        return NotADirectory.at(name, path)
    if error.status == _STATUS_FILE_IS_A_DIRECTORY:
        return NotRegularFile.at(name, path)
    return FilesystemError(name, f"Cannot open `{path}`: {error}")


class WindowsDirectoryHandle(OwnedHandle):
    """A directory held open by handle; every method takes one entry name, never a path."""

    def __init__(self, handle: int, physical_path: str) -> None:
        self._owned = handle
        self._physical_path = physical_path

    def __repr__(self) -> str:
        state = "closed" if self._owned is None else f"handle={self._owned}"
        return f"WindowsDirectoryHandle({self._physical_path!r}, {state})"

    @property
    def physical_path(self) -> str:
        return self._physical_path

    def _release(self, handle: int) -> None:
        win32.close_handle(handle)

    def _pinned(self) -> int:
        return self._held(f"directory handle for `{self._physical_path}`")

    def _path_of(self, name: str) -> str:
        return _join(self._physical_path, name)

    def entries(self, at_most: int | None = None) -> list[DirEntry]:
        """Every entry as spelled on disk, sorted by name, classified without following;
        with ``at_most``, ``at_most + 1`` of a larger directory (read whole here)."""
        found = [
            DirEntry(name, _kind_of_attributes(attributes))
            for name, attributes in _list(self._pinned(), None)
        ]
        if at_most is not None:
            found = found[: at_most + 1]
        return sorted(found, key=lambda entry: entry.name)

    def _lookup(self, name: str) -> int:
        """The attributes of the entry spelled exactly ``name``; refuses another spelling."""
        _check_name(name)
        path = self._path_of(name)
        try:
            found = _list(self._pinned(), name)
        except _NtError as error:
            raise _nt_failure(name, path, error) from None
        if not found:
            raise EntryNotFound.at(name, path)
        on_disk, attributes = found[0]
        if on_disk != name:
            raise _case_differs(name, on_disk, path)
        return attributes

    def entry(self, name: str) -> DirEntry:
        return DirEntry(name, _kind_of_attributes(self._lookup(name)))

    def _open_child(self, name: str, access: int, options: int) -> int:
        """Open ``name`` relative to the pinned handle, as itself (never followed), after
        checking its exact spelling; the caller checks the opened handle's attributes."""
        path = self._path_of(name)
        kind = _kind_of_attributes(self._lookup(name))
        if kind is EntryKind.SYMLINK:
            raise _symlink_refused(name, path)
        try:
            return _nt_open(self._pinned(), name, access, options)
        except _NtError as error:
            raise _nt_failure(name, path, error) from None

    def open_directory(self, name: str) -> WindowsDirectoryHandle:
        path = self._path_of(name)
        options = _FILE_DIRECTORY_FILE | _FILE_OPEN_FOR_BACKUP_INTENT
        child = self._open_child(name, _FILE_READ_DATA, options)
        try:
            kind = _kind_of_attributes(_attributes(child))
            if kind is EntryKind.SYMLINK:
                raise _symlink_refused(name, path)  # swapped in after the lookup
            if kind is not EntryKind.DIRECTORY:
                raise NotADirectory.at(name, path)
        except BaseException:
            win32.close_handle(child)
            raise
        return WindowsDirectoryHandle(child, path)

    def open_file(self, name: str) -> WindowsFileHandle:
        path = self._path_of(name)
        options = _FILE_NON_DIRECTORY_FILE | _FILE_SEQUENTIAL_ONLY
        child = self._open_child(name, _FILE_READ_DATA | _READ_CONTROL, options)
        try:
            kind = _kind_of_attributes(_attributes(child))
            if kind is EntryKind.SYMLINK:
                raise _symlink_refused(name, path)  # swapped in after the lookup
            if kind is not EntryKind.FILE or win32.kernel32().GetFileType(child) != _FILE_TYPE_DISK:
                raise NotRegularFile.at(name, path)
            info = win32.FileStandardInfo()
            win32.check_bool(
                win32.kernel32().GetFileInformationByHandleEx(
                    child, _FILE_STANDARD_INFO, ctypes.byref(info), ctypes.sizeof(info)
                ),
                "GetFileInformationByHandleEx",
            )
        except BaseException:
            win32.close_handle(child)
            raise
        return WindowsFileHandle(child, int(info.EndOfFile))

    def read_listed_file(self, name: str, max_bytes: int) -> bytes:
        """``read_file``: its open already classifies the entry by its handle."""
        return self.read_file(name, max_bytes)

    def open_listed_file(self, name: str) -> WindowsFileHandle:
        """``open_file``: its open already classifies the entry by its handle."""
        return self.open_file(name)

    def read_file(self, name: str, max_bytes: int) -> bytes:
        """Read a regular file of at most ``max_bytes`` (reading one byte more to be sure:
        the size may change while it is read)."""
        if max_bytes < 0:
            raise ValueError(f"max_bytes must not be negative, got {max_bytes}")
        with self.open_file(name) as handle:
            if handle.size <= max_bytes:
                data = handle.read(max_bytes + 1)
                if len(data) <= max_bytes:
                    return data
        path = self._path_of(name)
        raise FileTooLarge(name, f"`{path}` is larger than {max_bytes} bytes", limit=max_bytes)

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
        """Reparse targets are not read on Windows: every reparse point is refused instead."""
        path = self._path_of(name)
        if _kind_of_attributes(self._lookup(name)) is not EntryKind.SYMLINK:
            raise FilesystemError(name, f"`{path}` is not a symbolic link")
        raise FilesystemError(
            name, f"`{path}` is a reparse point; its target is not read on Windows"
        )


class WindowsFileHandle(OwnedHandle):
    """A regular file held open by handle, read sequentially."""

    def __init__(self, handle: int, size: int) -> None:
        self._owned = handle
        self._size = size

    def _release(self, handle: int) -> None:
        win32.close_handle(handle)

    @property
    def identity(self) -> FileIdentity | None:
        return None

    @property
    def size(self) -> int:
        return self._size

    def read(self, max_bytes: int) -> bytes:
        handle = self._held("file handle")
        chunks: list[bytes] = []
        remaining = max_bytes
        while remaining > 0:
            want = min(remaining, _READ_CHUNK)
            buffer = ctypes.create_string_buffer(want)
            got = wintypes.DWORD()
            win32.check_bool(
                win32.kernel32().ReadFile(handle, buffer, want, ctypes.byref(got), None),
                "ReadFile",
            )
            if got.value == 0:
                break
            chunks.append(buffer.raw[: got.value])
            remaining -= got.value
        return b"".join(chunks)


def _nt_root_name(canonical_path: str) -> tuple[str, list[str]]:
    """(the NT name of the volume root, the components below it) of a canonical path:
    ``C:\\a\\b`` → (``\\??\\C:\\``, [a, b]); ``\\\\server\\share\\a`` →
    (``\\??\\UNC\\server\\share\\``, [a])."""
    drive, rest = ntpath.splitdrive(canonical_path)
    if not drive or not rest.startswith("\\") or "/" in canonical_path:
        raise ValueError(f"not an absolute canonical path: {canonical_path!r}")
    if drive.startswith("\\\\"):
        root = "\\??\\UNC\\" + drive[2:] + "\\"
    elif len(drive) == 2 and drive[1] == ":":
        root = "\\??\\" + drive.upper() + "\\"
    else:
        raise ValueError(f"not an absolute canonical path: {canonical_path!r}")
    components = [part for part in rest.split("\\") if part]
    for component in components:
        try:
            _check_name(component)
        except ValueError:
            raise ValueError(f"not a canonical path: {canonical_path!r}") from None
    return root, components


class WindowsFilesystem:
    """Opens workspace roots on Windows (local volumes and UNC shares)."""

    def canonical_directory(self, path: str) -> str:
        """Resolve a user-given directory path once, following links, to its canonical form
        (``os.path.realpath``: the final path Windows reports, in the on-disk spelling)."""
        if not path or "\0" in path:
            raise EntryNotFound(path, f"`{path}` is not a usable directory path")
        canonical = os.path.realpath(path)
        if canonical.startswith("\\\\?\\"):
            canonical = canonical[4:]
        try:
            is_directory = os.path.isdir(canonical)
            exists = is_directory or os.path.lexists(canonical)
        except OSError as err:
            raise FilesystemError(path, f"Cannot open `{path}`: {err.strerror or err}") from err
        if not exists:
            raise EntryNotFound.at(path, path)
        if not is_directory:
            raise NotADirectory.at(path, path)
        return canonical

    def open_root(self, canonical_path: str) -> WindowsDirectoryHandle:
        """Open the volume root, then each component relative to its parent's handle, never
        following a reparse point and checking each name's exact spelling."""
        root_name, components = _nt_root_name(canonical_path)
        options = _FILE_DIRECTORY_FILE | _FILE_OPEN_FOR_BACKUP_INTENT
        try:
            root = _nt_open(None, root_name, _FILE_READ_DATA, options, _OBJ_CASE_INSENSITIVE)
        except _NtError as error:
            raise _nt_failure(canonical_path, canonical_path, error) from None
        display = ntpath.splitdrive(canonical_path)[0] + "\\"
        handle = WindowsDirectoryHandle(root, display)
        try:
            for component in components:
                parent, handle = handle, handle.open_directory(component)
                parent.close()
        except BaseException:
            handle.close()
            raise
        return handle
