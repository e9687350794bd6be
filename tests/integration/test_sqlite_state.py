"""The SQLite state store on real files: opening, claims, reuse history, GC and a real
multi-process claim race."""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event as sa_event
from sqlalchemy.dialects import sqlite as sa_sqlite
from sqlalchemy.engine import Engine

from artifactize.adapters.sqlite import connection as sqlite_open
from artifactize.adapters.sqlite.integrity import EMPTY_FILE_GRACE_SECONDS, StateDamaged
from artifactize.adapters.sqlite.rows import request_data
from artifactize.adapters.sqlite.state import (
    LISTED_RUNS_KEPT,
    OWNER_DIED_CODE,
    OWNER_DIED_ERROR,
    SqliteStateStore,
    SqliteStateStores,
)
from artifactize.adapters.sqlite.state_files import STATE_FILE
from artifactize.adapters.utc_timestamps import utc_now, utc_timestamp
from artifactize.kernel.document_codec import (
    execution_from_json,
    execution_json,
    request_from_json,
    run_changed,
    run_from_json,
    run_json,
)
from artifactize.ports.documents import Execution
from artifactize.ports.ids import EvalId, ExecutionId, RequestId, ReuseKey, RunId
from artifactize.ports.state import (
    Claim,
    ClaimOutcome,
    ExecutionRecord,
    KeyInUse,
    RequestRecord,
    RunRecord,
    StateError,
    StateStore,
    StateStores,
)
from artifactize.ports.statuses import ExecutionStatus, RequestStatus, RunStatus
from tests.fakes.processes import TickingClock
from tests.support.processes import no_process_left_behind
from tests.support.query_plans import query_plans

HEAD_ORDINAL = len(sqlite_open.STATE_MIGRATIONS.order)  # user_version at the head revision

REPO_ROOT = Path(__file__).resolve().parents[2]
START_NS = 1_767_225_600 * 1_000_000_000  # 2026-01-01T00:00:00Z
RECORD_DATA = {"verdict": "GREEN", "note": "é" * 10}


def serialized_size(data: dict[str, Any]) -> int:
    """What the store counts: UTF-8 bytes of compact JSON (non-ASCII kept)."""
    return len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode())


RECORD_SIZE = serialized_size(RECORD_DATA)


def at(second: int) -> str:
    return utc_timestamp(START_NS + second * 1_000_000_000)


def execution(
    execution_id: str,
    key: str | None = "k",
    *,
    pid: int = 4242,
    start: float = 100.5,
    data: dict[str, Any] | None = None,
) -> ExecutionRecord:
    return ExecutionRecord(
        id=ExecutionId(execution_id),
        key=None if key is None else ReuseKey(key),
        eval_def_hash="hash",
        status=ExecutionStatus.RUNNING,
        owner_pid=pid,
        owner_start_time=start,
        backend=None,
        completed_at=None,
        data=execution_from_json({"id": execution_id} if data is None else data),
    )


def settled(
    running: ExecutionRecord,
    status: str = "GREEN",
    *,
    completed_at: str | None = None,
    data: dict[str, Any] | None = None,
    key: str | None = None,
) -> ExecutionRecord:
    return replace(
        running,
        status=ExecutionStatus(status),
        completed_at=completed_at or at(0),
        data=execution_from_json(RECORD_DATA if data is None else data),
        key=running.key if key is None else ReuseKey(key),
    )


def alive(_pid: int, _start: float) -> bool:
    return True


def dead(_pid: int, _start: float) -> bool:
    return False


OpenStore = Callable[..., SqliteStateStore]


