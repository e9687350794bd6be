"""Tool-session directories on Windows: owner record, lease and journal, as on POSIX.

The layout and the record formats are those of the POSIX store, written and read by
``adapters/session_journal.py`` for both (the same file names, one JSON object per journal
line, a hidden ``.new-`` name until the owner record and lease are written), so the rules
read the same on every OS. What differs:

- privacy is an owner-only protected DACL on the session directory (inherited by what is
  created inside), not mode 0700;
- a journal line is one appended write followed by ``os.fsync`` (``FlushFileBuffers``);
  Windows has no descriptor for a directory to fsync, and NTFS journals its metadata;
- the leader identity recorded for each entry also names its Job (``spawn.job_name``), which
  is how recovery finds the Job again;
- removal retries for up to ``HANDLE_RELEASE_SECONDS``: a file of a process that just ended
  stays open until Windows has released its handles, and deleting it fails until then (seed
  000: "recovery waits up to 30 seconds for Windows to release open file handles").
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
import sys
import time
from collections.abc import Callable
from typing import Any

from artifactize.adapters.session_journal import (
    DIRECTORY_PREFIX,
    JOURNAL_FILE,
    LEASE_FILE,
    NEW_PREFIX,
    OWNER_FILE,
    OWNER_MAX_BYTES,
    WORK_DIRECTORY,
    journal_line,
    owner_record,
    parse_journal,
    parse_owner,
)
from artifactize.adapters.windows.private_acl import restrict_to_owner
from artifactize.ports.sessions import JournalEntry, ProcessIdentity

__all__ = [
    "DIRECTORY_PREFIX",
    "HANDLE_RELEASE_SECONDS",
    "JOURNAL_FILE",
    "LEASE_FILE",
    "OWNER_FILE",
    "WORK_DIRECTORY",
    "WindowsSessionStore",
]

# How long ``remove`` keeps retrying while Windows still holds a file of the session open.
HANDLE_RELEASE_SECONDS = 30.0
_BINARY = getattr(os, "O_BINARY", 0)
_NOINHERIT = getattr(os, "O_NOINHERIT", 0)
_RETRY_FIRST_SECONDS = 0.01
_RETRY_MAX_SECONDS = 0.25


def _write_new_file(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY | _NOINHERIT, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_file(path: str, limit: int | None = None) -> bytes:
    fd = os.open(path, os.O_RDONLY | _BINARY | _NOINHERIT)
    try:
        chunks = []
        size = 0
        while chunk := os.read(fd, 64 * 1024):
            chunks.append(chunk)
            size += len(chunk)
            if limit is not None and size > limit:
                break
        return b"".join(chunks)
    finally:
        os.close(fd)


def _cut_torn_tail(fd: int) -> None:
    """If the journal does not end with a newline, an earlier append was torn: truncate it
    after its last newline so the next entry starts on a line of its own."""
    size = os.lseek(fd, 0, os.SEEK_END)
    if size == 0:
        return
    os.lseek(fd, 0, os.SEEK_SET)
    data = b""
    while chunk := os.read(fd, 64 * 1024):
        data += chunk
    if data.endswith(b"\n"):
        return
    os.ftruncate(fd, data.rfind(b"\n") + 1)


def _remove_tree(directory: str) -> None:
    """``shutil.rmtree`` (links and junctions unlinked, never entered); a vanished entry is
    fine, a read-only one is made writable first."""

    def handle(function: Callable[..., Any], path: str, error: BaseException) -> None:
        if isinstance(error, FileNotFoundError):
            return
        if isinstance(error, PermissionError) and os.path.lexists(path):
            with contextlib.suppress(OSError):
                os.chmod(path, stat.S_IWRITE)
        raise error

    if sys.version_info >= (3, 12):
        shutil.rmtree(directory, onexc=handle)
    else:
        shutil.rmtree(directory, onerror=lambda f, p, info: handle(f, p, info[1]))


def _remove_in_order(directory: str) -> None:
    """``work`` first, then the other records, the journal last, then the folder itself."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return
    ordered = sorted(names, key=lambda name: (name != WORK_DIRECTORY, name == JOURNAL_FILE))
    for name in ordered:
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            _remove_tree(path)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(directory)


class WindowsSessionStore:
    """``SessionStore`` on Windows; see the module docstring."""

    def __init__(self, handle_release_seconds: float = HANDLE_RELEASE_SECONDS) -> None:
        self._release_seconds = handle_release_seconds

    def create(self, parent: str, owner: ProcessIdentity) -> str:
        if not os.path.isdir(parent):
            os.makedirs(parent, exist_ok=True)
            restrict_to_owner(parent, folder=True)
        token = secrets.token_hex(8)
        building = os.path.join(parent, NEW_PREFIX + token)
        final = os.path.join(parent, DIRECTORY_PREFIX + token)
        os.mkdir(building)
        try:
            restrict_to_owner(building, folder=True)
            _write_new_file(os.path.join(building, OWNER_FILE), owner_record(owner))
            _write_new_file(os.path.join(building, LEASE_FILE), b"")
            if os.path.lexists(final):
                raise FileExistsError(errno.EEXIST, "session directory exists", final)
            os.rename(building, final)
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
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
            data = _read_file(os.path.join(directory, OWNER_FILE), OWNER_MAX_BYTES)
        except OSError:
            return None
        return parse_owner(data)

    def has_lease(self, directory: str) -> bool:
        return os.path.lexists(os.path.join(directory, LEASE_FILE))

    def release_lease(self, directory: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(directory, LEASE_FILE))

    def append(self, directory: str, entry: JournalEntry) -> None:
        line = journal_line(entry)
        path = os.path.join(directory, JOURNAL_FILE)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _BINARY | _NOINHERIT, 0o600)
        try:
            _cut_torn_tail(fd)
            os.lseek(fd, 0, os.SEEK_END)
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)

    def journal(self, directory: str) -> list[JournalEntry]:
        """The admitted groups (Jobs). An unparsable final line (a torn append) is ignored;
        any other unparsable line raises ``OSError``: what it named is unknown."""
        path = os.path.join(directory, JOURNAL_FILE)
        try:
            data = _read_file(path)
        except FileNotFoundError:
            return []
        return parse_journal(data, path)

    def remove(self, directory: str) -> None:
        """Remove the directory, retrying while Windows still holds one of its files open,
        for at most ``HANDLE_RELEASE_SECONDS``; then the last error is raised.

        The harness's ``work`` folder goes first and the journal last, so a removal that
        fails part-way keeps the journal (what the next sweep needs) whatever order the
        volume lists the entries in."""
        deadline = time.monotonic() + self._release_seconds
        delay = _RETRY_FIRST_SECONDS
        while True:
            try:
                _remove_in_order(directory)
                return
            except PermissionError:
                if time.monotonic() >= deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, _RETRY_MAX_SECONDS)

    def work_directory(self, directory: str) -> str:
        path = os.path.join(directory, WORK_DIRECTORY)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path)
        if not os.path.isdir(path) or os.path.islink(path):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)
        restrict_to_owner(path, folder=True)
        return path
