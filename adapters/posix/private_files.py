"""Small configuration files in the state directory, read and written without surprises.

Every file is opened relative to a pinned directory descriptor with ``O_NOFOLLOW`` (a
symlink planted in the state never redirects a read or a write), ``O_NONBLOCK`` (a FIFO
never blocks) and is checked to be a regular file before a bounded read. *Private* files
(the token) must also have a single link, belong to this user and be readable by nobody
else, inside a private (0700) directory that is not a symlink. Writes go to a fresh
temporary file in the same directory, are fsynced, then renamed over the target: a reader
sees the old or the new file, never half of one. Errors name the path and the rule.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator

from ports.review_store import RemoteConfigError

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
GROUP_OTHER_BITS = 0o077
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


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
                raise RemoteConfigError(
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
        raise RemoteConfigError(f"{path}: the directory belongs to another user.")


def read_file(dir_fd: int, name: str, path: str, limit: int, *, private: bool) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``name``; None when it does not exist."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RemoteConfigError(
                f"{path}: is a symbolic link, which is never followed."
            ) from None
        raise RemoteConfigError(f"{path}: cannot be read ({exc.strerror}).") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RemoteConfigError(f"{path}: must be a regular file.")
        if private:
            _check_private_file(info, path)
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise RemoteConfigError(f"{path}: is larger than {limit} bytes.")
    return data


def _check_private_file(info: os.stat_result, path: str) -> None:
    if info.st_nlink != 1:
        raise RemoteConfigError(f"{path}: must have a single link, not {info.st_nlink}.")
    if info.st_uid != os.geteuid():
        raise RemoteConfigError(f"{path}: belongs to another user.")
    if info.st_mode & GROUP_OTHER_BITS:
        raise RemoteConfigError(
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
        raise RemoteConfigError(f"{path}: cannot be written ({exc.strerror}).") from None


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
        raise RemoteConfigError(f"{path}: cannot be removed ({exc.strerror}).") from None
    return True


def _not_a_directory(path: str, exc: OSError) -> RemoteConfigError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return RemoteConfigError(f"{path}: must be a directory, not a symbolic link or a file.")
    return RemoteConfigError(f"{path}: cannot be opened ({exc.strerror}).")
