"""``PrivateFiles`` on Windows: the state directory's small private files without surprises.

The Windows counterpart of ``adapters/posix/private_files.py``:

- Nothing below the base folder is followed. Each folder on the way and the file itself are
  opened with ``FILE_FLAG_OPEN_REPARSE_POINT`` (a symbolic link, junction or mount point is
  opened as itself) and the *opened handle's* attributes decide: a reparse point, a device
  or, where a folder is expected, a file (and the reverse) is refused with the path and the
  rule. The folders' handles are held without ``FILE_SHARE_DELETE`` while the file is used,
  so a checked folder cannot be renamed away and replaced by a junction meanwhile.
- Private means an owner-only protected DACL (``private_acl.py``, the form of 0700/0600):
  folders created below the base get one (inherited by what is created inside), a file
  written here gets one before its content is written, and a private file must have a
  single link. Wine keeps no DACLs, so reading one back is not checked (``docs/windows.md``).
- A write goes to a fresh temporary file in the same folder, is flushed
  (``FlushFileBuffers``) and renamed over the target (``MoveFileEx`` with replace, through
  ``os.replace``): a reader sees the old or the new file, never half of one. Renaming
  replaces a link at the target itself; its target is never written.
- Files created by an append or a lock inherit their folder's owner-only DACL.
- An append is one ``WriteFile`` at the end of a file opened for appending, then flushed. The
  lock is ``LockFileEx`` (exclusive, waiting), released when its handle closes — also when
  the process dies.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
from collections.abc import Iterator, Sequence
from ctypes import wintypes

from artifactize.adapters.windows import win32
from artifactize.adapters.windows.private_acl import restrict_to_owner
from artifactize.ports.private_files import PrivateFileError

__all__ = ["WindowsPrivateFiles"]

_GENERIC_READ = 0x8000_0000
_GENERIC_WRITE = 0x4000_0000
_FILE_READ_ATTRIBUTES = 0x0080
_FILE_APPEND_DATA = 0x0004
_SYNCHRONIZE = 0x0010_0000
_FILE_SHARE_READ = 0x1
_FILE_SHARE_WRITE = 0x2
_FILE_SHARE_DELETE = 0x4
_CREATE_NEW = 1
_OPEN_EXISTING = 3
_OPEN_ALWAYS = 4
_FILE_FLAG_BACKUP_SEMANTICS = 0x0200_0000  # needed to open a folder; harmless for a file
_FILE_FLAG_OPEN_REPARSE_POINT = 0x0020_0000
_FILE_ATTRIBUTE_DIRECTORY = 0x10
_FILE_ATTRIBUTE_DEVICE = 0x40
_FILE_ATTRIBUTE_REPARSE_POINT = 0x400
_FILE_TYPE_DISK = 1
_FILE_STANDARD_INFO = 1
_FILE_ATTRIBUTE_TAG_INFO = 9
_LOCKFILE_EXCLUSIVE_LOCK = 0x2
_LOCK_WHOLE_FILE = 0xFFFF_FFFF  # bytes locked, low and high DWORD: the lock covers any size
_ERROR_FILE_NOT_FOUND = 2
_ERROR_PATH_NOT_FOUND = 3
_MISSING = (_ERROR_FILE_NOT_FOUND, _ERROR_PATH_NOT_FOUND)
_READ_CHUNK_BYTES = 1 << 20
# What other openers may do while a folder on the way is held: read and write inside it, but
# not rename or delete it.
_FOLDER_SHARE = _FILE_SHARE_READ | _FILE_SHARE_WRITE
# A file may be replaced (renamed over) while a reader has it open, as on POSIX.
_FILE_SHARE = _FILE_SHARE_READ | _FILE_SHARE_WRITE | _FILE_SHARE_DELETE


class _Overlapped(ctypes.Structure):
    _fields_ = (
        ("Internal", ctypes.c_void_p),
        ("InternalHigh", ctypes.c_void_p),
        ("Offset", wintypes.DWORD),
        ("OffsetHigh", wintypes.DWORD),
        ("hEvent", wintypes.HANDLE),
    )


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _create_file(path: str, access: int, share: int, disposition: int) -> int | None:
    """A handle of ``path`` itself (a reparse point is opened, never followed); None when it
    or a folder on the way is missing."""
    handle = win32.kernel32().CreateFileW(
        path,
        access,
        share,
        None,
        disposition,
        _FILE_FLAG_OPEN_REPARSE_POINT | _FILE_FLAG_BACKUP_SEMANTICS,
        None,
    )
    if not handle or handle == win32.INVALID_HANDLE_VALUE:
        code = win32.last_error()
        if code in _MISSING:
            return None
        raise win32.windows_error(code, f"CreateFileW({path})")
    return int(handle)


def _information(handle: int, path: str) -> tuple[int, win32.FileStandardInfo]:
    """(attributes, standard information) of an open handle: what decides, race-free."""
    kernel32 = win32.kernel32()
    tag = win32.FileAttributeTagInfo()
    standard = win32.FileStandardInfo()
    for info_class, info in ((_FILE_ATTRIBUTE_TAG_INFO, tag), (_FILE_STANDARD_INFO, standard)):
        win32.check_bool(
            kernel32.GetFileInformationByHandleEx(
                handle, info_class, ctypes.byref(info), ctypes.sizeof(info)
            ),
            f"GetFileInformationByHandleEx({path})",
        )
    return int(tag.FileAttributes), standard


def _check_kind(handle: int, path: str, *, folder: bool, single_link: bool = False) -> None:
    """Refuse a reparse point, a device, or the wrong kind of entry at ``handle``."""
    attributes, standard = _information(handle, path)
    if attributes & _FILE_ATTRIBUTE_REPARSE_POINT:
        what = "directory" if folder else "file"
        raise PrivateFileError(
            f"{path}: is a symbolic link, junction or other reparse point, which is never "
            f"followed; it must be a {what}."
        )
    is_disk = win32.kernel32().GetFileType(handle) == _FILE_TYPE_DISK
    if attributes & _FILE_ATTRIBUTE_DEVICE or not is_disk:
        raise PrivateFileError(f"{path}: must be a {'directory' if folder else 'regular file'}.")
    if folder and not attributes & _FILE_ATTRIBUTE_DIRECTORY:
        raise PrivateFileError(f"{path}: must be a directory, not a symbolic link or a file.")
    if not folder and attributes & _FILE_ATTRIBUTE_DIRECTORY:
        raise PrivateFileError(f"{path}: must be a regular file.")
    if single_link and standard.NumberOfLinks != 1:
        raise PrivateFileError(f"{path}: must have a single link, not {standard.NumberOfLinks}.")


def _open(path: str, access: int, disposition: int, *, single_link: bool = False) -> int | None:
    """A checked handle of the regular file ``path``; None when missing."""
    try:
        handle = _create_file(path, access | _FILE_READ_ATTRIBUTES, _FILE_SHARE, disposition)
    except OSError as exc:
        raise PrivateFileError(f"{path}: cannot be opened ({_reason(exc)}).") from None
    if handle is None:
        return None
    try:
        _check_kind(handle, path, folder=False, single_link=single_link)
    except BaseException:
        win32.close_handle(handle)
        raise
    return handle


def _read_handle(handle: int, limit: int | None) -> bytes:
    """Up to ``limit`` + 1 bytes (everything when None), so that too much is noticed."""
    chunks: list[bytes] = []
    remaining = None if limit is None else limit + 1
    while remaining is None or remaining > 0:
        want = _READ_CHUNK_BYTES if remaining is None else min(remaining, _READ_CHUNK_BYTES)
        buffer = ctypes.create_string_buffer(want)
        got = wintypes.DWORD()
        win32.check_bool(
            win32.kernel32().ReadFile(handle, buffer, want, ctypes.byref(got), None), "ReadFile"
        )
        if got.value == 0:
            break
        chunks.append(buffer.raw[: got.value])
        if remaining is not None:
            remaining -= got.value
    return b"".join(chunks)


def _write_handle(handle: int, data: bytes) -> None:
    """All of ``data`` (one write may take only part of it), then flushed to disk."""
    kernel32 = win32.kernel32()
    view = memoryview(data)
    while view:
        chunk = bytes(view[:_READ_CHUNK_BYTES])
        written = wintypes.DWORD()
        win32.check_bool(
            kernel32.WriteFile(handle, chunk, len(chunk), ctypes.byref(written), None),
            "WriteFile",
        )
        view = view[written.value :]
    win32.check_bool(kernel32.FlushFileBuffers(handle), "FlushFileBuffers")


class WindowsPrivateFiles:
    """``PrivateFiles`` through handles that never follow a reparse point."""

    @contextlib.contextmanager
    def _folder(self, base: str, folders: Sequence[str], *, create: bool) -> Iterator[str | None]:
        """The path of ``base\\folders…`` (None when missing), each folder below ``base``
        checked and held (not renamable) until the context ends. ``create`` makes the base
        and every missing folder on the way, private."""
        if create:
            try:
                os.makedirs(base, exist_ok=True)
            except OSError as exc:
                raise PrivateFileError(f"{base}: cannot be created ({_reason(exc)}).") from None
        path = base
        with contextlib.ExitStack() as stack:
            for name in folders:
                path = os.path.join(path, name)
                if create:
                    self._make_folder(path)
                try:
                    handle = _create_file(
                        path, _FILE_READ_ATTRIBUTES, _FOLDER_SHARE, _OPEN_EXISTING
                    )
                except OSError as exc:
                    raise PrivateFileError(f"{path}: cannot be opened ({_reason(exc)}).") from None
                if handle is None:
                    yield None
                    return
                stack.callback(win32.close_handle, handle)
                _check_kind(handle, path, folder=True)
                if create:
                    self._restrict(path, folder=True)
            yield path

    @staticmethod
    def _make_folder(path: str) -> None:
        try:
            os.mkdir(path)
        except FileExistsError:
            return  # checked by the caller, never followed
        except OSError as exc:
            raise PrivateFileError(f"{path}: cannot be created ({_reason(exc)}).") from None

    @staticmethod
    def _restrict(path: str, *, folder: bool) -> None:
        try:
            restrict_to_owner(path, folder=folder)
        except OSError as exc:
            raise PrivateFileError(f"{path}: cannot be made private ({_reason(exc)}).") from None

    def read(
        self, base: str, names: Sequence[str], limit: int | None, *, private: bool
    ) -> bytes | None:
        *folders, name = names
        with self._folder(base, folders, create=False) as folder:
            if folder is None:
                return None
            path = os.path.join(folder, name)
            handle = _open(path, _GENERIC_READ, _OPEN_EXISTING, single_link=private)
            if handle is None:
                return None
            try:
                data = _read_handle(handle, limit)
            except OSError as exc:
                raise PrivateFileError(f"{path}: cannot be read ({_reason(exc)}).") from None
            finally:
                win32.close_handle(handle)
        if limit is not None and len(data) > limit:
            raise PrivateFileError(f"{path}: is larger than {limit} bytes.")
        return data

    def write(self, base: str, names: Sequence[str], data: bytes) -> None:
        *folders, name = names
        with self._folder(base, folders, create=True) as folder:
            assert folder is not None  # created
            target = os.path.join(folder, name)
            temporary = os.path.join(folder, f".{name}.{secrets.token_hex(8)}.tmp")
            handle = _open(temporary, _GENERIC_WRITE, _CREATE_NEW)
            assert handle is not None  # CREATE_NEW either creates or fails
            try:
                try:
                    self._restrict(temporary, folder=False)  # before the content is written
                    _write_handle(handle, data)
                finally:
                    win32.close_handle(handle)
                os.replace(temporary, target)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise PrivateFileError(f"{target}: cannot be written ({_reason(exc)}).") from None
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise

    def append(self, base: str, names: Sequence[str], data: bytes) -> None:
        *folders, name = names
        with self._folder(base, folders, create=True) as folder:
            assert folder is not None  # created
            path = os.path.join(folder, name)
            # Appending only (no FILE_WRITE_DATA): every write lands at the end of the file,
            # whatever another writer did meanwhile.
            handle = _open(path, _FILE_APPEND_DATA | _SYNCHRONIZE, _OPEN_ALWAYS)
            assert handle is not None  # OPEN_ALWAYS either opens or creates
            try:
                _write_handle(handle, data)
            except OSError as exc:
                raise PrivateFileError(f"{path}: cannot be written ({_reason(exc)}).") from None
            finally:
                win32.close_handle(handle)

    def remove(self, base: str, names: Sequence[str]) -> bool:
        *folders, name = names
        with self._folder(base, folders, create=False) as folder:
            if folder is None:
                return False
            path = os.path.join(folder, name)
            try:
                os.unlink(path)  # a link itself, never its target
            except FileNotFoundError:
                return False
            except OSError as exc:
                raise PrivateFileError(f"{path}: cannot be removed ({_reason(exc)}).") from None
            return True

    @contextlib.contextmanager
    def locked(self, base: str, names: Sequence[str]) -> Iterator[None]:
        *folders, name = names
        with self._folder(base, folders, create=True) as folder:
            assert folder is not None  # created
            path = os.path.join(folder, name)
            handle = _open(path, _GENERIC_READ | _GENERIC_WRITE, _OPEN_ALWAYS)
            assert handle is not None  # OPEN_ALWAYS either opens or creates
        try:
            overlapped = _Overlapped()
            win32.check_bool(
                win32.kernel32().LockFileEx(
                    handle,
                    _LOCKFILE_EXCLUSIVE_LOCK,
                    0,
                    _LOCK_WHOLE_FILE,
                    _LOCK_WHOLE_FILE,
                    ctypes.byref(overlapped),
                ),
                f"LockFileEx({path})",
            )
            yield
        finally:
            win32.close_handle(handle)  # releases the lock
