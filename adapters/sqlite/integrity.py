"""The state file is checked before its first read, and a damaged one is never written.

A state file that a crash, a bad disk or a stray write garbled must not be read as if it
were sound (wrong verdicts reused) nor written into (the damage spreads, and SQLite's own
recovery has less to work with). So before a process first opens ``state.sqlite`` it is
checked on a read-only connection (``mode=ro`` and ``query_only``: that connection never
writes the file nor checkpoints its WAL into it):

* a file that does not start with SQLite's header (``SQLite format 3``) is not a state;
* a 0-byte file is refused too (it is never taken as a new state: the history it held is
  gone, and the user is told), unless it is younger than ``EMPTY_FILE_GRACE_SECONDS``,
  which is a racing first open that has not written its schema yet: that is waited for;
* ``PRAGMA quick_check`` must answer ``ok`` (every page, record and index entry is
  well-formed; it skips only the index-to-table cross-check of ``integrity_check``).

A refusal is a ``StateDamaged`` (a ``StateError``: exit 2) naming the file and pointing to
``artifactize doctor --repair`` (``adapters/sqlite/recovery.py``). Each file is checked once per process (``run show --wait`` reopens
the state on every poll).

``quick_check`` reads every page, so its cost grows with the history (0.3 s for a 560 MB
state with a warm page cache, 4 s with a cold one), on every command. A check that passed
is therefore remembered beside the file (``<state>.checked``, ``CHECKED_SUFFIX``) with the
identities of the database and its WAL (device, inode, size, modification and change
times), and a later process skips ``quick_check`` while both are the same: any write
changes them (the change time cannot be set back), and a file put in its place is a new
inode. It is remembered only when neither file changed during the check and both are
older than ``RACY_MARGIN_NS`` (git's racy rule: a write within the same timestamp tick
could leave the identity as it was). An empty or absent WAL holds no page (each process
that closes the state empties or removes it, which moves its times); a WAL with pages is
checked every time, as SQLite's read-only open of it moves its change time. ``doctor`` and ``doctor --repair`` always check in
full (``full=True``). What a remembered check no longer catches is damage that changes no
identity (a failing disk under an untouched file); SQLite refuses such a page when it is
read, and ``doctor`` finds it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
import urllib.parse
from pathlib import Path

from artifactize.adapters.file_index import RACY_MARGIN_NS  # the same racy rule
from artifactize.adapters.sqlite.storage_faults import storage_fault
from artifactize.ports.state import StateError

SQLITE_HEADER = b"SQLite format 3\x00"
QUICK_CHECK_PROBLEMS_SHOWN = 1  # quick_check stops at this many problems; one names it
EMPTY_FILE_GRACE_SECONDS = 5.0  # a younger 0-byte file is a racing first open
EMPTY_FILE_POLL_SECONDS = 0.02
CHECK_BUSY_TIMEOUT_SECONDS = 5.0
DOCTOR_ADVICE = (
    "nothing was written to it. `artifactize doctor --repair` copies what can be read into "
    "a new state file and keeps the damaged one aside (docs/robustness.md)."
)

CHECKED_SUFFIX = ".checked"
CHECKED_FORMAT = 1

_checked: set[str] = set()


class StateDamaged(StateError):
    """The state file is damaged or is not a state: refused, never written."""


def damaged(database: str, why: str) -> StateDamaged:
    return StateDamaged(
        f"The state {Path(database).absolute()} is damaged ({why}); {DOCTOR_ADVICE}"
    )


def _wait_while_young_and_empty(database: str) -> int:
    """The file's size, after waiting out a racing first open's empty file."""
    while True:
        info = Path(database).stat()
        if info.st_size > 0 or time.time() - info.st_mtime > EMPTY_FILE_GRACE_SECONDS:
            return info.st_size
        time.sleep(EMPTY_FILE_POLL_SECONDS)


def forget_checked(database: str) -> None:
    """Check ``database`` again on its next open (it was replaced: ``doctor --repair``)."""
    _checked.discard(str(Path(database).absolute()))


def forget_all_checked() -> None:
    """Check every file again on its next open, as a new process would (the in-process CLI
    harness of the tests starts each command this way)."""
    _checked.clear()


def check_state_integrity(database: str, *, full: bool = False) -> None:
    """Refuse ``database`` (an existing file) unless it is a sound SQLite file; see the
    module docstring. Writes nothing to the state; remembers a passed check beside it.
    ``full``: run ``quick_check`` even when a remembered check still holds."""
    key = str(Path(database).absolute())
    if key in _checked and not full:
        return
    try:
        size = _wait_while_young_and_empty(database)
        with Path(database).open("rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except OSError as error:
        raise StateError(f"Cannot read state {key}: {error.strerror}") from error
    if size == 0:
        raise damaged(database, "it is empty: 0 bytes")
    if header != SQLITE_HEADER:
        raise damaged(database, "it is not an SQLite database")
    before = _identities(_stats(database))
    if not full and before is not None and _remembered(database) == before:
        _checked.add(key)
        return
    problems = quick_check(database)
    if problems:
        raise damaged(database, "quick_check: " + " ".join(problems[0].split()))
    _checked.add(key)
    after = _stats(database)
    if before is not None and _identities(after) == before and not _racy(after):
        _remember(database, before)


def _stats(database: str) -> list[os.stat_result | None] | None:
    """No-follow stats of the database and of its WAL; an empty WAL counts as none (each
    process that closes the state truncates or removes it, which moves its times but holds
    no page); None when a file cannot be stat-ed."""
    found: list[os.stat_result | None] = []
    for path in (database, database + "-wal"):
        try:
            info = Path(path).lstat()
        except FileNotFoundError:
            found.append(None)
            continue
        except OSError:
            return None
        found.append(info if info.st_size > 0 or path == database else None)
    return found


def _identities(stats: list[os.stat_result | None] | None) -> list[str | None] | None:
    """The identity of the database and of its WAL (None for an empty or absent WAL)."""
    if stats is None:
        return None
    return [
        None
        if info is None
        else f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"
        for info in stats
    ]


def _racy(stats: list[os.stat_result | None] | None) -> bool:
    """Whether the database or its WAL changed within ``RACY_MARGIN_NS`` of now."""
    if stats is None:
        return True
    now = time.time_ns()
    return any(
        info is not None and max(info.st_mtime_ns, info.st_ctime_ns) >= now - RACY_MARGIN_NS
        for info in stats
    )


def _remembered(database: str) -> list[str | None] | None:
    """The identities a passed check remembered, or None (none, or unreadable)."""
    try:
        kept = json.loads(Path(database + CHECKED_SUFFIX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("format") != CHECKED_FORMAT:
        return None
    found = kept.get("identities")
    return found if isinstance(found, list) else None


def _remember(database: str, identities: list[str | None]) -> None:
    """Write the passed check's identities atomically; a state home that cannot be written
    (read-only, full) is checked in full next time, nothing more."""
    target = Path(database + CHECKED_SUFFIX)
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    text = json.dumps({"format": CHECKED_FORMAT, "identities": identities})
    try:
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(target)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()


def quick_check(database: str) -> list[str]:
    """What ``PRAGMA quick_check`` finds wrong in ``database`` (empty when it is sound),
    read on a read-only connection."""
    uri = f"file:{urllib.parse.quote(str(Path(database).absolute()))}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=CHECK_BUSY_TIMEOUT_SECONDS)
    except sqlite3.Error as error:
        raise StateError(storage_fault("open state", database, error)) from error
    try:
        connection.execute("PRAGMA query_only = ON")
        rows = connection.execute(f"PRAGMA quick_check({QUICK_CHECK_PROBLEMS_SHOWN})").fetchall()
    except sqlite3.DatabaseError as error:
        if isinstance(error, sqlite3.OperationalError) and not _is_damage(error):
            raise StateError(storage_fault("read state", database, error)) from error
        return [str(error)]
    finally:
        connection.close()
    answers = [str(row[0]) for row in rows]
    return [] if answers == ["ok"] else answers


# SQLITE_CORRUPT and SQLITE_NOTADB: the file's content, not the system, is at fault.
_DAMAGE_CODES = (11, 26)


def _is_damage(error: sqlite3.Error) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _DAMAGE_CODES
