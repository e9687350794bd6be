"""The MCP audit tables in a real SQLite state: made by the state's revision 2 (a state from
before ``artifactize mcp`` is upgraded in place, and a state of the first ``mcp`` builds,
whose tables were created beside revision 1, keeps its audit), never created by a reader of
a missing state, written one statement per entry and read back in order."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest
import sqlalchemy as sa
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from artifactize.adapters.schema_migrations import VERSION_TABLE
from artifactize.adapters.sqlite.connection import STATE_MIGRATIONS
from artifactize.adapters.sqlite.mcp_audit import (
    AUDIT_CHECKPOINT_CALLS,
    AUDIT_SYNCHRONOUS,
    SqliteMcpAudit,
    SqliteMcpAuditStores,
)
from artifactize.adapters.sqlite.schema import mcp_calls, mcp_sessions
from artifactize.adapters.sqlite.state import SqliteStateStores
from artifactize.adapters.sqlite.state_files import STATE_FILE
from artifactize.ports.mcp_audit import McpCallOutcome, McpCallRecord, McpSessionRecord
from artifactize.ports.state import StateError
from tests.support.mcp_world import McpWorld

FIXTURES = Path(__file__).parent / "fixtures" / "migrations"
MCP_TABLES = {"mcp_sessions", "mcp_calls"}
REVISION_BEFORE_MCP = "state_0001"
REVISION_OF_MCP = "state_0002"


def rebuild_pre_mcp_state(state: Path) -> Path:
    """A state file as the release before ``artifactize mcp`` wrote it (revision 1)."""
    state.mkdir(parents=True, exist_ok=True)
    database = state / STATE_FILE
    with sqlite3.connect(database) as raw:
        raw.executescript((FIXTURES / "state-v1.sql").read_text())
    return database


def inspect(database: Path) -> tuple[set[str], list[Any], int]:
    """(tables, the version table's rows, user_version)."""
    engine = sa.create_engine(f"sqlite:///{database}")
    try:
        with engine.connect() as connection:
            names = set(sa.inspect(connection).get_table_names())
            versions = (
                list(connection.exec_driver_sql(f"SELECT version_num FROM {VERSION_TABLE}").all())
                if VERSION_TABLE in names
                else []
            )
            user_version = int(connection.exec_driver_sql("PRAGMA user_version").scalar_one())
    finally:
        engine.dispose()
    return names, versions, user_version


def test_a_reader_of_a_missing_state_creates_nothing(tmp_path: Path) -> None:
    assert SqliteMcpAuditStores().open(str(tmp_path / "state"), create=False) is None
    assert not (tmp_path / "state").exists()


def test_the_revision_is_listed_after_the_first() -> None:
    assert STATE_MIGRATIONS.order[:2] == (REVISION_BEFORE_MCP, REVISION_OF_MCP)


def test_a_pre_mcp_state_upgrades_in_place_and_keeps_its_data(tmp_path: Path) -> None:
    database = rebuild_pre_mcp_state(tmp_path / "state")
    names, versions, user_version = inspect(database)
    assert not names & MCP_TABLES and user_version == 1 and versions == []
    state = SqliteStateStores().open(str(tmp_path / "state"), create=False)
    assert state is not None
    runs = state.list_runs(None, 100, 0)
    state.close()
    assert runs  # the fixture's runs survive the upgrade
    names, versions, user_version = inspect(database)
    assert names >= MCP_TABLES
    assert versions == [(STATE_MIGRATIONS.head,)]  # through the MCP revision to the head
    assert user_version == STATE_MIGRATIONS.ordinal(STATE_MIGRATIONS.head)


def test_a_state_of_the_first_mcp_builds_keeps_its_audit(tmp_path: Path) -> None:
    """Those builds created the two tables with IF NOT EXISTS beside revision 1."""
    database = rebuild_pre_mcp_state(tmp_path / "state")
    engine = sa.create_engine(f"sqlite:///{database}")
    with engine.begin() as connection:
        mcp_sessions.create(connection)
        mcp_calls.create(connection)
        connection.execute(
            sa.insert(mcp_sessions).values(
                id="mcp-old", repo="/r", started_at="2026-01-01", ended_at=None, data="{}"
            )
        )
    engine.dispose()
    audit = SqliteMcpAuditStores().open(str(tmp_path / "state"), create=False)
    assert audit is not None
    assert [record.id for record, _ in audit.sessions(10)] == ["mcp-old"]
    audit.close()
    assert inspect(database)[1] == [(STATE_MIGRATIONS.head,)]


def test_entries_are_written_and_read_back_in_order(tmp_path: Path) -> None:
    state = tmp_path / "state"
    audit = SqliteMcpAuditStores().open(str(state), create=True)
    assert audit is not None
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


def test_a_write_is_committed_at_once_and_a_refused_one_names_the_state(tmp_path: Path) -> None:
    """Each entry is its own commit (another connection sees it before the next write),
    with synchronous = NORMAL; a write the database refuses is a StateError."""
    state = tmp_path / "state"
    audit = SqliteMcpAuditStores().open(str(state), create=True)
    assert audit is not None
    try:
        audit.start_session(McpSessionRecord("mcp-1", "/repo", "2026-01-01", None, {}))
        audit.start_call(McpCallRecord("mcp-1", 1, "read_doc", 2, "s"))
        with sqlite3.connect(state / STATE_FILE) as other:
            assert other.execute("SELECT tool FROM mcp_calls").fetchall() == [("read_doc",)]
        writer = cast(Any, audit)._writer.driver_connection
        synchronous = writer.execute("PRAGMA synchronous").fetchone()[0]
        assert synchronous == {"OFF": 0, "NORMAL": 1, "FULL": 2}[AUDIT_SYNCHRONOUS]
        with pytest.raises(StateError, match=str(state / STATE_FILE)):
            audit.start_call(McpCallRecord("mcp-1", 1, "again", 2, "s"))  # same ordinal
    finally:
        audit.close()


def test_the_writer_checkpoints_after_every_n_completions_and_at_close(tmp_path: Path) -> None:
    """No automatic checkpoint inside an entry's commit: the writer checkpoints after the
    AUDIT_CHECKPOINT_CALLS-th completion (not the one before), and when it closes."""
    state = tmp_path / "state"
    audit = SqliteMcpAuditStores().open(str(state), create=True)
    assert isinstance(audit, SqliteMcpAudit)
    database = state / STATE_FILE
    audit.start_session(McpSessionRecord("mcp-1", "/repo", "2026-01-01", None, {}))
    writer = cast(Any, audit)._writer.driver_connection
    assert writer.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
    outcome = McpCallOutcome("e", False, 1, "x" * 4096)
    for ordinal in range(1, AUDIT_CHECKPOINT_CALLS):
        audit.start_call(McpCallRecord("mcp-1", ordinal, "t", 2, "s"))
        audit.finish_call("mcp-1", ordinal, outcome)
    assert audit.checkpoints == 0
    size_before = database.stat().st_size
    audit.start_call(McpCallRecord("mcp-1", AUDIT_CHECKPOINT_CALLS, "t", 2, "s"))
    audit.finish_call("mcp-1", AUDIT_CHECKPOINT_CALLS, outcome)
    assert audit.checkpoints == 1
    assert database.stat().st_size > size_before  # the WAL's pages are in the file now
    audit.close()
    assert audit.checkpoints == 2


@pytest.mark.anyio
@pytest.mark.process  # MCP over stdio
async def test_mcp_serves_and_audits_on_an_upgraded_pre_mcp_state(tmp_path: Path) -> None:
    """The real server on a state file of the release before it: the open upgrades the
    file, the calls are audited, ``mcp log`` shows them."""
    world = McpWorld(tmp_path)
    rebuild_pre_mcp_state(world.state)
    command = world.cli_args("mcp", "--eval", "doc/review")
    params = StdioServerParameters(command=command[0], args=command[1:], env=world.env())
    async with Client(params) as client:
        result = await client.call_tool("read_doc", {"path": "notes.txt"})
        assert not result.is_error
    assert inspect(world.state / STATE_FILE)[1] == [(STATE_MIGRATIONS.head,)]
    listed = subprocess.run(
        world.cli_args("--json", "mcp", "log"),
        capture_output=True,
        text=True,
        env=world.env(),
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    sessions = json.loads(listed.stdout)
    assert len(sessions) == 1 and sessions[0]["calls"] == 1 and sessions[0]["endedAt"]
    shown = subprocess.run(
        world.cli_args("--json", "mcp", "log", sessions[0]["id"]),
        capture_output=True,
        text=True,
        env=world.env(),
        timeout=120,
    )
    calls = json.loads(shown.stdout)["calls"]
    assert [(c["tool"], c["isError"]) for c in calls] == [("read_doc", False)]
    assert '"notes.txt"' in calls[0]["summary"]
