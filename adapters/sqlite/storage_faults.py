"""The system's words for a state file SQLite could not read or write.

SQLite reports a full disk as ``database or disk is full`` and most other failures of the
file system as ``disk I/O error``, which names neither the file nor the cause. A storage
fault is an operational error (exit 2) whose one line names the full path of the file and
says what the system says (``No space left on device``, ``Read-only file system``,
``Disk quota exceeded``): the SQLite code says which kind of fault it is, and the file
system holding the file (``statvfs``) tells a full disk from a quota and a read-only mount.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

# SQLite's primary result codes that mean the storage failed (sqlite3.h).
SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14
_PRIMARY_CODE_MASK = 0xFF
STORAGE_CODES = (SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN)


def sqlite_code(error: BaseException) -> int | None:
    """The primary SQLite result code of ``error`` (raw or wrapped by SQLAlchemy)."""
    original = getattr(error, "orig", error)
    code = getattr(original, "sqlite_errorcode", None)
    return code & _PRIMARY_CODE_MASK if isinstance(code, int) else None


def file_system_cause(path: str) -> int | None:
    """ENOSPC when the file system holding ``path`` has no block left for us, EROFS when
    it is mounted read-only, else None (``path`` or its nearest existing parent)."""
    probe = Path(path)
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    try:
        info = os.statvfs(probe)
    except (OSError, AttributeError):  # no statvfs on Windows
        return None
    if info.f_flag & os.ST_RDONLY:
        return errno.EROFS
    if info.f_bavail == 0:
        return errno.ENOSPC
    return None


def system_words(path: str, error: BaseException) -> str:
    """What the system says went wrong with ``path``; SQLite's own words when it cannot
    tell (a damaged file, a lock)."""
    original = getattr(error, "orig", error)
    code = sqlite_code(original)
    cause = file_system_cause(path)
    if cause is None and code == SQLITE_FULL:
        cause = errno.EDQUOT  # SQLite reports a quota as a full disk; this disk has room
    if cause is None and code == SQLITE_READONLY:
        cause = errno.EACCES
    if cause is None or (code is not None and code not in STORAGE_CODES):
        return str(original)
    return f"{os.strerror(cause)} (SQLite: {original})"


def storage_fault(action: str, path: str, error: BaseException) -> str:
    """``Cannot write state /full/path/state.sqlite: No space left on device (SQLite: …)``."""
    return f"Cannot {action} {Path(path).absolute()}: {system_words(path, error)}"
