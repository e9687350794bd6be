"""The MCP audit (``ports.mcp_audit``) in the SQLite state file.

Its two tables, ``mcp_sessions`` and ``mcp_calls`` (``adapters/sqlite/schema.py``), are made
by the state's revision 2 (``migrations/versions/state_0002_mcp_audit.py``): opening the
audit opens the state first, which upgrades an older file in place. A reader (``mcp log``)
on a state that does not exist yet reads no sessions and creates nothing.

A server writes two entries per tools/call (one before the call runs, its completion after),
so the writes are the served path's hot spot (``bench/mcp.py``). Each is one statement in
SQLite's autocommit mode (a statement is its own transaction: it takes the write lock up
front and waits on ``busy_timeout`` like a ``BEGIN IMMEDIATE``), on one DBAPI connection
kept open for the server run, with SQL compiled once from the Core tables: SQLAlchemy's
per-execution work (a transaction object, the begin hook, result handling) cost about ten
times the write itself. ``synchronous = NORMAL`` on that connection: a commit in WAL
survives a crash or ``kill -9`` of the server, not a power loss, and costs no fsync.
Reads (``mcp log``) go through SQLAlchemy Core as everywhere else.

SQLite's automatic WAL checkpoint would run inside whichever commit crosses its threshold
(about every 190 calls here) and fsync for 10-25 ms there, on a call's path when that commit
is an entry written before its call. The writer turns it off and checkpoints itself
(``PASSIVE``: it never waits for readers or writers) after every AUDIT_CHECKPOINT_CALLS
completions, which over stdio are written after the answer, and when it closes. Any other
connection to the state keeps checkpointing as usual.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import sqlite as sqlite_dialect

from artifactize.adapters.sqlite.connection import BEGIN_DEFERRED, BEGIN_MODE_OPTION, create_engine
from artifactize.adapters.sqlite.schema import mcp_calls, mcp_sessions
from artifactize.adapters.sqlite.state import SqliteStateStores
from artifactize.adapters.sqlite.state_files import state_file
from artifactize.ports.clock import Clock
from artifactize.ports.mcp_audit import McpCallOutcome, McpCallRecord, McpSessionRecord
from artifactize.ports.state import StateError

AUDIT_SYNCHRONOUS = "NORMAL"
AUDIT_CHECKPOINT_CALLS = 100

_NAMED = sqlite_dialect.dialect(paramstyle="named")


def _compiled(statement: Any) -> str:
    """A Core statement as SQLite text with ``:name`` parameters, compiled once."""
    return str(statement.compile(dialect=_NAMED))


def _binds(*names: str) -> dict[str, Any]:
    return {name: sa.bindparam(name) for name in names}


_SESSION_COLUMNS = ("id", "repo", "started_at", "ended_at", "data")
_CALL_START_COLUMNS = ("session_id", "ordinal", "tool", "argument_bytes", "started_at")
_CALL_END_COLUMNS = ("completed_at", "is_error", "duration_ms", "summary")
START_SESSION_SQL = _compiled(sa.insert(mcp_sessions).values(_binds(*_SESSION_COLUMNS)))
END_SESSION_SQL = _compiled(
    sa.update(mcp_sessions)
    .where(mcp_sessions.c.id == sa.bindparam("session_id"))
    .values(_binds("ended_at", "data"))
)
START_CALL_SQL = _compiled(sa.insert(mcp_calls).values(_binds(*_CALL_START_COLUMNS)))
FINISH_CALL_SQL = _compiled(
    sa.update(mcp_calls)
    .where(
        mcp_calls.c.session_id == sa.bindparam("call_session"),
        mcp_calls.c.ordinal == sa.bindparam("call_ordinal"),
    )
    .values(_binds(*_CALL_END_COLUMNS))
)


def _dump(data: Mapping[str, Any]) -> str:
    return json.dumps(dict(data), ensure_ascii=False, separators=(",", ":"))


class SqliteMcpAudit:
    """The audit tables of one open state."""

    def __init__(self, engine: sa.Engine, database: str) -> None:
        self._engine = engine
        self._database = database
        self._connection: sa.Connection | None = None
        self._writer: Any = None  # the pool's DBAPI connection the writes use
        self._completions = 0
        self.checkpoints = 0

    def close(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(sqlite3.Error):
                self._checkpoint()
            self._writer.close()
            self._writer = None
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self._engine.dispose()

    def _write(self, statement: str, parameters: Mapping[str, Any]) -> None:
        """One statement, committed on its own (autocommit: the driver emits no BEGIN)."""
        try:
            if self._writer is None:
                self._writer = self._engine.raw_connection()
                self._writer.driver_connection.execute("PRAGMA wal_autocheckpoint = 0")
            driver = self._writer.driver_connection
            driver.execute(statement, parameters)
        except (sqlite3.Error, sa.exc.DBAPIError) as error:
            raise StateError(f"State {self._database}: {getattr(error, 'orig', error)}") from error

    def _checkpoint(self) -> None:
        self._writer.driver_connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        self.checkpoints += 1

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sa.Connection]:
        """One read transaction on the audit's one SQLAlchemy connection."""
        try:
            if self._connection is None:
                self._connection = self._engine.connect()
            connection = self._connection
            connection.execution_options(**{BEGIN_MODE_OPTION: BEGIN_DEFERRED})
            with connection.begin():
                yield connection
        except sa.exc.DBAPIError as error:
            raise StateError(f"State {self._database}: {error.orig}") from error

    def start_session(self, session: McpSessionRecord) -> None:
        self._write(
            START_SESSION_SQL,
            {
                "id": session.id,
                "repo": session.repo,
                "started_at": session.started_at,
                "ended_at": session.ended_at,
                "data": _dump(session.data),
            },
        )

    def end_session(self, session_id: str, ended_at: str, data: Mapping[str, Any]) -> None:
        self._write(
            END_SESSION_SQL, {"session_id": session_id, "ended_at": ended_at, "data": _dump(data)}
        )

    def start_call(self, call: McpCallRecord) -> None:
        self._write(
            START_CALL_SQL,
            {
                "session_id": call.session_id,
                "ordinal": call.ordinal,
                "tool": call.tool,
                "argument_bytes": call.argument_bytes,
                "started_at": call.started_at,
            },
        )

    def finish_call(self, session_id: str, ordinal: int, outcome: McpCallOutcome) -> None:
        self._write(
            FINISH_CALL_SQL,
            {
                "call_session": session_id,
                "call_ordinal": ordinal,
                "completed_at": outcome.completed_at,
                "is_error": outcome.is_error,
                "duration_ms": outcome.duration_ms,
                "summary": outcome.summary,
            },
        )
        self._completions += 1
        if self._completions % AUDIT_CHECKPOINT_CALLS == 0:
            try:
                self._checkpoint()
            except sqlite3.Error as error:
                raise StateError(f"State {self._database}: {error}") from error

    def sessions(self, limit: int) -> list[tuple[McpSessionRecord, int]]:
        count = (
            sa.select(sa.func.count())
            .where(mcp_calls.c.session_id == mcp_sessions.c.id)
            .scalar_subquery()
        )
        query = (
            sa.select(mcp_sessions, count.label("calls"))
            .order_by(
                mcp_sessions.c.started_at.desc(), sa.literal_column("mcp_sessions.rowid").desc()
            )
            .limit(limit)
        )
        with self._reading() as connection:
            rows = connection.execute(query).all()
        return [(_session(row), int(row.calls)) for row in rows]

    def session(self, session_id: str) -> McpSessionRecord | None:
        with self._reading() as connection:
            row = connection.execute(
                sa.select(mcp_sessions).where(mcp_sessions.c.id == session_id)
            ).first()
        return _session(row) if row is not None else None

    def calls(self, session_id: str) -> list[McpCallRecord]:
        with self._reading() as connection:
            rows = connection.execute(
                sa.select(mcp_calls)
                .where(mcp_calls.c.session_id == session_id)
                .order_by(mcp_calls.c.ordinal)
            ).all()
        return [
            McpCallRecord(
                session_id=row.session_id,
                ordinal=row.ordinal,
                tool=row.tool,
                argument_bytes=row.argument_bytes,
                started_at=row.started_at,
                completed_at=row.completed_at,
                is_error=None if row.is_error is None else bool(row.is_error),
                duration_ms=row.duration_ms,
                summary=row.summary,
            )
            for row in rows
        ]


