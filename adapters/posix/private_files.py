"""``PrivateFiles`` on POSIX: small files in the state directory, read and written without
surprises.

Every file is opened relative to a pinned directory descriptor with ``O_NOFOLLOW`` (a
symlink planted in the state never redirects a read or a write), ``O_NONBLOCK`` (a FIFO
never blocks) and is checked to be a regular file before a bounded read. *Private* files
(the token) must also have a single link, belong to this user and be readable by nobody
else, inside a private (0700) directory that is not a symlink. Writes go to a fresh
temporary file in the same directory, are fsynced, then renamed over the target: a reader
sees the old or the new file, never half of one. Appends are one ``O_APPEND`` write plus
fsync; locks are ``flock``. Errors (``PrivateFileError``) name the path and the rule.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat
from collections.abc import Iterator, Sequence

from artifactize.ports.private_files import PrivateFileError

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
GROUP_OTHER_BITS = 0o077
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_CHUNK_BYTES = 1 << 20


@contextlib.contextmanager
def _directory(name: str, flags: int, path: str, dir_fd: int | None = None) -> Iterator[int | None]:
    """A descriptor of the directory ``name`` (below ``dir_fd`` when given), or None when it
    does not exist; ``path`` names it in errors."""
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        yield None
        return
    except OSError as exc:
        raise _not_a_directory(path, exc) from None
    try:
        yield fd
    finally:
        os.close(fd)


def open_directory(path: str, *, follow: bool) -> contextlib.AbstractContextManager[int | None]:
    """A descriptor of the directory ``path``, or None when it does not exist."""
    return _directory(path, _DIR_FLAGS if follow else _DIR_FLAGS | os.O_NOFOLLOW, path)


@contextlib.contextmanager
def open_private_directory(parent_fd: int, name: str, path: str) -> Iterator[int | None]:
    """The private subdirectory ``name`` of ``parent_fd``; None when missing. Never follows
    a symlink; refuses a directory of another user or one open to group or others."""
    with _directory(name, _DIR_FLAGS | os.O_NOFOLLOW, path, parent_fd) as fd:
        if fd is not None:
            info = os.fstat(fd)
            _check_owner(info, path)
            if info.st_mode & GROUP_OTHER_BITS:
                raise PrivateFileError(
                    f"{path}: the directory must be private (mode 0700), "
                    f"not {stat.S_IMODE(info.st_mode):04o}."
                )
        yield fd


def ensure_private_directory(parent_fd: int, name: str, path: str) -> None:
    """Create ``name`` (0700) below ``parent_fd`` if missing, else tighten it to 0700.

    A symlink or another kind of file there is refused, never followed or replaced."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, PRIVATE_DIR_MODE, dir_fd=parent_fd)
    try:
        fd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent_fd)
    except OSError as exc:
        raise _not_a_directory(path, exc) from None
    try:
        _check_owner(os.fstat(fd), path)
        os.fchmod(fd, PRIVATE_DIR_MODE)
    finally:
        os.close(fd)


def _check_owner(info: os.stat_result, path: str) -> None:
    if info.st_uid != os.geteuid():
        raise PrivateFileError(f"{path}: the directory belongs to another user.")


def read_file(
    dir_fd: int, name: str, path: str, limit: int | None, *, private: bool
) -> bytes | None:
    """At most ``limit`` bytes (all when None) of the regular file ``name``; None when it
    does not exist."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PrivateFileError(
                f"{path}: is a symbolic link, which is never followed."
            ) from None
        raise PrivateFileError(f"{path}: cannot be read ({exc.strerror}).") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PrivateFileError(f"{path}: must be a regular file.")
        if private:
            _check_private_file(info, path)
        data = _read_all(fd) if limit is None else os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if limit is not None and len(data) > limit:
        raise PrivateFileError(f"{path}: is larger than {limit} bytes.")
    return data


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, _READ_CHUNK_BYTES):
        chunks.append(chunk)
    return b"".join(chunks)


def _check_private_file(info: os.stat_result, path: str) -> None:
    if info.st_nlink != 1:
        raise PrivateFileError(f"{path}: must have a single link, not {info.st_nlink}.")
    if info.st_uid != os.geteuid():
        raise PrivateFileError(f"{path}: belongs to another user.")
    if info.st_mode & GROUP_OTHER_BITS:
        raise PrivateFileError(
            f"{path}: must be private (mode 0600), not {stat.S_IMODE(info.st_mode):04o}."
        )


def write_atomically(dir_fd: int, name: str, data: bytes, path: str) -> None:
    """Replace ``name`` with a 0600 file holding ``data`` (temporary file, fsync, rename).

    Renaming replaces a symlink at ``name`` itself; its target is never written."""
    temporary = f".{name}.{secrets.token_hex(8)}.tmp"
    try:
        fd = os.open(
            temporary,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            PRIVATE_FILE_MODE,
            dir_fd=dir_fd,
        )
        try:
            os.fchmod(fd, PRIVATE_FILE_MODE)
            write_all(fd, data)
        finally:
            os.close(fd)
        os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        os.fsync(dir_fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        raise PrivateFileError(f"{path}: cannot be written ({exc.strerror}).") from None


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (one write may take only part of it), then fsync."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def remove_file(dir_fd: int, name: str, path: str) -> bool:
    """Unlink ``name`` (a symlink itself, never its target); False when it was missing."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise PrivateFileError(f"{path}: cannot be removed ({exc.strerror}).") from None
    return True


