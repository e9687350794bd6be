"""The process-group journal: every group the CLI starts is recorded before it is admitted,
and the next command sweeps the groups of owners that died.

A ``kill -9`` of artifactize cannot run its cleanup, and a group we started leads a session
of its own, so nothing else ends it: its processes would run on for good. Tool sessions
have kept a journal since they exist (``session_store``); this is the same design for every
other group (command tools, runtime evals, fingerprint scripts, Human ``output`` tools,
``help``). Groups handed over to the reviewer (``launch``, ``open``, ``graph``) are the
reviewer's and are never journalled.

One record per group, ``<directory>/group-<leader pid>-<random>.json``::

    {"owner": {"pid": int, "createTime": float}, "leader": {"pid": int, "createTime": float}}

The record *is* the lease: it is written (in place; a sweep skips a record it cannot parse
yet) right after the spawn and before anything is awaited, and removed once the group's
cleanup is confirmed (the group SIGKILLed while its unreaped leader pinned the id). A sweep
reads every record whose owner — that very process, pid and start time — is gone, kills the
group through ``PsutilProcessTable.kill_group`` (which never signals a reused pid) and
removes the record once that is confirmed. No fsync: the journal protects against a killed
process, not a crashed machine, and after a crash no process survives anyway.

The directory is per user, not per state home, so a group is swept whatever state the next
command uses: ``$XDG_RUNTIME_DIR/artifactize/process-groups`` when that is a private
directory of ours, else ``$XDG_CACHE_HOME/artifactize/process-groups`` (default
``~/.cache``). Records are opened with ``O_NOFOLLOW``; a directory that is not a 0700
directory of ours is refused, and so is every spawn while it is (the group would be left
unrecorded).

One window remains: between the spawn and the write of its record (a few system calls),
a ``kill -9`` leaves the group unrecorded. (Records of older versions were written under
``.new-…`` and renamed; a sweep still reads those.)
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from artifactize.adapters.posix.process_table import PsutilProcessTable
from artifactize.kernel.bounded_json import read_json
from artifactize.ports.sessions import ProcessIdentity

__all__ = ["GROUP_JOURNAL_FOLDER", "GroupJournal", "SweepCounts", "default_journal_directory"]

GROUP_JOURNAL_FOLDER = "process-groups"
RECORD_PREFIX = "group-"
RECORD_SUFFIX = ".json"
_NEW_PREFIX = ".new-"
_RECORD_MAX_BYTES = 4096  # a record larger than this is not one of ours
_PRIVATE_DIRECTORY = 0o700
_PRIVATE_FILE = 0o600
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def default_journal_directory(environ: Mapping[str, str], home: str) -> str:
    """Where this user's group journal lives (see the module docstring)."""
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and _is_private_directory(runtime):
        return os.path.join(runtime, "artifactize", GROUP_JOURNAL_FOLDER)
    cache = environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(cache):
        cache = os.path.join(home, ".cache")
    return os.path.join(cache, "artifactize", GROUP_JOURNAL_FOLDER)


def _is_private_directory(path: str) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and stat.S_IMODE(info.st_mode) & 0o077 == 0
    )


@dataclass(frozen=True)
class SweepCounts:
    swept: int  # groups of dead owners confirmed gone (their records removed)
    unconfirmed: int  # groups that could not be confirmed gone (their records kept)


class GroupJournal:
    """One user's process-group journal. Thread-safe: records have unique names."""

    def __init__(self, directory: str, table: PsutilProcessTable | None = None) -> None:
        self.directory = directory
        self._table = table or PsutilProcessTable()
        self._owner: ProcessIdentity | None = None
        self._swept = False
        self.prepared = False  # ``ready`` succeeded once: later spawns skip it
        self._lock = threading.Lock()

    # --- the owner's side ------------------------------------------------------------------

    def ready(self) -> None:
        """Create the journal directory (0700) or check it; raises ``OSError`` before
        anything is spawned when it cannot hold records. The first call also sweeps."""
        _private_directories(self.directory)
        with self._lock:
            first, self._swept = not self._swept, True
        if first:
            self.sweep()
        self.prepared = True

    def admit(self, leader: ProcessIdentity) -> str:
        """Record the group led by ``leader`` (owned by this process); the record's path."""
        owner = self._own_identity()
        record = {
            "owner": {"pid": owner.pid, "createTime": owner.create_time},
            "leader": {"pid": leader.pid, "createTime": leader.create_time},
        }
        token = secrets.token_hex(6)
        final = os.path.join(self.directory, f"{RECORD_PREFIX}{leader.pid}-{token}{RECORD_SUFFIX}")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
        data = json.dumps(record).encode()
        # Written in place, no temporary name and rename: a sweep skips a record it cannot
        # parse (one still being written, whose owner is alive), exactly as it skipped the
        # temporary file; a kill -9 while writing leaves an unparsable record either way.
        try:
            fd = os.open(final, flags, _PRIVATE_FILE)
        except FileNotFoundError:  # the directory was removed meanwhile: make it again
            _private_directories(self.directory)
            fd = os.open(final, flags, _PRIVATE_FILE)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(final)
            raise
        finally:
            os.close(fd)
        return final

    def release(self, record: str) -> None:
        """The group's cleanup is confirmed: drop its record (the lease)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(record)

    def _own_identity(self) -> ProcessIdentity:
        owner = self._owner
        if owner is None or owner.pid != os.getpid():  # a forked child owns its own groups
            owner = self._owner = self._table.own_identity()
        return owner

    # --- the sweep ---------------------------------------------------------------------

    def sweep(self) -> SweepCounts:
        """Kill the groups of dead owners and drop their records; never a live owner's."""
        swept = unconfirmed = 0
        try:
            names = os.listdir(self.directory)
        except OSError:
            return SweepCounts(0, 0)
        for name in names:
            if not (name.startswith(RECORD_PREFIX) or name.startswith(_NEW_PREFIX)):
                continue
            path = os.path.join(self.directory, name)
            parsed = _read_record(path)
            if parsed is None:
                continue  # not one of ours, or still being written
            owner, leader = parsed
            if self._table.is_alive(owner):
                continue
            if self._table.kill_group(leader):
                self.release(path)
                swept += 1
            else:
                unconfirmed += 1
        return SweepCounts(swept, unconfirmed)


def _private_directories(path: str) -> None:
    """Create ``path`` and its missing parents 0700; the last must be a 0700 directory of
    ours, not a symlink."""
    os.makedirs(os.path.dirname(path), mode=_PRIVATE_DIRECTORY, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, _PRIVATE_DIRECTORY)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)
    if info.st_uid != os.getuid():
        raise PermissionError(errno.EPERM, "not owned by this user", path)
    if stat.S_IMODE(info.st_mode) != _PRIVATE_DIRECTORY:
        os.chmod(path, _PRIVATE_DIRECTORY)


def _read_record(path: str) -> tuple[ProcessIdentity, ProcessIdentity] | None:
    """The record at ``path``, or None for anything else: a link (not followed), a FIFO or
    device planted at a record's name (opened without blocking, never read), a folder."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _RECORD_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > _RECORD_MAX_BYTES:
        return None
    try:
        record = read_json(data)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    owner, leader = _identity(record.get("owner")), _identity(record.get("leader"))
    if owner is None or leader is None:
        return None
    return owner, leader


def _identity(value: Any) -> ProcessIdentity | None:
    if not isinstance(value, dict):
        return None
    pid, created = value.get("pid"), value.get("createTime")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return None
    if isinstance(created, bool) or not isinstance(created, int | float):
        return None
    return ProcessIdentity(pid, float(created))