@pytest.fixture
def open_store(tmp_path: Path) -> Iterator[OpenStore]:
    """Opens (create=True) a store in ``tmp_path/state`` with the given caps; closes all."""
    opened: list[SqliteStateStore] = []

    def _open(state_dir: Path | None = None, **limits: int) -> SqliteStateStore:
        clock = TickingClock(datetime.fromtimestamp(START_NS // 1_000_000_000, UTC))
        stores = SqliteStateStores(clock=clock, **limits)
        store = stores.open(str(state_dir or tmp_path / "state"), create=True)
        assert store is not None
        opened.append(store)
        return store

    yield _open
    for store in opened:
        store.close()


def record(store: SqliteStateStore, key: str, execution_id: str, **settle: Any) -> ExecutionRecord:
    """Claim ``key`` and settle it GREEN into the history."""
    running = execution(execution_id, key)
    assert store.claim(running, alive).outcome is ClaimOutcome.OWNED
    done = settled(running, **settle)
    assert store.complete_execution(done, record=True) is True
    return done


def keys_in_history(store: SqliteStateStore) -> set[str]:
    return {str(latest.key) for latest, _count in store.latest_records()}


def raw(database: Path, sql: str) -> list[Any]:
    connection = sqlite3.connect(database)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


# --- timestamps ------------------------------------------------------------------------


def test_utc_timestamp_has_nine_fractional_digits() -> None:
    seconds = int(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp())
    assert utc_timestamp(seconds * 1_000_000_000 + 123_456_789) == "2026-01-02T03:04:05.123456789Z"
    assert utc_timestamp(0) == "1970-01-01T00:00:00.000000000Z"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", utc_now())
    with pytest.raises(ValueError, match="before 1970"):
        utc_timestamp(-1)


# --- opening ---------------------------------------------------------------------------


def test_create_then_reopen_keeps_the_state(tmp_path: Path) -> None:
    state_dir = tmp_path / "home" / "state"
    stores: StateStores = SqliteStateStores()
    store = SqliteStateStores().open(str(state_dir), create=True)
    assert store is not None
    state_id = store.state_id()
    store.create_run(
        RunRecord(RunId("run-a"), "/repo", RunStatus.RUNNING, run_from_json({"createdAt": at(1)})),
        [],
    )
    store.close()

    assert state_dir.stat().st_mode & 0o777 == 0o700
    database = state_dir / "state.sqlite"
    assert raw(database, "PRAGMA user_version") == [(HEAD_ORDINAL,)]
    assert raw(database, "PRAGMA journal_mode") == [("wal",)]

    for create in (False, True):
        again = stores.open(str(state_dir), create=create)
        assert again is not None
        assert again.state_id() == state_id
        run = again.get_run(RunId("run-a"))
        assert run is not None and run_json(run.data) == {"createdAt": at(1)}
        assert isinstance(again, SqliteStateStore)
        again.close()


def test_state_ids_differ_between_states(open_store: OpenStore, tmp_path: Path) -> None:
    first = open_store(tmp_path / "one")
    second = open_store(tmp_path / "two")
    assert first.state_id() != second.state_id()


def test_reader_open_of_a_missing_state_creates_nothing(tmp_path: Path) -> None:
    state_dir = tmp_path / "absent" / "state"
    assert SqliteStateStores().open(str(state_dir), create=False) is None
    assert not (tmp_path / "absent").exists()

    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    assert SqliteStateStores().open(str(empty_dir), create=False) is None
    assert list(empty_dir.iterdir()) == []


@pytest.mark.parametrize("create", [True, False])
def test_an_empty_state_file_is_refused_never_replaced(tmp_path: Path, create: bool) -> None:
    """A 0-byte state.sqlite lost its history: it is named and refused, not taken as new
    (an empty file younger than the grace is a racing first open, waited for)."""
    database = tmp_path / "state.sqlite"
    database.write_bytes(b"")
    old = time.time() - EMPTY_FILE_GRACE_SECONDS - 1
    os.utime(database, (old, old))
    with pytest.raises(StateDamaged, match=r"state\.sqlite is damaged \(it is empty: 0 bytes\)"):
        SqliteStateStores().open(str(tmp_path), create=create)
    assert database.read_bytes() == b""


@pytest.mark.parametrize("create", [True, False])
def test_symlinked_database_is_refused(open_store: OpenStore, tmp_path: Path, create: bool) -> None:
    open_store(tmp_path / "real").close()
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "state.sqlite").symlink_to(tmp_path / "real" / "state.sqlite")
    with pytest.raises(StateError) as refused:
        SqliteStateStores().open(str(linked), create=create)
    assert str(refused.value) == f"State files must be regular files: {linked / 'state.sqlite'}"


@pytest.mark.parametrize("suffix", ["-wal", "-shm"])
def test_non_regular_companion_file_is_refused(
    open_store: OpenStore, tmp_path: Path, suffix: str
) -> None:
    open_store().close()
    companion = tmp_path / "state" / f"state.sqlite{suffix}"
    companion.unlink(missing_ok=True)
    if suffix == "-wal":
        os.mkfifo(companion)  # SQLite would block opening it
    else:
        companion.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(StateError, match=re.escape(f"regular files: {companion}")):
        SqliteStateStores().open(str(tmp_path / "state"), create=True)


@pytest.mark.parametrize("create", [True, False])
def test_newer_schema_version_is_refused(
    open_store: OpenStore, tmp_path: Path, create: bool
) -> None:
    open_store().close()
    database = tmp_path / "state" / "state.sqlite"
    raw(database, f"PRAGMA user_version = {HEAD_ORDINAL + 1}")
    with pytest.raises(
        StateError,
        match=rf"^Unsupported state schema version {HEAD_ORDINAL + 1} in .*state.sqlite: "
        "a newer artifactize wrote it",
    ):
        SqliteStateStores().open(str(tmp_path / "state"), create=create)


@pytest.mark.parametrize("create", [True, False])
def test_foreign_database_is_refused_naming_the_file(tmp_path: Path, create: bool) -> None:
    database = tmp_path / "state.sqlite"
    raw(database, "CREATE TABLE cache_entries (key TEXT)")
    with pytest.raises(StateError, match=re.escape(str(database))):
        SqliteStateStores().open(str(tmp_path), create=create)
    assert raw(database, "SELECT name FROM sqlite_master") == [("cache_entries",)]


def test_non_database_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    database = tmp_path / "state.sqlite"
    database.write_bytes(b"not a database at all " * 100)
    with pytest.raises(StateError, match=re.escape(str(database))):
        SqliteStateStores().open(str(tmp_path), create=True)


def test_state_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for create in (True, False):
        with pytest.raises(StateError, match="not a directory"):
            SqliteStateStores().open(str(tmp_path / "file"), create=create)


@pytest.mark.parametrize("limit", ["record_max_bytes", "history_records_max", "history_bytes_max"])
def test_caps_must_be_positive(limit: str) -> None:
    with pytest.raises(ValueError, match=limit):
        SqliteStateStores(**{limit: 0})  # type: ignore[arg-type]
    SqliteStateStores(**{limit: 1})  # type: ignore[arg-type]


# --- Runs and requests -----------------------------------------------------------------


def request(run_id: str, ordinal: int, status: str = "QUEUED", **fields: Any) -> RequestRecord:
    return RequestRecord(
        id=RequestId(f"{run_id}-{ordinal}"),
        run_id=RunId(run_id),
        eval_id=EvalId(f"doc/eval{ordinal}"),
        ordinal=ordinal,
        execution_id=fields.pop("execution_id", None),
        status=RequestStatus(status),
        data=request_from_json({"id": f"{run_id}-{ordinal}", **fields}),
    )


def test_runs_and_requests_round_trip(open_store: OpenStore, tmp_path: Path) -> None:
    store: StateStore = open_store()
    run = RunRecord(
        RunId("run-a"),
        "/repo",
        RunStatus.RUNNING,
        run_from_json({"createdAt": at(1), "title": "Übersicht ✓"}),
    )
    store.create_run(run, [request("run-a", 2), request("run-a", 1)])
    assert store.get_run(RunId("run-a")) == run
    assert [r.ordinal for r in store.list_requests(RunId("run-a"))] == [1, 2]

    store.update_run(
        replace(run, status=RunStatus.GREEN, data=run_changed(run.data, status=RunStatus.GREEN))
    )
    updated = store.get_run(RunId("run-a"))
    assert updated is not None and updated.status == "GREEN" and updated.data.status == "GREEN"
    store.update_request(replace(request("run-a", 1), status=RequestStatus.GREEN))
    saved = store.get_request(RequestId("run-a-1"))
    assert saved is not None and saved.status == "GREEN"
    assert (
        store.get_run(RunId("missing")) is None and store.get_request(RequestId("missing")) is None
    )

    stored = raw(tmp_path / "state" / "state.sqlite", "SELECT data FROM runs")
    assert stored == [('{"createdAt":"' + at(1) + '","title":"Übersicht ✓","status":"GREEN"}',)]


def test_a_run_listed_again_decodes_only_the_requests_whose_rows_changed(
    open_store: OpenStore, tmp_path: Path
) -> None:
    """The monitor lists a Run again after every change; an unchanged row gives the record
    decoded before (the same object), a changed one (by this store, another process, or
    only its claim) a new decoding, and what is listed always equals a fresh store's."""
    store = open_store()
    runs = [f"run-{n}" for n in range(LISTED_RUNS_KEPT + 1)]
    for run_id in runs:
        run = RunRecord(
            RunId(run_id), "/repo", RunStatus.RUNNING, run_from_json({"createdAt": at(1)})
        )
        store.create_run(run, [request(run_id, 1), request(run_id, 2), request(run_id, 3)])
    first = store.list_requests(RunId("run-0"))
    store.update_request(replace(request("run-0", 2), status=RequestStatus.GREEN))
    raw_update = "UPDATE requests SET claimed_by = 'alice' WHERE id = 'run-0-3'"
    with sqlite3.connect(tmp_path / "state" / "state.sqlite") as other:  # another process
        other.execute(raw_update)
    again = store.list_requests(RunId("run-0"))
    assert [a is b for a, b in zip(first, again, strict=True)] == [True, False, False]
    assert again[1].status == "GREEN" and again == first[:1] + again[1:]
    fresh = open_store()
    assert fresh.list_requests(RunId("run-0")) == again
    for run_id in runs[1:]:  # four other Runs listed: run-0's decodings are dropped
        store.list_requests(RunId(run_id))
    assert not any(a is b for a, b in zip(again, store.list_requests(RunId("run-0")), strict=True))


def test_a_runs_requests_are_inserted_in_one_executemany_of_the_driver(
    open_store: OpenStore, tmp_path: Path
) -> None:
    """A Run's request rows reach the driver as one ``executemany`` of their values, built
    as bound (no SQLAlchemy statement compiled and processed row by row for them): the
    cursor events see the Run's insert and that one, and the rows read back as written."""
    store: StateStore = open_store()
    run = RunRecord(RunId("run-a"), "/repo", RunStatus.RUNNING, run_from_json({"createdAt": at(1)}))
    rows = [request("run-a", 1), request("run-a", 2, execution_id=None, title="Übersicht")]
    compiled: list[object] = []
    issued: list[tuple[str, Any, bool]] = []

    def statement(_conn: object, clause: object, *_rest: object) -> None:
        compiled.append(clause)

    def cursor(
        _conn: object, _cur: object, sql: str, params: Any, _ctx: object, many: bool
    ) -> None:
        issued.append((sql, params, many))

    sa_event.listen(Engine, "before_execute", statement)
    sa_event.listen(Engine, "before_cursor_execute", cursor)
    try:
        store.create_run(run, rows)
    finally:
        sa_event.remove(Engine, "before_execute", statement)
        sa_event.remove(Engine, "before_cursor_execute", cursor)
    inserts = [(sql, params, many) for sql, params, many in issued if sql.startswith("INSERT")]
    assert [sql.split(" (")[0] for sql, _, _ in inserts] == [
        "INSERT INTO runs",
        "INSERT INTO requests",
    ]
    _, params, many = inserts[1]
    expected = [
        # queued: each keeps its whole document (no body)
        (r.id, r.run_id, r.eval_id, r.ordinal, r.execution_id, r.status, request_data(r), None)
        for r in rows
    ]
    assert many and [tuple(p) for p in params] == expected
    # the requests' statement is the driver's own: SQLAlchemy compiled only the Run's insert
    assert [str(c).split(" (")[0] for c in compiled if "INSERT" in str(c)] == ["INSERT INTO runs"]
    assert store.list_requests(RunId("run-a")) == rows
    saved = raw(tmp_path / "state" / "state.sqlite", "SELECT * FROM requests ORDER BY ordinal")
    assert [row[:7] for row in saved] == [
        ("run-a-1", "run-a", "doc/eval1", 1, None, "QUEUED", None),
        ("run-a-2", "run-a", "doc/eval2", 2, None, "QUEUED", None),
    ]


def test_a_batch_commits_its_writes_together_or_none_and_begins_only_when_used(
    open_store: OpenStore,
) -> None:
    """A claim and a request save in one batch: one transaction, both kept; an error inside
    after both rolls both back; a batch that calls the store for nothing begins nothing."""
    store = open_store()
    run = RunRecord(RunId("run-a"), "/repo", RunStatus.RUNNING, run_from_json({"createdAt": at(1)}))
    store.create_run(run, [request("run-a", 1), request("run-a", 2)])

    before = store.transactions
    with store.batch():
        pass
    assert store.transactions == before  # nothing to write: no BEGIN, no COMMIT

    with store.batch():
        assert store.claim(execution("e1", "k1"), alive).outcome is ClaimOutcome.OWNED
        store.update_request(replace(request("run-a", 1), status=RequestStatus.RUNNING))
    assert store.transactions == before + 1
    assert store.claim(execution("e1b", "k1"), alive).outcome is ClaimOutcome.BUSY

    with pytest.raises(RuntimeError, match="crash"), store.batch():
        assert store.claim(execution("e2", "k2"), alive).outcome is ClaimOutcome.OWNED
        store.update_request(replace(request("run-a", 2), status=RequestStatus.RUNNING))
        raise RuntimeError("crash")
    assert store.claim(execution("e3", "k2"), alive).outcome is ClaimOutcome.OWNED  # e2 undone
    saved = store.get_request(RequestId("run-a-2"))
    assert saved is not None and saved.status == RequestStatus.QUEUED


def test_run_writes_are_checked(open_store: OpenStore) -> None:
    store = open_store()
    run = RunRecord(RunId("run-a"), "/repo", RunStatus.RUNNING, run_from_json({"createdAt": at(1)}))
    with pytest.raises(ValueError, match="run-b-1 belongs to Run run-b, not run-a"):
        store.create_run(run, [request("run-b", 1)])
    with pytest.raises(StateError, match="UNIQUE"):
        store.create_run(
            run, [request("run-a", 1), replace(request("run-a", 1), id=RequestId("other"))]
        )
    assert store.get_run(RunId("run-a")) is None  # one transaction: nothing half-written
    with pytest.raises(StateError, match="Run not found: run-a"):
        store.update_run(run)
    store.create_run(run, [request("run-a", 1)])
    with pytest.raises(StateError, match="Request not found: run-a-9"):
        store.update_request(request("run-a", 9))
    with pytest.raises(StateError, match="FOREIGN KEY"):
        store.update_request(request("run-a", 1, execution_id="execution-nowhere"))


def test_list_runs_newest_first_by_created_at_then_insertion(open_store: OpenStore) -> None:
    store = open_store()
    for run_id, repo, created in [
        ("run-1", "/a", at(2)),
        ("run-2", "/b", at(1)),
        ("run-3", "/a", at(2)),
        ("run-4", "/a", at(3)),
    ]:
        store.create_run(
            RunRecord(RunId(run_id), repo, RunStatus.GREEN, run_from_json({"createdAt": created})),
            [],
        )
    assert [r.id for r in store.list_runs(None, 10, 0)] == ["run-4", "run-3", "run-1", "run-2"]
    assert [r.id for r in store.list_runs("/a", 2, 1)] == ["run-3", "run-1"]
    assert store.list_runs("/c", 10, 0) == []
    with pytest.raises(ValueError, match="must not be negative"):
        store.list_runs(None, -1, 0)


def test_listed_runs_come_without_their_definitions_and_whole_from_get_run(
    open_store: OpenStore,
) -> None:
    store = open_store()
    definitions = {"evals": {"doc/check": {"artifact": "doc"}}, "artifacts": {"doc": {}}}
    saved = run_from_json({"createdAt": at(1), "definitions": definitions, "status": "GREEN"})
    store.create_run(RunRecord(RunId("run-1"), "/a", RunStatus.GREEN, saved), [])
    (listed,) = store.list_runs(None, 10, 0)
    assert listed.data.definitions == {"evals": {}, "artifacts": {}}
    assert run_json(listed.data) == {k: v for k, v in run_json(saved).items() if k != "definitions"}
    whole = store.get_run(RunId("run-1"))
    assert whole is not None and whole.data.definitions == definitions


def test_a_listed_run_that_is_no_json_is_named(open_store: OpenStore, tmp_path: Path) -> None:
    """SQLite refuses to drop the definitions of a row that is no JSON: the row is read
    whole then, and the error names it as any other reader's does."""
    store = open_store()
    saved = run_from_json({"createdAt": at(1)})
    store.create_run(RunRecord(RunId("run-1"), "/a", RunStatus.GREEN, saved), [])
    damage = sqlite3.connect(tmp_path / "state" / STATE_FILE)
    with damage:  # committed
        damage.execute("UPDATE runs SET data = '{not json'")
    damage.close()
    with pytest.raises(StateError, match="Corrupt state: runs row run-1 holds no JSON object"):
        store.list_runs(None, 10, 0)


def test_a_run_read_without_definitions_that_is_no_json_is_named(
    open_store: OpenStore, tmp_path: Path
) -> None:
    store = open_store()
    store.create_run(RunRecord(RunId("run-1"), "/a", RunStatus.GREEN, run_from_json({})), [])
    damage = sqlite3.connect(tmp_path / "state" / STATE_FILE)
    with damage:
        damage.execute("UPDATE runs SET data = '{not json'")
    damage.close()
    with pytest.raises(StateError, match="Corrupt state: runs row run-1 holds no JSON object"):
        store.get_run(RunId("run-1"), definitions=False)


def test_a_readers_change_mark_moves_with_another_processs_commit(
    open_store: OpenStore, tmp_path: Path
) -> None:
    """The monitor's read-only store sees a commit of another process (here a plain
    sqlite3 one: nothing of this store is told) and nothing else; closing it closes the
    connection the mark was asked on."""
    store = open_store()
    store.create_run(RunRecord(RunId("run-1"), "/a", RunStatus.GREEN, run_from_json({})), [])
    reader = SqliteStateStores().open(str(tmp_path / "state"), create=False, read_only=True)
    assert reader is not None
    first = reader.change_mark()
    reader.get_run(RunId("run-1"))
    assert reader.change_mark() == first
    code = (
        "import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1])\n"
        "with c: c.execute(\"UPDATE runs SET status = 'RED'\")\n"
        "c.close()\n"
    )
    database = str(tmp_path / "state" / STATE_FILE)
    subprocess.run([sys.executable, "-c", code, database], check=True)
    second = reader.change_mark()
    assert second != first
    assert reader.change_mark() == second
    driver = reader._marker.driver_connection
    reader.close()
    assert reader._marker is None
    with pytest.raises(sqlite3.ProgrammingError):  # closed, not left open
        driver.execute("SELECT 1")


# --- claims ----------------------------------------------------------------------------


def test_claim_owns_then_busy_then_reuses_the_newest_record(open_store: OpenStore) -> None:
    store = open_store()
    first = execution("execution-1")
    assert store.claim(first, alive) == Claim(ClaimOutcome.OWNED)
    stored = store.get_execution(ExecutionId("execution-1"))
    assert stored is not None and stored.status == "RUNNING" and stored.key == "k"

    busy = store.claim(execution("execution-2"), alive)
    assert busy.outcome is ClaimOutcome.BUSY
    assert busy.record is not None and busy.record.id == "execution-1"

    assert store.complete_execution(settled(first, completed_at=at(5)), record=True) is True
    reused = store.claim(execution("execution-2"), alive)
    assert reused.outcome is ClaimOutcome.REUSED
    assert reused.record is not None and reused.record.id == "execution-1"
    assert execution_json(reused.record.data) == RECORD_DATA and reused.record.completed_at == at(5)
    assert store.get_execution(ExecutionId("execution-2")) is None  # a reuse starts nothing


def test_latest_record_is_newest_completed_then_latest_stored(open_store: OpenStore) -> None:
    store = open_store()
    held = execution("execution-held")
    record(store, "k", "execution-a", completed_at=at(10))

    def forced(execution_id: str, completed: str, status: str = "GREEN") -> None:
        # a forced run never holds the key, and appends itself when it settles
        running = execution(execution_id)
        store.insert_execution(running)
        done = settled(running, status, completed_at=completed)
        assert store.complete_execution(done, record=True) is True

    forced("execution-b", at(20), "RED")
    forced("execution-c", at(5))  # stored later, completed earlier
    forced("execution-d", at(20))  # ties with b, stored later: wins
    assert [r.id for r in store.history(ReuseKey("k"))] == [
        "execution-d",
        "execution-b",
        "execution-a",
        "execution-c",
    ]
    latest = store.latest_record(ReuseKey("k"), touch=False)
    assert latest is not None and latest.id == "execution-d"
    assert store.latest_record(ReuseKey("other"), touch=True) is None
    claim = store.claim(held, alive)
    assert claim.record is not None and claim.record.id == "execution-d"


def test_latest_records_lists_each_key_once_with_its_count(open_store: OpenStore) -> None:
    store = open_store()
    record(store, "k1", "execution-1", completed_at=at(1))
    record(store, "k2", "execution-2", completed_at=at(3))
    running = execution("execution-3", "k1")
    store.insert_execution(running)
    store.complete_execution(settled(running, completed_at=at(2)), record=True)
    pairs = [(r.id, count) for r, count in store.latest_records()]
    assert pairs == [("execution-2", 1), ("execution-3", 2)]


def test_latest_records_of_some_evals_are_latest_records_filtered(open_store: OpenStore) -> None:
    """``status`` reads the history of the evals without a current record only: the same
    records as ``latest_records`` kept by eval ID, in the same order; a key two evals share
    answers for the one that recorded last; a row without a text ``evalId`` is never left out
    (its decoding is what reports a damaged row)."""
    store = open_store()

    def of(eval_id: str | None) -> dict[str, Any]:
        return RECORD_DATA if eval_id is None else {**RECORD_DATA, "evalId": eval_id}

    record(store, "k1", "execution-1", completed_at=at(1), data=of("a/x"))
    record(store, "k2", "execution-2", completed_at=at(2), data=of("b/y"))
    record(store, "k3", "execution-3", completed_at=at(3), data=of("a/x"))
    running = execution("execution-4", "k3")
    store.insert_execution(running)
    store.complete_execution(settled(running, completed_at=at(4), data=of("b/y")), record=True)
    record(store, "k5", "execution-5", completed_at=at(5), data=of(None))
    record(store, "k6", "execution-6", completed_at=at(6), data=of('c/it\'s "odd" ü'))
    every = [latest for latest, _count in store.latest_records()]
    for wanted in [set(), {"a/x"}, {"b/y"}, {"a/x", "b/y", 'c/it\'s "odd" ü'}, {"nope/x"}]:
        expected = [r for r in every if str(r.data.eval_id) in wanted or r.data.eval_id is None]
        assert store.latest_records_of(wanted) == expected
    assert [r.id for r in store.latest_records_of({"a/x"})] == ["execution-5", "execution-1"]


def test_unkeyed_and_unrecorded_executions_stay_out_of_history(open_store: OpenStore) -> None:
    store = open_store()
    unkeyed = execution("execution-unkeyed", key=None)
    store.insert_execution(unkeyed)
    assert store.complete_execution(settled(unkeyed), record=True) is False

    assert store.claim(execution("execution-owner"), alive).outcome is ClaimOutcome.OWNED
    forced = execution("execution-forced")  # same key: stored without it, no conflict
    store.insert_execution(forced)
    stored = store.get_execution(ExecutionId("execution-forced"))
    assert stored is not None and stored.key is None and stored.status == "RUNNING"
    assert store.complete_execution(settled(forced), record=False) is False
    errored = execution("execution-error", key="e")
    assert store.claim(errored, alive).outcome is ClaimOutcome.OWNED
    assert store.complete_execution(settled(errored, "ERROR"), record=True) is False

    assert (
        store.history(ReuseKey("k")) == []
        and store.history(ReuseKey("e")) == []
        and store.latest_records() == []
    )
    settled_forced = store.get_execution(ExecutionId("execution-forced"))
    assert settled_forced is not None and settled_forced.status == "GREEN"
    # the errored execution released its key
    assert store.claim(execution("execution-retry", key="e"), alive).outcome is ClaimOutcome.OWNED


def test_a_held_completion_is_written_by_the_next_transaction_then_told(
    open_store: OpenStore, tmp_path: Path
) -> None:
    """A held completion (the Run's group commit) is not in the file until this store's
    next transaction on the holding thread, a claim or a mere read, writes it first (one
    transaction for both); its holder is told after the commit. ``flush`` writes what is
    held, and begins nothing when nothing is."""
    store = open_store()
    other = open_store(tmp_path / "state")  # another process's view of the same file
    run = RunRecord(RunId("run-a"), "/repo", RunStatus.RUNNING, run_from_json({"createdAt": at(1)}))
    store.create_run(run, [request("run-a", 1), request("run-a", 2), request("run-a", 3)])
    record(store, "k0", "e0")  # the history counted once: later records begin no GC
    told: list[tuple[str, bool]] = []

    def hold(name: str, key: str, ordinal: int) -> None:
        running = execution(name, key)
        assert store.claim(running, alive).outcome is ClaimOutcome.OWNED
        done = replace(request("run-a", ordinal), status=RequestStatus.GREEN)
        written = store.complete_execution(
            settled(running), record=True, request=done, held=lambda ok: told.append((name, ok))
        )
        assert written is True

    hold("e1", "k1", 1)
    assert (other.latest_record(ReuseKey("k1"), touch=False), told) == (None, [])
    saved = other.get_request(RequestId("run-a-1"))
    assert saved is not None and saved.status == RequestStatus.QUEUED

    before = store.transactions
    hold("e2", "k2", 2)  # its claim writes e1's completion first, in its own transaction
    assert (store.transactions, told) == (before + 1, [("e1", True)])
    assert other.latest_record(ReuseKey("k1"), touch=False) is not None
    saved = other.get_request(RequestId("run-a-1"))
    assert saved is not None and saved.status == RequestStatus.GREEN

    own = store.get_execution(ExecutionId("e2"))  # a read on the holding thread sees it
    assert own is not None and own.status == ExecutionStatus.GREEN
    assert told == [("e1", True), ("e2", True)]

    hold("e3", "k3", 3)
    before = store.transactions
    store.flush()
    assert (store.transactions, told[-1]) == (before + 1, ("e3", True))
    store.flush()
    assert store.transactions == before + 1  # nothing held: no transaction
    assert keys_in_history(other) == {"k0", "k1", "k2", "k3"}


def test_a_held_completion_that_cannot_be_written_is_dropped_and_told(
    open_store: OpenStore,
) -> None:
    """The transaction that writes a held completion fails with its error (the execution is
    not this owner's active one), rolls back its own work too, and the holder is told the
    completion was dropped: it is not tried again."""
    store = open_store()
    running = execution("e1", "k1")
    assert store.claim(running, alive).outcome is ClaimOutcome.OWNED
    told: list[bool] = []
    store.complete_execution(settled(replace(running, owner_pid=1)), record=True, held=told.append)
    with pytest.raises(StateError, match=r"^Active execution not found\.$"):
        store.claim(execution("e2", "k2"), alive)
    assert told == [False]
    assert store.claim(execution("e3", "k2"), alive).outcome is ClaimOutcome.OWNED  # e2 undone
    before = store.transactions
    store.flush()
    assert store.transactions == before
    active = store.get_execution(ExecutionId("e1"))
    assert active is not None and active.status == ExecutionStatus.RUNNING


def test_a_held_request_save_is_replaced_by_its_held_settlement(
    open_store: OpenStore, tmp_path: Path
) -> None:
    """The RUNNING save held beside a claim, then the request's held settlement: one
    request write (the settled one) reaches the file, and both holders are told. A held
    save of another request stays as it is."""
    store = open_store()
    other = open_store(tmp_path / "state")
    run = RunRecord(RunId("run-a"), "/repo", RunStatus.RUNNING, run_from_json({"createdAt": at(1)}))
    store.create_run(run, [request("run-a", 1), request("run-a", 2)])
    record(store, "k0", "e0")  # the history counted once: later records begin no GC
    told: list[str] = []
    running = execution("e1", "k1")
    with store.batch():
        assert store.claim(running, alive).outcome is ClaimOutcome.OWNED
        store.update_request(
            replace(request("run-a", 1), status=RequestStatus.RUNNING),
            held=lambda ok: told.append(f"running-1 {ok}"),
        )
    store.update_request(
        replace(request("run-a", 2), status=RequestStatus.RUNNING),
        held=lambda ok: told.append(f"running-2 {ok}"),
    )
    saved = other.get_request(RequestId("run-a-1"))
    assert saved is not None and saved.status == RequestStatus.QUEUED  # held, not written
    store.complete_execution(
        settled(running),
        record=True,
        request=replace(request("run-a", 1), status=RequestStatus.GREEN),
        held=lambda ok: told.append(f"green-1 {ok}"),
    )
    updates: list[str] = []

    def statement(_conn: object, _cursor: object, sql: str, *_rest: object) -> None:
        if sql.startswith("UPDATE requests"):
            updates.append(sql)

    sa_event.listen(Engine, "before_cursor_execute", statement)
    try:
        store.flush()
    finally:
        sa_event.remove(Engine, "before_cursor_execute", statement)
    assert len(updates) == 2  # request 2's RUNNING, request 1's settlement: not its RUNNING
    assert sorted(told) == ["green-1 True", "running-1 True", "running-2 True"]
    statuses = [r.status for r in other.list_requests(RunId("run-a"))]
    assert statuses == [RequestStatus.GREEN, RequestStatus.RUNNING]


def test_completions_held_on_one_thread_are_left_to_it(open_store: OpenStore) -> None:
    """Another thread's transactions neither write nor see what this thread holds."""
    store = open_store()
    running = execution("e1", "k1")
    assert store.claim(running, alive).outcome is ClaimOutcome.OWNED
    told: list[bool] = []
    store.complete_execution(settled(running), record=True, held=told.append)
    seen: list[ExecutionRecord | None] = []
    worker = threading.Thread(target=lambda: seen.append(store.get_execution(ExecutionId("e1"))))
    worker.start()
    worker.join()
    assert seen[0] is not None and seen[0].status == ExecutionStatus.RUNNING and told == []
    store.flush()
    found = store.get_execution(ExecutionId("e1"))
    assert told == [True] and found is not None and found.status == ExecutionStatus.GREEN


def test_complete_needs_the_active_row_of_that_owner(open_store: OpenStore) -> None:
    store = open_store()
    running = execution("execution-1")
    store.claim(running, alive)
    for wrong in (replace(running, owner_pid=1), replace(running, owner_start_time=100.25)):
        with pytest.raises(StateError, match=r"^Active execution not found\.$"):
            store.complete_execution(settled(wrong), record=True)
    store.complete_execution(settled(running), record=True)
    with pytest.raises(StateError, match=r"^Active execution not found\.$"):
        store.complete_execution(settled(running), record=True)


def test_claim_refuses_unkeyed_or_non_running_executions(open_store: OpenStore) -> None:
    store = open_store()
    with pytest.raises(ValueError, match="execution-1 has no key"):
        store.claim(execution("execution-1", key=None), alive)
    with pytest.raises(ValueError, match="execution-1 is GREEN"):
        store.claim(settled(execution("execution-1")), alive)


def test_dead_running_owner_is_settled_and_the_key_taken_over(open_store: OpenStore) -> None:
    store = open_store()
    store.claim(execution("execution-old", pid=111, start=11.5), alive)
    asked: list[tuple[int, float]] = []

    def owner_alive(pid: int, start: float) -> bool:
        asked.append((pid, start))
        return False

    assert store.claim(execution("execution-new"), owner_alive) == Claim(ClaimOutcome.OWNED)
    assert asked == [(111, 11.5)]
    old = store.get_execution(ExecutionId("execution-old"))
    assert old is not None and old.status == "ERROR" and old.completed_at is not None
    assert old.data.error_code == OWNER_DIED_CODE == "OWNER_DIED"
    assert old.data.error == OWNER_DIED_ERROR == "Execution owner died."
    assert old.data.status == "ERROR" and old.data.completed_at == old.completed_at
    assert store.history(ReuseKey("k")) == []
    new = store.get_execution(ExecutionId("execution-new"))
    assert new is not None and new.status == "RUNNING"


def test_waiting_human_holder_is_never_considered_dead(open_store: OpenStore) -> None:
    store = open_store()
    human = execution("execution-human")
    store.claim(human, alive)
    waiting = replace(
        human,
        status=ExecutionStatus.WAITING_HUMAN,
        data=Execution(status=ExecutionStatus.WAITING_HUMAN),
    )
    assert store.complete_execution(waiting, record=True) is False  # stays active
    stored = store.get_execution(ExecutionId("execution-human"))
    assert stored is not None and stored.status == "WAITING_HUMAN" and stored.completed_at is None

    asked: list[int] = []

    def owner_alive(pid: int, _start: float) -> bool:
        asked.append(pid)
        return False

    claim = store.claim(execution("execution-2"), owner_alive)
    assert claim.outcome is ClaimOutcome.BUSY and asked == []
    assert claim.record is not None and claim.record.status == "WAITING_HUMAN"

    assert store.complete_execution(settled(waiting), record=True) is True
    assert store.claim(execution("execution-2"), dead).outcome is ClaimOutcome.REUSED


# --- record size, GC and removal -------------------------------------------------------


def test_record_at_size_cap_is_kept_one_byte_past_is_not(open_store: OpenStore) -> None:
    store = open_store(record_max_bytes=RECORD_SIZE)
    at_cap = execution("execution-1", "k1")
    store.claim(at_cap, alive)
    assert store.complete_execution(settled(at_cap), record=True) is True

    past = execution("execution-2", "k2")
    store.claim(past, alive)
    bigger = {**RECORD_DATA, "note": RECORD_DATA["note"] + "x"}
    assert serialized_size(bigger) == RECORD_SIZE + 1
    assert store.complete_execution(settled(past, data=bigger), record=True) is False
    too_big = store.get_execution(ExecutionId("execution-2"))
    assert (
        too_big is not None and too_big.status == "GREEN" and execution_json(too_big.data) == bigger
    )
    assert store.history(ReuseKey("k2")) == [] and [
        r.id for r in store.history(ReuseKey("k1"))
    ] == ["execution-1"]
    assert store.claim(execution("execution-3", "k2"), alive).outcome is ClaimOutcome.OWNED


def test_history_bytes_are_utf8_bytes_of_the_compact_document(
    open_store: OpenStore, tmp_path: Path
) -> None:
    store = open_store()
    record(store, "k", "execution-1")
    database = tmp_path / "state" / "state.sqlite"
    assert raw(database, "SELECT bytes, data FROM executions") == [
        (RECORD_SIZE, '{"verdict":"GREEN","note":"' + "é" * 10 + '"}')
    ]
    characters = len(json.dumps(RECORD_DATA, ensure_ascii=False, separators=(",", ":")))
    assert characters + 10 == RECORD_SIZE  # each "é" is two bytes


@pytest.mark.parametrize(
    ("limits", "evicted"),
    [
        ({"history_records_max": 3}, set()),
        ({"history_records_max": 2}, {"k1"}),
        ({"history_bytes_max": 3 * RECORD_SIZE}, set()),
        ({"history_bytes_max": 3 * RECORD_SIZE - 1}, {"k1"}),
    ],
    ids=["records-at-cap", "records-one-past", "bytes-at-cap", "bytes-one-past"],
)
def test_gc_at_and_one_past_each_cap(
    open_store: OpenStore, limits: dict[str, int], evicted: set[str]
) -> None:
    store = open_store(**limits)
    for n in (1, 2, 3):
        record(store, f"k{n}", f"execution-{n}")
    assert keys_in_history(store) == {"k1", "k2", "k3"} - evicted
    for key in evicted:  # GC clears the history columns; the row stays
        dropped = store.get_execution(ExecutionId(f"execution-{key[1:]}"))
        assert dropped is not None and dropped.status == "GREEN" and dropped.key == key


def test_gc_counts_the_history_once_while_it_stays_under_its_caps(
    open_store: OpenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Run recording N verdicts does not scan the whole history N times: the store counts
    once, adds what it records, and counts again only when that passes a cap."""
    from artifactize.adapters.sqlite import history

    counted: list[int] = []
    real = history.retained

    def counting(connection: Any) -> tuple[int, int]:
        counted.append(1)
        return real(connection)

    monkeypatch.setattr(history, "retained", counting)
    store = open_store(history_records_max=20)
    for n in range(20):
        record(store, f"k{n}", f"execution-{n}")
    assert len(counted) == 1 and len(keys_in_history(store)) == 20
    record(store, "k20", "execution-20")  # one past the cap: counted again, k0 leaves
    assert len(counted) == 3  # the count over the cap, then the one after the eviction
    assert len(keys_in_history(store)) == 20 and "k0" not in keys_in_history(store)


def test_gc_evicts_the_least_recently_used(open_store: OpenStore) -> None:
    store = open_store(history_records_max=3)
    for n in (1, 2, 3):
        record(store, f"k{n}", f"execution-{n}")
    assert store.latest_record(ReuseKey("k1"), touch=True) is not None  # k2 is now least recent
    assert store.latest_record(ReuseKey("k2"), touch=False) is not None  # inspection does not count
    record(store, "k4", "execution-4")
    assert keys_in_history(store) == {"k1", "k3", "k4"}
    assert store.claim(execution("execution-5", "k3"), alive).outcome is ClaimOutcome.REUSED
    record(store, "k5", "execution-6")  # k1 is least recent now, k3 was just reused
    assert keys_in_history(store) == {"k3", "k4", "k5"}


def test_gc_skips_keys_with_an_active_execution(open_store: OpenStore) -> None:
    store = open_store(history_records_max=1)
    holder = execution("execution-holder", "busy")
    store.claim(holder, alive)
    forced = execution("execution-forced", "busy")
    store.insert_execution(forced)
    store.complete_execution(settled(forced), record=True)  # oldest, but its key is held
    record(store, "free", "execution-free")  # over the cap: the only eligible one goes
    assert keys_in_history(store) == {"busy"}
    store.complete_execution(settled(holder, "ERROR"), record=False)
    record(store, "later", "execution-later")  # "busy" is free now and least recent
    assert keys_in_history(store) == {"later"}


def test_gc_skips_records_an_active_request_points_at(open_store: OpenStore) -> None:
    store = open_store(history_records_max=1)
    record(store, "k1", "execution-1")
    run = RunRecord(RunId("run-a"), "/repo", RunStatus.RUNNING, run_from_json({"createdAt": at(1)}))
    follower = request("run-a", 1, "WAITING_HUMAN", execution_id="execution-1")
    store.create_run(run, [follower])
    record(store, "k2", "execution-2")
    assert keys_in_history(store) == {"k1"}
    store.update_request(replace(follower, status=RequestStatus.GREEN))
    record(store, "k3", "execution-3")
    assert keys_in_history(store) == {"k3"}


def test_gc_failure_is_logged_and_keeps_the_settlement(
    open_store: OpenStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store()

    def failing_gc() -> int:
        raise StateError("database is locked")

    monkeypatch.setattr(store, "collect_garbage", failing_gc)
    with caplog.at_level(logging.WARNING, logger="artifactize.adapters.sqlite.state"):
        record(store, "k", "execution-1")
    assert "Cache GC failed: database is locked" in caplog.text
    assert [r.id for r in store.history(ReuseKey("k"))] == ["execution-1"]


def test_remove_key_refuses_a_key_in_use(open_store: OpenStore) -> None:
    store = open_store()
    running = execution("execution-1")
    store.claim(running, alive)
    with pytest.raises(KeyInUse, match=r"^Key k is in use by an active execution or waiter\.$"):
        store.remove_key(ReuseKey("k"))
    store.complete_execution(settled(running), record=True)
    assert store.remove_key(ReuseKey("k")) is True
    assert (
        store.history(ReuseKey("k")) == []
        and store.latest_record(ReuseKey("k"), touch=False) is None
    )
    kept = store.get_execution(ExecutionId("execution-1"))
    assert kept is not None and kept.status == "GREEN"
    assert store.remove_key(ReuseKey("k")) is False
    assert store.claim(execution("execution-2"), alive).outcome is ClaimOutcome.OWNED


# --- processes -------------------------------------------------------------------------

RACERS = 4
RACE_KEYS = 50
# retry_busy with a 0.1 s deadline must give up; a bound this loose still catches "never"
# without racing the scheduler of a loaded machine.
GAVE_UP_WITHIN_SECONDS = 10.0


def test_racing_processes_own_each_key_exactly_once(tmp_path: Path) -> None:
    """Fresh state, four processes: all first opens succeed and every key has one owner."""
    state_dir = tmp_path / "state"
    go = tmp_path / "go"
    with no_process_left_behind():
        racers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.support.sqlite_claim_race",
                    str(state_dir),
                    str(worker),
                    str(RACE_KEYS),
                    str(go),
                ],
                cwd=REPO_ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for worker in range(RACERS)
        ]
        try:
            deadline = time.monotonic() + 20
            while not all(Path(f"{go}.ready-{n}").exists() for n in range(RACERS)):
                assert time.monotonic() < deadline, "racers did not start"
                assert all(racer.poll() is None for racer in racers), "a racer exited early"
                time.sleep(0.01)
            go.touch()
            results = [racer.communicate(timeout=30) for racer in racers]
        finally:
            for racer in racers:
                if racer.poll() is None:
                    racer.kill()
                    racer.wait()
    for racer, (_out, err) in zip(racers, results, strict=True):
        assert racer.returncode == 0, err
    outcomes = [json.loads(out) for out, _err in results]
    for n in range(RACE_KEYS):
        key = f"key-{n:03d}"
        seen = sorted(outcome[key] for outcome in outcomes)
        assert seen.count("owned") == 1, (key, seen)
        # even keys were settled by their owner, odd ones are still held
        assert set(seen) <= ({"owned", "busy", "reused"} if n % 2 == 0 else {"owned", "busy"})

    store = SqliteStateStores().open(str(state_dir), create=False)
    assert store is not None
    try:
        latest = store.latest_records()
        assert sorted(str(record.key) for record, _count in latest) == [
            f"key-{n:03d}" for n in range(0, RACE_KEYS, 2)
        ]
        assert all(count == 1 for _record, count in latest)
    finally:
        store.close()


# --- start-up retry ----------------------------------------------------------------------


def busy_error(code: int = 5) -> sqlite3.OperationalError:
    error = sqlite3.OperationalError("database is locked")
    error.sqlite_errorcode = code
    return error


def test_open_retries_busy_until_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_open, "OPEN_RETRY_SECONDS", 0.1)
    attempts: list[float] = []

    def busy_twice() -> str:
        attempts.append(time.monotonic())
        if len(attempts) <= 2:
            raise busy_error(517)  # SQLITE_BUSY_SNAPSHOT: an extended busy code
        return "opened"

    assert sqlite_open.retry_busy(busy_twice) == "opened"
    assert len(attempts) == 3
    assert attempts[1] - attempts[0] >= sqlite_open.OPEN_RETRY_INTERVAL_SECONDS

    def always_busy() -> str:
        raise busy_error()

    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        sqlite_open.retry_busy(always_busy)
    assert 0.1 <= time.monotonic() - started < GAVE_UP_WITHIN_SECONDS  # it does give up

    def broken() -> str:
        attempts.append(0.0)
        raise busy_error(code=11)  # SQLITE_CORRUPT: not retried

    attempts.clear()
    with pytest.raises(sqlite3.OperationalError):
        sqlite_open.retry_busy(broken)
    assert len(attempts) == 1


def test_requests_of_an_active_status_are_read_from_the_index_of_active_requests(
    open_store: OpenStore, tmp_path: Path
) -> None:
    """``status`` asks for the requests waiting on a person every time: with the partial
    index's own condition added (implied by the status), SQLite reads only the active
    requests, not every request of every Run; the answer is the same rows in the same order.
    """
    from artifactize.adapters.sqlite.human import all_requests_query
    from artifactize.ports.statuses import RequestStatus as Statuses

    store = open_store()
    for number, created in ((1, at(2)), (2, at(1)), (3, at(3))):
        run_id = f"run-{number}"
        run = RunRecord(
            RunId(run_id), "/repo", RunStatus.RUNNING, run_from_json({"createdAt": created})
        )
        store.create_run(run, [request(run_id, 1, "GREEN"), request(run_id, 2), request(run_id, 3)])
    everything = store.all_requests()
    for status in ("QUEUED", "GREEN"):
        assert store.all_requests(status) == [r for r in everything if r.status == status]
    assert [r.id for r in store.all_requests("QUEUED")][:2] == ["run-3-2", "run-3-3"]

    def plan(status: str) -> str:
        compiled = all_requests_query(status).compile(dialect=sa_sqlite.dialect())
        params = [compiled.params[name] for name in compiled.positiontup or []]
        with sqlite3.connect(tmp_path / "state" / "state.sqlite") as raw:
            rows = raw.execute(f"EXPLAIN QUERY PLAN {compiled}", params).fetchall()
        return " | ".join(str(row[-1]) for row in rows)

    for status in (Statuses.QUEUED, Statuses.RUNNING, Statuses.WAITING_HUMAN):
        assert "SCAN requests USING INDEX active_request_execution" in plan(status)
    assert "active_request_execution" not in plan(Statuses.GREEN)  # not in that index


def test_a_claim_searches_executions_by_index_never_scans_them(
    open_store: OpenStore, tmp_path: Path
) -> None:
    """Every statement a claim and a settlement issue finds its rows through an index: the
    key's holder through the partial unique index ``active_key`` (a bound ``IN`` list kept
    SQLite from using it, so each claim scanned the whole history), its newest record
    through ``history_by_key``; and GC's eviction check (the history is over its cap here)
    looks for a key's holder and a request's wait through ``active_key`` and
    ``active_request_execution`` (it scanned both tables for each candidate). Checked on
    the statements as executed (SQLAlchemy's public ``before_cursor_execute`` event),
    planned by SQLite itself."""
    store = open_store(history_records_max=3)
    for number in range(3):  # a history, so a scan would have rows to scan
        record(store, f"old-{number}", f"execution-old-{number}", completed_at=at(number))

    def claims() -> None:
        first = execution("execution-1")
        assert store.claim(first, alive).outcome is ClaimOutcome.OWNED
        assert store.claim(execution("execution-2"), alive).outcome is ClaimOutcome.BUSY
        assert store.complete_execution(settled(first, completed_at=at(9)), record=True)
        assert store.claim(execution("execution-3"), alive).outcome is ClaimOutcome.REUSED

    plans = query_plans(
        tmp_path / "state" / "state.sqlite",
        claims,
        lambda sql: "executions" in sql and not sql.lstrip().upper().startswith("INSERT"),
    )
    assert len(plans) >= 5
    assert any("holder" in sql for sql, _ in plans)  # GC looked for a victim
    for sql, steps in plans:
        plan = " | ".join(steps)
        scans = [f"SCAN {table}" for table in ("executions", "holder", "requests")]
        assert not any(scan in plan for scan in scans), (sql, plan)
        if "'WAITING_HUMAN'" in sql and sql.lstrip().upper().startswith("SELECT"):
            assert "USING INDEX active_key" in plan, (sql, plan)


def test_prune_finds_the_runs_with_active_requests_through_their_index(
    open_store: OpenStore, tmp_path: Path
) -> None:
    """``prune`` keeps every Run holding an active request; it finds them through the partial
    index of active requests, not by reading every request of every Run (a bound ``IN``
    list kept SQLite from using it)."""
    store = open_store()
    for number in range(3):
        run_id = f"run-{number}"
        run = RunRecord(
            RunId(run_id), "/repo", RunStatus.INCOMPLETE, run_from_json({"createdAt": at(number)})
        )
        store.create_run(run, [request(run_id, 1, "GREEN"), request(run_id, 2)])
    outcomes = []
    ((_sql, steps),) = query_plans(
        tmp_path / "state" / "state.sqlite",
        lambda: outcomes.append(store.prune(before=None, keep=0, dry_run=True)),
        lambda sql: sql.lstrip().startswith("SELECT requests.run_id"),
    )
    # each Run has a QUEUED request
    assert sorted(outcomes[0].kept_live) == ["run-0", "run-1", "run-2"]
    assert "USING INDEX active_request_execution" in " | ".join(steps), steps


def test_a_change_mark_that_cannot_be_read_is_a_state_error(
    open_store: OpenStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection the mark cannot open (a locked or vanished file) is a StateError naming
    the file, and the next mark opens a new connection: the monitor shows the error and
    reads again."""
    store = open_store()

    def refused() -> Any:
        raise sqlite3.OperationalError("unable to open database file")

    with monkeypatch.context() as patch:
        patch.setattr(store._engine, "raw_connection", refused)
        with pytest.raises(StateError, match=re.escape(str(tmp_path / "state" / STATE_FILE))):
            store.change_mark()
    assert store._marker is None
    first = store.change_mark()
    assert store.change_mark() == first


def test_a_record_leaving_the_history_leaves_its_noted_uses(
    open_store: OpenStore, tmp_path: Path
) -> None:
    """A use is noted beside its record (revision 7); ``cache rm`` and GC take it away with
    the record, so a record that comes back to the history starts with its own time."""
    store = open_store(history_records_max=2)

    def noted_uses() -> set[str]:
        rows = raw(tmp_path / "state" / STATE_FILE, "SELECT execution_id FROM record_uses")
        return {row[0] for row in rows}

    record(store, "k1", "execution-1")
    record(store, "k2", "execution-2")
    assert store.latest_record(ReuseKey("k1"), touch=True) is not None
    assert store.latest_record(ReuseKey("k2"), touch=True) is not None
    assert noted_uses() == {"execution-1", "execution-2"}
    assert store.remove_key(ReuseKey("k1"))
    assert noted_uses() == {"execution-2"}
    record(store, "k3", "execution-3")
    record(store, "k4", "execution-4")  # over the cap: the uses folded, the least recent goes
    assert keys_in_history(store) == {"k3", "k4"} and noted_uses() == set()
