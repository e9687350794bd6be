"""The process-group journal: every group the CLI starts is recorded before it is admitted,
and the next command sweeps the groups of owners that died.

A ``kill -9`` of artifactize cannot run its cleanup, and a group we started leads a session
of its own, so nothing else ends it: its processes would run on for good. Tool sessions
have kept a journal since they exist (``session_store``); this is the same design for every
other group (command tools, runtime evals, fingerprint scripts, Human ``output`` tools,
``help``). Groups handed over to the reviewer (``launch``, ``open``, ``graph``) are the
reviewer's and are never journalled.

One append-only journal per owner process, ``<directory>/owner-<pid>-<random>.jsonl``, one
JSON document a line::

    {"owner": {"pid": int, "createTime": float}, "leader": {"pid": int, "createTime": float}}
    {"released": {"pid": int, "createTime": float}}

A record line *is* the lease: it is appended (one ``write`` on an ``O_APPEND`` descriptor
kept open) right after the spawn and before anything is awaited, and a release line for the
same leader is appended once the group's cleanup is confirmed (the group SIGKILLed while
its unreaped leader pinned the id). A group is unreleased while its record has no release
after it. When the journal outgrows ``_COMPACT_BYTES`` it is rewritten with its unreleased
records only, under a temporary name then renamed over it (a reader sees the old or the new
journal, never one without a live lease); a journal found unlinked under us is written
again the same way. This costs two small appends per group instead of creating, renaming
and removing a file per group.

A sweep reads every journal whose owner — that very process, pid and start time — is gone,
kills each unreleased group through ``PsutilProcessTable.kill_group`` (which never signals
a reused pid) and removes the journal once every one is confirmed. Single-record files
``group-*.json`` (one record, written by earlier versions) are swept the same way. No
fsync: the journal protects against a killed process, not a crashed machine, and after a
crash no process survives anyway.

The directory is per user, not per state home, so a group is swept whatever state the next
command uses: ``$XDG_RUNTIME_DIR/artifactize/process-groups`` when that is a private
directory of ours, else ``$XDG_CACHE_HOME/artifactize/process-groups`` (default
``~/.cache``). Records are opened with ``O_NOFOLLOW``; a directory that is not a 0700
directory of ours is refused, and so is every spawn while it is (the group would be left
unrecorded).

One window remains: between the spawn and the append of its record (a few system calls),
a ``kill -9`` leaves the group unrecorded.
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
JOURNAL_PREFIX = "owner-"
JOURNAL_SUFFIX = ".jsonl"
RECORD_PREFIX = "group-"  # one record per file, as earlier versions wrote them
_NEW_PREFIX = ".new-"  # a file still being written (a journal's rewrite, an old record)
_COMPACT_BYTES = 64 * 1024  # a journal this long is rewritten with its unreleased records
_JOURNAL_MAX_BYTES = 16 * 1024 * 1024  # a journal larger than this is not one of ours
_PRIVATE_DIRECTORY = 0o700
_PRIVATE_FILE = 0o600
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


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
    """One user's process-group journal, written by this process into its own file.
    Thread-safe: appends and rewrites hold a lock."""

    def __init__(self, directory: str, table: PsutilProcessTable | None = None) -> None:
        self.directory = directory
        self._table = table or PsutilProcessTable()
        self._owner: ProcessIdentity | None = None
        self._swept = False
        self.prepared = False  # ``ready`` succeeded once: later spawns skip it
        self._lock = threading.Lock()
        self._path: str | None = None  # this process's journal, once it has a record
        self._fd = -1
        self._fd_pid = 0  # the process that opened ``_fd``: a forked child opens its own
        self._size = 0
        self._unreleased: dict[ProcessIdentity, bytes] = {}  # leader -> its record line

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
        """Record the group led by ``leader`` (owned by this process); the journal's path."""
        owner = self._own_identity()
        record = {
            "owner": {"pid": owner.pid, "createTime": owner.create_time},
            "leader": {"pid": leader.pid, "createTime": leader.create_time},
        }
        line = json.dumps(record).encode() + b"\n"
        with self._lock:
            path = self._journal()
            self._append(line)
            self._unreleased[leader] = line
        return path

    def release(self, leader: ProcessIdentity) -> None:
        """The group's cleanup is confirmed: end its lease. A release that cannot be written
        leaves the record (a later sweep finds that leader gone or reused, and signals
        nothing); the journal's next rewrite drops it."""
        released = {"released": {"pid": leader.pid, "createTime": leader.create_time}}
        with self._lock:
            if self._unreleased.pop(leader, None) is None or self._fd_pid != os.getpid():
                return
            if self._fd < 0:
                return  # a write failed: the next record rewrites the journal without it
            with contextlib.suppress(OSError):
                self._append(json.dumps(released).encode() + b"\n")
                if self._size > _COMPACT_BYTES:
                    self._rewrite()

    def _own_identity(self) -> ProcessIdentity:
        owner = self._owner
        if owner is None or owner.pid != os.getpid():  # a forked child owns its own groups
            owner = self._owner = self._table.own_identity()
        return owner

    def _journal(self) -> str:
        """This process's journal, open for appending (under the lock); made when missing
        (a new process, a forked child, the directory or the file removed meanwhile)."""
        if self._fd_pid != os.getpid():  # a forked child: the parent's journal is not ours
            if self._fd >= 0:
                os.close(self._fd)
            self._fd, self._path, self._unreleased = -1, None, {}
        if self._fd >= 0 and self._path is not None and _same_file(self._fd, self._path):
            return self._path
        if self._path is None:
            name = f"{JOURNAL_PREFIX}{os.getpid()}-{secrets.token_hex(6)}{JOURNAL_SUFFIX}"
            self._path = os.path.join(self.directory, name)
        self._rewrite()  # a new journal, or one unlinked under us: its records written again
        return self._path

    def _append(self, line: bytes) -> None:
        try:
            _write_all(self._fd, line)
        except OSError:  # maybe a line cut short: the next record goes to a rewritten journal
            os.close(self._fd)
            self._fd = -1
            raise
        self._size += len(line)

    def _rewrite(self) -> None:
        """Write the unreleased records to a new file, rename it over the journal (a reader
        sees the old or the new one), and append to it from now on."""
        assert self._path is not None
        building = os.path.join(self.directory, f"{_NEW_PREFIX}{secrets.token_hex(6)}")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | _NOFOLLOW | _CLOEXEC
        try:
            fd = os.open(building, flags, _PRIVATE_FILE)
        except FileNotFoundError:  # the directory was removed meanwhile: make it again
            _private_directories(self.directory)
            fd = os.open(building, flags, _PRIVATE_FILE)
        records = b"".join(self._unreleased.values())
        try:
            _write_all(fd, records)
            os.rename(building, self._path)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(building)
            raise
        if self._fd >= 0:
            os.close(self._fd)
        self._fd, self._fd_pid, self._size = fd, os.getpid(), len(records)

    # --- the sweep ---------------------------------------------------------------------

    def sweep(self) -> SweepCounts:
        """Kill the groups of dead owners and drop their journals; never a live owner's."""
        swept = unconfirmed = 0
        try:
            names = os.listdir(self.directory)
        except OSError:
            return SweepCounts(0, 0)
        for name in names:
            if not name.startswith((JOURNAL_PREFIX, RECORD_PREFIX, _NEW_PREFIX)):
                continue
            path = os.path.join(self.directory, name)
            if path == self._path:
                continue  # this process's own journal
            found = _read_journal(path)
            if found is None:
                continue  # not one of ours, or still being written
            owner, records = found
            if self._table.is_alive(owner):
                continue
            left = 0
            for record_owner, leader in records:
                if record_owner != owner and self._table.is_alive(record_owner):
                    left += 1
                elif self._table.kill_group(leader):
                    swept += 1
                else:
                    left += 1
                    unconfirmed += 1
            if not left:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _same_file(fd: int, path: str) -> bool:
    """Whether ``path`` still names the open file ``fd`` (not removed nor replaced)."""
    try:
        named = os.lstat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def _read_journal(
    path: str,
) -> tuple[ProcessIdentity, list[tuple[ProcessIdentity, ProcessIdentity]]] | None:
    """A journal's (or a single-record file's) owner, as its first record names it, and its
    unreleased records (owner, leader) in order; None when it holds no record (not one of
    ours, or still being written). Lines that are not records (a line cut short, another
    format) are skipped."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _JOURNAL_MAX_BYTES:
            return None
        data = os.read(fd, info.st_size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    first_owner: ProcessIdentity | None = None
    unreleased: dict[ProcessIdentity, ProcessIdentity] = {}  # leader -> owner
    for line in data.splitlines():
        try:
            entry = read_json(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        released = _identity(entry.get("released"))
        if released is not None:
            unreleased.pop(released, None)
            continue
        owner, leader = _identity(entry.get("owner")), _identity(entry.get("leader"))
        if owner is not None and leader is not None:
            unreleased[leader] = owner
            first_owner = first_owner or owner
    if first_owner is None:
        return None
    return first_owner, [(owner, leader) for leader, owner in unreleased.items()]


def _identity(value: Any) -> ProcessIdentity | None:
    if not isinstance(value, dict):
        return None
    pid, created = value.get("pid"), value.get("createTime")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return None
    if isinstance(created, bool) or not isinstance(created, int | float):
        return None
    return ProcessIdentity(pid, float(created))
