"""What SQLite reads for an operation: the statements it issued (captured through
SQLAlchemy's public ``before_cursor_execute`` event), planned by SQLite itself
(``EXPLAIN QUERY PLAN``) on the same database."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine


def query_plans(
    database: Path,
    operation: Callable[[], object],
    wanted: Callable[[str], bool],
) -> list[tuple[str, list[str]]]:
    """Run ``operation``; return ``(sql, steps)`` of each statement it issued that
    ``wanted`` keeps, with the steps of SQLite's plan. An operation that issued none fails:
    a check of their plans would hold vacuously."""
    issued: list[tuple[str, Any]] = []

    def capture(_conn: object, _cursor: object, sql: str, params: Any, *_rest: object) -> None:
        if wanted(sql):
            issued.append((sql, params))

    event.listen(Engine, "before_cursor_execute", capture)
    try:
        operation()
    finally:
        event.remove(Engine, "before_cursor_execute", capture)
    assert issued, "the operation issued no statement of those asked for"
    with sqlite3.connect(database) as raw:
        return [
            (sql, [str(row[-1]) for row in raw.execute(f"EXPLAIN QUERY PLAN {sql}", params)])
            for sql, params in issued
        ]


def table_scans(
    database: Path, operation: Callable[[], object], tables: Collection[str]
) -> list[tuple[str, str]]:
    """Run ``operation``; return ``(sql, plan)`` of each statement it issued (INSERTs
    aside) naming one of ``tables`` that reads one of them row by row: a bare
    ``SCAN table`` step, no index, no rowid range."""

    def names_one(sql: str) -> bool:
        return any(table in sql for table in tables) and not sql.lstrip().upper().startswith(
            "INSERT"
        )

    bare = {f"SCAN {table}" for table in tables}
    return [
        (sql, " | ".join(steps))
        for sql, steps in query_plans(database, operation, names_one)
        if bare.intersection(steps)
    ]