def _session(row: Any) -> McpSessionRecord:
    try:
        data = json.loads(row.data)
    except ValueError:
        data = {}
    return McpSessionRecord(row.id, row.repo, row.started_at, row.ended_at, data)


class SqliteMcpAuditStores:
    """Opens the audit of a state: the state itself is opened (and, with ``create``, made)
    by ``SqliteStateStores`` first, so its checks and schema rules apply unchanged."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._states = SqliteStateStores(clock=clock)

    def open(self, state_dir: str, *, create: bool) -> SqliteMcpAudit | None:
        state = self._states.open(state_dir, create=create)  # at the head revision after
        if state is None:
            return None
        state.close()
        database = state_file(state_dir)
        engine = create_engine(database, create=False)
        event.listen(engine, "connect", _audit_durability)
        return SqliteMcpAudit(engine, database)


def _audit_durability(dbapi_connection: Any, _record: Any) -> None:
    """``synchronous = NORMAL`` on the audit's own connections (the state file is in WAL):
    a commit survives the process (a ``kill -9`` of the server keeps every entry written
    before its call ran) but not a power loss, and costs no fsync, which would otherwise be
    most of a served call's round trip (two commits per call)."""
    dbapi_connection.execute(f"PRAGMA synchronous = {AUDIT_SYNCHRONOUS}")