def _not_a_directory(path: str, exc: OSError) -> PrivateFileError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return PrivateFileError(f"{path}: must be a directory, not a symbolic link or a file.")
    return PrivateFileError(f"{path}: cannot be opened ({exc.strerror}).")


def _open_file(dir_fd: int, name: str, flags: int, path: str) -> int:
    """``name`` below ``dir_fd`` opened (created 0600) without following a symlink; a
    regular file only."""
    try:
        fd = os.open(name, flags, PRIVATE_FILE_MODE, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PrivateFileError(
                f"{path}: is a symbolic link, which is never followed."
            ) from None
        raise PrivateFileError(f"{path}: cannot be opened ({exc.strerror}).") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PrivateFileError(f"{path}: must be a regular file.")
    return fd


class PosixPrivateFiles:
    """``PrivateFiles`` through descriptors: the base is followed, nothing below it is."""

    @contextlib.contextmanager
    def _folder(
        self, base: str, folders: Sequence[str], *, private: bool, create: bool
    ) -> Iterator[tuple[int | None, str]]:
        """A descriptor of ``base/folders…`` (None when missing) and its path. ``create``
        makes the base (0700) and every folder (private) on the way."""
        if create:
            try:
                os.makedirs(base, mode=PRIVATE_DIR_MODE, exist_ok=True)
            except OSError as exc:
                raise PrivateFileError(f"{base}: cannot be created ({exc.strerror}).") from None
        with contextlib.ExitStack() as stack:
            fd = stack.enter_context(open_directory(base, follow=True))
            path = base
            for name in folders:
                if fd is None:
                    break
                path = os.path.join(path, name)
                if create:
                    ensure_private_directory(fd, name, path)
                opened = (
                    open_private_directory(fd, name, path)
                    if private or create
                    else _directory(name, _DIR_FLAGS | os.O_NOFOLLOW, path, fd)
                )
                fd = stack.enter_context(opened)
            if fd is None and create:
                raise PrivateFileError(f"{path}: the directory cannot be created.")
            yield fd, path

    def read(
        self, base: str, names: Sequence[str], limit: int | None, *, private: bool
    ) -> bytes | None:
        *folders, name = names
        with self._folder(base, folders, private=private, create=False) as (fd, path):
            if fd is None:
                return None
            return read_file(fd, name, os.path.join(path, name), limit, private=private)

    def write(self, base: str, names: Sequence[str], data: bytes) -> None:
        *folders, name = names
        with self._folder(base, folders, private=True, create=True) as (fd, path):
            assert fd is not None  # created
            write_atomically(fd, name, data, os.path.join(path, name))

    def append(self, base: str, names: Sequence[str], data: bytes) -> None:
        *folders, name = names
        with self._folder(base, folders, private=True, create=True) as (fd, path):
            assert fd is not None  # created
            target = os.path.join(path, name)
            file_fd = _open_file(fd, name, _APPEND_FLAGS, target)
            try:
                start = os.fstat(file_fd).st_size
                try:
                    write_all(file_fd, data)
                except OSError:
                    # A full disk must not leave half a record at the end: cut it off.
                    with contextlib.suppress(OSError):
                        os.ftruncate(file_fd, start)
                    raise
            except OSError as exc:
                raise PrivateFileError(f"{target}: cannot be written ({exc.strerror}).") from None
            finally:
                os.close(file_fd)

    def remove(self, base: str, names: Sequence[str]) -> bool:
        *folders, name = names
        with self._folder(base, folders, private=False, create=False) as (fd, path):
            if fd is None:
                return False
            return remove_file(fd, name, os.path.join(path, name))

    @contextlib.contextmanager
    def locked(self, base: str, names: Sequence[str]) -> Iterator[None]:
        *folders, name = names
        with self._folder(base, folders, private=True, create=True) as (fd, path):
            assert fd is not None  # created
            file_fd = _open_file(fd, name, _LOCK_FLAGS, os.path.join(path, name))
        try:
            fcntl.flock(file_fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(file_fd)
