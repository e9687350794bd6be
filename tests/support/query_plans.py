"""Which statements read a whole table: the statements an operation issued (captured
through SQLAlchemy's public ``before_cursor_execute`` event), planned by SQLite itself
(``EXPLAIN QUERY PLAN``) on the same database."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine


def table_scans(
    database: Path, operation: Callable[[], object], tables: Collection[str]
) -> list[tuple[str, str]]:
    """Run ``operation``; return ``(sql, plan)`` of each statement it issued that reads one
    of ``tables`` row by row (a bare ``SCAN table`` step: no index, no rowid range). An
    operation that issued no statement naming them fails: the check would hold vacuously."""
    issued: list[tuple[str, Any]] = []

    def capture(_conn: object, _cursor: object, sql: str, params: Any, *_rest: object) -> None:
        if any(table in sql for table in tables) and not sql.lstrip().upper().startswith("INSERT"):
            issued.append((sql, params))

    event.listen(Engine, "before_cursor_execute", capture)
    try:
        operation()
    finally:
        event.remove(Engine, "before_cursor_execute", capture)
    assert issued, f"no statement named {sorted(tables)}"
    bare = {f"SCAN {table}" for table in tables}
    found = []
    with sqlite3.connect(database) as raw:
        for sql, params in issued:
            steps = [str(row[-1]) for row in raw.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
            if bare.intersection(steps):
                found.append((sql, " | ".join(steps)))
    return found
