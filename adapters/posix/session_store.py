"""Tool-session directories on a POSIX filesystem: owner record, lease and journal.

The names and record formats below are ``adapters/session_journal.py``'s, shared with the
Windows store; this module owns how they reach the disk.

Layout of one session directory, ``<parent>/session-<random>`` (0700). The record names
are fixed; harness state goes to ``work/``, so a harness cannot clobber them:

``owner.json``
    ``{"pid": <int>, "createTime": <float>}``: the artifactize process that owns the session.
``lease``
    An empty file; present while the session's cleanup is still in progress.
``journal.jsonl``
    One JSON object per line, ``{"role": "start"|"stop"|"call", "pid": <int>,
    "createTime": <float>}``: every process group the session admitted, led by that process.
``work/``
    Created (0700) by ``work_directory``: what the harness, bound tools and stop see as
    ``ARTIFACTIZE_SESSION_DIR``. Removed with the rest.

Durability: a directory is built under a hidden name (``.new-<random>``, never listed by
``directories``) and renamed into place once its owner record and lease are written and
fsynced, so a concurrent sweep never sees a session without its owner. (A crash in that
instant leaves a ``.new-`` directory holding no journal: nothing was started from it.) Each
journal entry is one ``O_APPEND`` write followed by ``fsync`` (and, for a new journal, an
fsync of the directory), so an entry that ``append`` returned survives a crash. A crash in
the middle of an append leaves a torn final line; ``journal`` ignores an unparsable final
line, and the next ``append`` cuts a torn tail off before writing.

Records are opened with ``O_NOFOLLOW`` and removal is ``shutil.rmtree`` (descriptor-based on
Linux), so a symlink placed in a session directory is never followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Callable
from typing import Any

from artifactize.adapters.session_journal import (
    DIRECTORY_PREFIX,
    JOURNAL_FILE,
    LEASE_FILE,
    NEW_PREFIX,
    OWNER_FILE,
    WORK_DIRECTORY,
    journal_line,
    owner_record,
    parse_journal,
    parse_owner,
)
from artifactize.ports.sessions import JournalEntry, ProcessIdentity

__all__ = [
    "DIRECTORY_PREFIX",
    "JOURNAL_FILE",
    "LEASE_FILE",
    "OWNER_FILE",
    "WORK_DIRECTORY",
    "PosixSessionStore",
]


_PRIVATE_DIRECTORY = 0o700
_PRIVATE_FILE = 0o600
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _fsync_directory(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_new_file(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, _PRIVATE_FILE)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_file(path: str) -> bytes:
    """A record's bytes; anything but a regular file (a FIFO or device planted in a state
    home from elsewhere) is opened without blocking and refused, never read."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        chunks = []
        while chunk := os.read(fd, 64 * 1024):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _private_directory(path: str) -> None:
    """Make ``path`` a 0700 directory (not a symlink), creating it if missing."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, _PRIVATE_DIRECTORY)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)
    if stat.S_IMODE(info.st_mode) != _PRIVATE_DIRECTORY:
        os.chmod(path, _PRIVATE_DIRECTORY)


class PosixSessionStore:
    """``SessionStore`` on a POSIX filesystem; see the module docstring for the layout."""

    def create(self, parent: str, owner: ProcessIdentity) -> str:
        if not os.path.isdir(parent):
            os.makedirs(parent, mode=_PRIVATE_DIRECTORY, exist_ok=True)
        token = secrets.token_hex(8)
        building = os.path.join(parent, NEW_PREFIX + token)
        final = os.path.join(parent, DIRECTORY_PREFIX + token)
        os.mkdir(building, _PRIVATE_DIRECTORY)
        try:
            os.chmod(building, _PRIVATE_DIRECTORY)  # whatever the umask
            _write_new_file(os.path.join(building, OWNER_FILE), owner_record(owner))
            _write_new_file(os.path.join(building, LEASE_FILE), b"")
            _fsync_directory(building)
            if os.path.lexists(final):
                raise FileExistsError(errno.EEXIST, "session directory exists", final)
            os.rename(building, final)
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
        _fsync_directory(parent)
        return final

    def directories(self, parent: str) -> list[str]:
        try:
            entries = list(os.scandir(parent))
        except FileNotFoundError:
            return []
        return sorted(
            entry.path
            for entry in entries
            if entry.name.startswith(DIRECTORY_PREFIX) and entry.is_dir(follow_symlinks=False)
        )

    def owner(self, directory: str) -> ProcessIdentity | None:
        try:
            data = _read_file(os.path.join(directory, OWNER_FILE))
        except OSError:
            return None
        return parse_owner(data)

    def has_lease(self, directory: str) -> bool:
        return os.path.lexists(os.path.join(directory, LEASE_FILE))

    def release_lease(self, directory: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(directory, LEASE_FILE))
        _fsync_directory(directory)

    def append(self, directory: str, entry: JournalEntry) -> None:
        path = os.path.join(directory, JOURNAL_FILE)
        line = journal_line(entry)
        created = not os.path.lexists(path)
        fd = os.open(
            path, os.O_RDWR | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC, _PRIVATE_FILE
        )
        try:
            _cut_torn_tail(fd)
            _write_all(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            _fsync_directory(directory)

    def journal(self, directory: str) -> list[JournalEntry]:
        """The admitted groups. An unparsable final line (a torn append) is ignored; any
        other unparsable line raises ``OSError`` (``EBADMSG``): what it named is unknown."""
        path = os.path.join(directory, JOURNAL_FILE)
        try:
            data = _read_file(path)
        except FileNotFoundError:
            return []
        return parse_journal(data, path)

    def remove(self, directory: str) -> None:
        """``shutil.rmtree``; what a concurrent sweep removed first is not an error."""
        if sys.version_info >= (3, 12):

            def ignore_vanished(
                function: Callable[..., Any], path: str, error: BaseException
            ) -> None:
                if not isinstance(error, FileNotFoundError):
                    raise error

            shutil.rmtree(directory, onexc=ignore_vanished)
        else:

            def ignore_vanished_info(
                function: Callable[..., Any], path: str, info: tuple[Any, BaseException, Any]
            ) -> None:
                if not isinstance(info[1], FileNotFoundError):
                    raise info[1]

            shutil.rmtree(directory, onerror=ignore_vanished_info)

    def work_directory(self, directory: str) -> str:
        path = os.path.join(directory, WORK_DIRECTORY)
        _private_directory(path)
        return path


def _cut_torn_tail(fd: int) -> None:
    """If the journal does not end with a newline, an earlier append was torn: truncate the
    file after its last newline so the next entry starts on a line of its own."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    position = size
    while position > 0:
        start = max(0, position - 64 * 1024)
        block = os.pread(fd, position - start, start)
        newline = block.rfind(b"\n")
        if newline >= 0:
            os.ftruncate(fd, start + newline + 1)
            return
        position = start
    os.ftruncate(fd, 0)
