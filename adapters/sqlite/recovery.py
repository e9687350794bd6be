"""``artifactize doctor --repair``: what can still be read of a damaged state, copied into
a new one, the damaged file kept aside.

SQLite's own ``.recover`` (the ``sqlite3`` shell) is not everywhere, and Debian's 3.40 shell
fails with ``SQL logic error`` even on a sound file; so the copy is ours, through the
standard ``sqlite3`` module:

1. ``state.sqlite`` (and a WAL that holds anything) is renamed to
   ``state.sqlite.damaged-<UTC time>`` (``-wal``); a stale ``-shm`` is removed. Nothing in
   the damaged file is changed; it is opened read-only afterwards.
2. A new state is created as any first ``verify`` would (the schema at its head revision).
3. Every table of the new schema is copied row by row, in rowid order, the columns both
   files have; a page that cannot be read is stepped over (probing ever further rowids,
   at most ``PROBE_STEPS`` doublings), so the rows after it are kept. The old state id is
   kept, so the Runs and records recovered still name their state. A column the damaged
   file's older revision lacks is filled as its migration fills it (a Run's ``created_at``).
   A Run or request whose shared part (its definitions, its body) was not recovered is
   dropped with it (counted as an unreadable stretch of its table).
4. The new file must pass ``quick_check``.

Lost: the rows that lived on the damaged pages (counted per table as ``unreadable``
stretches). A recovered RUNNING Run whose owner is gone is settled by the next reader, as
always.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from artifactize.adapters.sqlite.integrity import (
    check_state_integrity,
    forget_checked,
    quick_check,
)
from artifactize.adapters.sqlite.state_files import STATE_FILE_SUFFIXES, state_file
from artifactize.ports.state import StateError

BATCH_ROWS = 500
PROBE_STEPS = 63  # rowid + 2**k for k < 63 covers every positive 64-bit rowid
_ROWID_MIN = -(2**63)
# The new file's own revision stays, and its own history stamp (a recovered history is
# another history: no plan made before may hold for it).
_SKIPPED_TABLES = ("alembic_version", "history_stamp")
# A row that names a shared part (revision 6) lost on a damaged page cannot be read whole:
# it is lost with it (the requests of a Run lost so first).
_LOST_DEFINITIONS = (
    "SELECT id FROM runs WHERE definitions IS NOT NULL"
    " AND definitions NOT IN (SELECT digest FROM run_definitions)"
)
_NAMING_LOST_PARTS = (
    (
        "requests",
        "DELETE FROM requests WHERE body IS NOT NULL"
        " AND body NOT IN (SELECT digest FROM request_bodies)",
    ),
    ("requests", f"DELETE FROM requests WHERE run_id IN ({_LOST_DEFINITIONS})"),
    ("runs", f"DELETE FROM runs WHERE id IN ({_LOST_DEFINITIONS})"),
)


@dataclass
class Recovery:
    """What ``repair`` did: where the damaged file went, rows copied and stretches lost."""

    damaged: str
    database: str
    copied: dict[str, int] = field(default_factory=dict)
    unreadable: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "damaged": self.damaged,
            "database": self.database,
            "copied": self.copied,
            "unreadable": self.unreadable,
        }


def repair_state(state_dir: str) -> Recovery | None:
    """Recover a damaged state of ``state_dir``; None when it is sound (or absent), and
    then nothing is touched."""
    from artifactize.adapters.sqlite.state import SqliteStateStores

    database = state_file(state_dir)
    if not Path(database).exists():
        return None
    forget_checked(database)
    try:
        check_state_integrity(database, full=True)
    except StateError:
        pass
    else:
        return None
    aside = _move_aside(database)
    created = SqliteStateStores().open(state_dir, create=True)
    assert created is not None  # create=True always opens
    created.close()
    recovery = Recovery(aside, database)
    _copy(aside, database, recovery)
    forget_checked(database)
    problems = quick_check(database)
    if problems:
        raise StateError(f"The recovered state {database} fails quick_check: {problems[0]}")
    return recovery


def _move_aside(database: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = f"{database}.damaged-{stamp}"
    try:
        Path(database).rename(aside)
        wal = Path(f"{database}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            wal.rename(f"{aside}-wal")
        for suffix in STATE_FILE_SUFFIXES[1:]:
            Path(f"{database}{suffix}").unlink(missing_ok=True)
    except OSError as error:
        raise StateError(f"Cannot move {database} aside: {error.strerror}") from error
    return aside


def _copy(source: str, target: str, recovery: Recovery) -> None:
    uri = f"file:{urllib.parse.quote(str(Path(source).absolute()))}?mode=ro"
    old = sqlite3.connect(uri, uri=True)
    new = sqlite3.connect(target, isolation_level=None)
    try:
        old.execute("PRAGMA query_only = ON")
        new.execute("PRAGMA foreign_keys = OFF")
        new.execute("BEGIN IMMEDIATE")
        tables = [
            str(row[0])
            for row in new.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
            )
        ]
        for table in tables:
            if table in _SKIPPED_TABLES:
                continue
            columns = _common_columns(old, new, table)
            if not columns:
                recovery.unreadable[table] = recovery.unreadable.get(table, 0) + 1
                continue
            names = ", ".join(f'"{c}"' for c in columns)
            marks = ", ".join("?" for _ in columns)
            verb = "INSERT OR REPLACE" if table == "state_meta" else "INSERT OR IGNORE"
            insert = f'{verb} INTO "{table}" ({names}) VALUES ({marks})'
            copied = 0
            for row in _salvage(old, table, names, recovery):
                new.execute(insert, row)
                copied += 1
            recovery.copied[table] = copied
        # a state older than revision 3 has no ``created_at`` column: fill it as that
        # revision's migration does (the lists order Runs by it)
        new.execute(
            "UPDATE runs SET created_at = json_extract(data, '$.createdAt')"
            " WHERE created_at IS NULL AND json_valid(data)"
        )
        for table, drop in _NAMING_LOST_PARTS:
            lost = new.execute(drop).rowcount
            if lost > 0:
                recovery.copied[table] = recovery.copied.get(table, lost) - lost
                recovery.unreadable[table] = recovery.unreadable.get(table, 0) + 1
        new.execute("COMMIT")
    finally:
        old.close()
        new.close()


def _common_columns(old: sqlite3.Connection, new: sqlite3.Connection, table: str) -> list[str]:
    wanted = [str(row[1]) for row in new.execute(f'PRAGMA table_info("{table}")')]
    try:
        present = {str(row[1]) for row in old.execute(f'PRAGMA table_info("{table}")')}
    except sqlite3.DatabaseError:
        return []
    return [column for column in wanted if column in present]


def _salvage(
    old: sqlite3.Connection, table: str, names: str, recovery: Recovery
) -> Iterator[tuple[object, ...]]:
    """The readable rows of ``table``, in rowid order, stepping over unreadable pages."""
    query = f'SELECT rowid, {names} FROM "{table}" WHERE rowid > ? ORDER BY rowid LIMIT ?'
    last = _ROWID_MIN
    while True:
        try:
            rows = old.execute(query, (last, BATCH_ROWS)).fetchall()
        except sqlite3.DatabaseError:
            rows = _one_by_one(old, query, last)
            if rows:
                yield from (row[1:] for row in rows)
                last = rows[-1][0]
            recovery.unreadable[table] = recovery.unreadable.get(table, 0) + 1
            following = _next_readable(old, table, last)
            if following is None:
                return
            last = following - 1
            continue
        if not rows:
            return
        yield from (row[1:] for row in rows)
        last = rows[-1][0]


def _one_by_one(old: sqlite3.Connection, query: str, last: int) -> list[tuple[Any, ...]]:
    """The rows readable one at a time from ``last`` on, up to the first that is not."""
    found: list[tuple[Any, ...]] = []
    with contextlib.suppress(sqlite3.DatabaseError):
        while True:
            row = old.execute(query, (last, 1)).fetchone()
            if row is None:
                break
            found.append(row)
            last = row[0]
    return found


def _next_readable(old: sqlite3.Connection, table: str, last: int) -> int | None:
    """The first rowid past ``last`` from which rows read again, or None."""
    probe = f'SELECT rowid FROM "{table}" WHERE rowid >= ? ORDER BY rowid LIMIT 1'
    for step in range(PROBE_STEPS):
        start = last + 2 + (2**step)
        try:
            row = old.execute(probe, (start,)).fetchone()
        except sqlite3.DatabaseError:
            continue
        return None if row is None else int(row[0])
    return None
