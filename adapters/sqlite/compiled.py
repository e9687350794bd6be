"""Statements compiled once for SQLite and run through the driver's own path.

``Connection.execute`` of a cached Core statement still builds an execution context from
the compiled form, processes each bound value and makes a result from it: about 12 µs a
statement idle, 27 µs under load, against 5 µs through ``Connection.exec_driver_sql``
(public API; its ``before_cursor_execute`` and ``commit`` events fire as for any other
statement, so the tests that count statements and plan them see these too). An executed
eval issues four such statements (its claim's insert, its settlement's execution and
request writes), so those go through here. Every column they bind is ``Text``, ``Integer``
or ``Float``, which SQLite's driver binds as they are (SQLAlchemy converts none of them)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite as sqlite_dialect

_DIALECT = sqlite_dialect.dialect()


class DriverStatement:
    """``statement`` compiled once (``columns``: the SET or VALUES columns a statement
    without ``values()`` takes), executed with a mapping of its bound names."""

    def __init__(
        self, statement: sa.Insert | sa.Update, columns: Collection[str] | None = None
    ) -> None:
        compiled = statement.compile(
            dialect=_DIALECT, column_keys=None if columns is None else list(columns)
        )
        if compiled.post_compile_params or compiled.literal_execute_params:
            raise ValueError(f"A statement expanded at execution cannot be fixed: {compiled}")
        self.sql: str = str(compiled)
        self.names: tuple[str, ...] = tuple(compiled.positiontup or ())

    def execute(self, connection: sa.Connection, values: Mapping[str, Any]) -> sa.CursorResult[Any]:
        return connection.exec_driver_sql(self.sql, tuple(values[name] for name in self.names))

    def execute_rows(
        self, connection: sa.Connection, rows: list[tuple[Any, ...]]
    ) -> sa.CursorResult[Any]:
        """One ``executemany`` of the driver, each row a tuple in ``names``' order."""
        return connection.exec_driver_sql(self.sql, rows)


class DriverUpdates:
    """An UPDATE without ``values()`` whose SET columns are the parameters' keys not bound
    in its WHERE (``b_``): one ``DriverStatement`` per set of columns, made on first use."""

    def __init__(self, statement: sa.Update) -> None:
        self._statement = statement
        self._compiled: dict[tuple[str, ...], DriverStatement] = {}

    def execute(self, connection: sa.Connection, values: Mapping[str, Any]) -> sa.CursorResult[Any]:
        columns = tuple(name for name in values if not name.startswith("b_"))
        found = self._compiled.get(columns)
        if found is None:
            found = self._compiled[columns] = DriverStatement(self._statement, columns)
        return found.execute(connection, values)
