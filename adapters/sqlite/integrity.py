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
"""

from __future__ import annotations

import sqlite3
import time
import urllib.parse
from pathlib import Path

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


def check_state_integrity(database: str) -> None:
    """Refuse ``database`` (an existing file) unless it is a sound SQLite file; see the
    module docstring. Writes nothing."""
    key = str(Path(database).absolute())
    if key in _checked:
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
    problems = quick_check(database)
    if problems:
        raise damaged(database, "quick_check: " + " ".join(problems[0].split()))
    _checked.add(key)


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
