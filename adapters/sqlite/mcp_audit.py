"""The MCP audit (``ports.mcp_audit``) in the SQLite state file, via SQLAlchemy Core.

Two tables of their own, added beside the state's schema without changing it (its
``user_version`` stays as it is): they are created with ``IF NOT EXISTS`` the first time a
server run opens the state, in one IMMEDIATE transaction, so older states gain them and
racing first opens are harmless. A reader (``mcp log``) never creates them: on a state
without them it reads no sessions.

``mcp_sessions``
    One row per server run: ``id``, ``repo``, ``started_at``, ``ended_at`` and the full
    camelCase document in ``data``.
``mcp_calls``
    One row per call, keyed by (``session_id``, ``ordinal``); written before the call runs,
    completed after it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from adapters.sqlite.connection import (
    BEGIN_DEFERRED,
    BEGIN_IMMEDIATE,
    BEGIN_MODE_OPTION,
    create_engine,
    retry_busy,
    state_file,
)
from adapters.sqlite.state import SqliteStateStores
from ports.clock import Clock
from ports.mcp_audit import McpCallOutcome, McpCallRecord, McpSessionRecord
from ports.state import StateError

AUDIT_SYNCHRONOUS = "NORMAL"

metadata = sa.MetaData()

mcp_sessions = sa.Table(
    "mcp_sessions",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("repo", sa.Text, nullable=False),
    sa.Column("started_at", sa.Text, nullable=False),
    sa.Column("ended_at", sa.Text, nullable=True),
    sa.Column("data", sa.Text, nullable=False),
)

mcp_calls = sa.Table(
    "mcp_calls",
    metadata,
    sa.Column("session_id", sa.Text, sa.ForeignKey("mcp_sessions.id"), primary_key=True),
    sa.Column("ordinal", sa.Integer, primary_key=True),
    sa.Column("tool", sa.Text, nullable=False),
    sa.Column("argument_bytes", sa.Integer, nullable=False),
    sa.Column("started_at", sa.Text, nullable=False),
    sa.Column("completed_at", sa.Text, nullable=True),
    sa.Column("is_error", sa.Boolean, nullable=True),
    sa.Column("duration_ms", sa.Integer, nullable=True),
    sa.Column("summary", sa.Text, nullable=True),
)


def _dump(data: Mapping[str, Any]) -> str:
    return json.dumps(dict(data), ensure_ascii=False, separators=(",", ":"))


class SqliteMcpAudit:
    """The audit tables of one open state."""

    def __init__(self, engine: sa.Engine, database: str, *, has_tables: bool) -> None:
        self._engine = engine
        self._database = database
        self._has_tables = has_tables
        self._connection: sa.Connection | None = None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self._engine.dispose()

    @contextlib.contextmanager
    def _transaction(self, *, write: bool) -> Iterator[sa.Connection]:
        """One transaction on the audit's one connection, kept open while the audit is:
        a server writes two entries per call, and a pool checkout and return per
        transaction (a lock handoff each) cost more than the writes themselves."""
        try:
            if self._connection is None:
                self._connection = self._engine.connect()
            connection = self._connection
            mode = BEGIN_IMMEDIATE if write else BEGIN_DEFERRED
            connection.execution_options(**{BEGIN_MODE_OPTION: mode})
            with connection.begin():
                yield connection
        except sa.exc.DBAPIError as error:
            raise StateError(f"State {self._database}: {error.orig}") from error

    def start_session(self, session: McpSessionRecord) -> None:
        with self._transaction(write=True) as connection:
            connection.execute(
                sa.insert(mcp_sessions).values(
                    id=session.id,
                    repo=session.repo,
                    started_at=session.started_at,
                    ended_at=session.ended_at,
                    data=_dump(session.data),
                )
            )

    def end_session(self, session_id: str, ended_at: str, data: Mapping[str, Any]) -> None:
        with self._transaction(write=True) as connection:
            connection.execute(
                sa.update(mcp_sessions)
                .where(mcp_sessions.c.id == session_id)
                .values(ended_at=ended_at, data=_dump(data))
            )

    def start_call(self, call: McpCallRecord) -> None:
        with self._transaction(write=True) as connection:
            connection.execute(
                sa.insert(mcp_calls).values(
                    session_id=call.session_id,
                    ordinal=call.ordinal,
                    tool=call.tool,
                    argument_bytes=call.argument_bytes,
                    started_at=call.started_at,
                )
            )

    def finish_call(self, session_id: str, ordinal: int, outcome: McpCallOutcome) -> None:
        with self._transaction(write=True) as connection:
            connection.execute(
                sa.update(mcp_calls)
                .where(mcp_calls.c.session_id == session_id, mcp_calls.c.ordinal == ordinal)
                .values(
                    completed_at=outcome.completed_at,
                    is_error=outcome.is_error,
                    duration_ms=outcome.duration_ms,
                    summary=outcome.summary,
                )
            )

    def sessions(self, limit: int) -> list[tuple[McpSessionRecord, int]]:
        if not self._has_tables:
            return []
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
        with self._transaction(write=False) as connection:
            rows = connection.execute(query).all()
        return [(_session(row), int(row.calls)) for row in rows]

    def session(self, session_id: str) -> McpSessionRecord | None:
        if not self._has_tables:
            return None
        with self._transaction(write=False) as connection:
            row = connection.execute(
                sa.select(mcp_sessions).where(mcp_sessions.c.id == session_id)
            ).first()
        return _session(row) if row is not None else None

    def calls(self, session_id: str) -> list[McpCallRecord]:
        if not self._has_tables:
            return []
        with self._transaction(write=False) as connection:
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
        state = self._states.open(state_dir, create=create)
        if state is None:
            return None
        state.close()
        database = state_file(state_dir)
        engine = create_engine(database, create=False)
        event.listen(engine, "connect", _audit_durability)
        try:
            has_tables = retry_busy(lambda: _ensure_tables(engine, create=create))
        except (sa.exc.DBAPIError, StateError) as error:
            engine.dispose()
            original = getattr(error, "orig", error)
            raise StateError(f"Cannot open the MCP audit in {database}: {original}") from error
        except BaseException:
            engine.dispose()
            raise
        return SqliteMcpAudit(engine, database, has_tables=has_tables)


def _audit_durability(dbapi_connection: Any, _record: Any) -> None:
    """WAL with ``synchronous = NORMAL`` on the audit's own connections: a commit survives
    the process (a ``kill -9`` of the server keeps every entry written before its call
    ran) but not a power loss, and costs no fsync, which would otherwise be most of a
    served call's round trip (two commits per call)."""
    dbapi_connection.execute(f"PRAGMA synchronous = {AUDIT_SYNCHRONOUS}")


def _ensure_tables(engine: sa.Engine, *, create: bool) -> bool:
    """Whether the audit tables exist (created first with ``create``)."""
    with engine.connect() as connection:
        mode = BEGIN_IMMEDIATE if create else BEGIN_DEFERRED
        connection.execution_options(**{BEGIN_MODE_OPTION: mode})
        with connection.begin():
            if create:
                metadata.create_all(connection, checkfirst=True)
                return True
            names = set(sa.inspect(connection).get_table_names())
            return {mcp_sessions.name, mcp_calls.name} <= names
