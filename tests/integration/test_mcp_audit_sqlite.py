"""The MCP audit tables in a real SQLite state: added beside the state's schema, never by a
reader, and read back in order."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from adapters.sqlite.mcp_audit import SqliteMcpAuditStores
from adapters.sqlite.state import SqliteStateStores
from ports.mcp_audit import McpCallOutcome, McpCallRecord, McpSessionRecord


def user_version(state: Path) -> int:
    engine = sa.create_engine(f"sqlite:///{state / 'state.sqlite'}")
    try:
        with engine.connect() as connection:
            return int(connection.exec_driver_sql("PRAGMA user_version").scalar_one())
    finally:
        engine.dispose()


def tables(state: Path, version_before: int | None = None) -> set[str]:
    engine = sa.create_engine(f"sqlite:///{state / 'state.sqlite'}")
    try:
        with engine.connect() as connection:
            names = set(sa.inspect(connection).get_table_names())
            version = connection.exec_driver_sql("PRAGMA user_version").scalar_one()
    finally:
        engine.dispose()
    if version_before is not None:
        assert version == version_before  # the state's own schema version is untouched
    return names


def test_a_reader_creates_nothing(tmp_path: Path) -> None:
    assert SqliteMcpAuditStores().open(str(tmp_path / "state"), create=False) is None
    assert not (tmp_path / "state").exists()


def test_an_existing_state_gains_the_tables_and_reads_them_back(tmp_path: Path) -> None:
    state = tmp_path / "state"
    existing = SqliteStateStores().open(str(state), create=True)
    assert existing is not None
    existing.close()
    before = user_version(state)
    reader = SqliteMcpAuditStores().open(str(state), create=False)
    assert reader is not None and reader.sessions(10) == [] and reader.calls("x") == []
    reader.close()
    assert "mcp_sessions" not in tables(state, before)  # a reader never adds them

    audit = SqliteMcpAuditStores().open(str(state), create=True)
    assert audit is not None
    assert {"mcp_sessions", "mcp_calls", "runs", "executions"} <= tables(state, before)
    for number in (1, 2):
        audit.start_session(
            McpSessionRecord(f"mcp-{number}", "/repo", f"2026-01-0{number}", None, {"n": number})
        )
    for ordinal in (2, 1):
        audit.start_call(McpCallRecord("mcp-1", ordinal, f"t{ordinal}", 10 * ordinal, "s"))
    audit.finish_call("mcp-1", 1, McpCallOutcome("e", True, 5, '{"content":[]}'))
    audit.end_session("mcp-1", "2026-01-03", {"n": 1, "problems": ["p"]})
    audit.close()

    again = SqliteMcpAuditStores().open(str(state), create=False)
    assert again is not None
    listed = again.sessions(10)
    assert [(record.id, count) for record, count in listed] == [("mcp-2", 0), ("mcp-1", 2)]
    assert [record.id for record, _ in again.sessions(1)] == ["mcp-2"]
    first = again.session("mcp-1")
    assert first is not None and first.ended_at == "2026-01-03"
    assert first.to_json()["problems"] == ["p"]
    calls = again.calls("mcp-1")
    assert [(c.ordinal, c.tool, c.is_error, c.completed_at) for c in calls] == [
        (1, "t1", True, "e"),
        (2, "t2", None, None),
    ]
    assert again.session("nope") is None
    again.close()
