"""The state store's contract, run against the SQLite adapter and the in-memory fake alike,
so unit tests that use the fake rely on what the real store does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.sqlite_state import SqliteStateStores
from ports.state import ClaimOutcome, ExecutionRecord, KeyInUse, StateStore
from tests.fakes.state import MemoryStateStore

KEY = "a" * 64


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateStore]:
    if request.param == "memory":
        yield MemoryStateStore()
        return
    opened = SqliteStateStores().open(str(tmp_path / "state"), create=True)
    assert opened is not None
    yield opened
    opened.close()


def running(identifier: str, pid: int = 10, key: str | None = KEY) -> ExecutionRecord:
    return ExecutionRecord(
        identifier, key, "d" * 64, "RUNNING", pid, 1.0, None, None, {"id": identifier}
    )


def settled(execution: ExecutionRecord, status: str, completed: str) -> ExecutionRecord:
    data: dict[str, Any] = {**execution.data, "status": status}
    return ExecutionRecord(
        execution.id,
        KEY,
        execution.eval_def_hash,
        status,
        execution.owner_pid,
        execution.owner_start_time,
        None,
        completed,
        data,
    )


def alive(pid: int, start: float) -> bool:
    return True


def test_one_active_execution_per_key_then_reuse(store: StateStore) -> None:
    first = running("execution-1")
    assert store.claim(first, alive).outcome is ClaimOutcome.OWNED
    busy = store.claim(running("execution-2", pid=11), alive)
    assert (busy.outcome, busy.record and busy.record.id) == (ClaimOutcome.BUSY, "execution-1")
    assert store.complete_execution(
        settled(first, "GREEN", "2026-01-01T00:00:00.000000000Z"), record=True
    )
    reused = store.claim(running("execution-3", pid=12), alive)
    assert (reused.outcome, reused.record and reused.record.id) == (
        ClaimOutcome.REUSED,
        "execution-1",
    )


def test_the_newest_record_wins_and_errors_are_not_recorded(store: StateStore) -> None:
    for identifier, status, completed in (
        ("execution-1", "GREEN", "2026-01-01T00:00:00.000000000Z"),
        ("execution-2", "RED", "2026-01-02T00:00:00.000000000Z"),
        ("execution-3", "ERROR", "2026-01-03T00:00:00.000000000Z"),
    ):
        execution = running(identifier)
        store.insert_execution(execution)
        recorded = store.complete_execution(settled(execution, status, completed), record=True)
        assert recorded is (status != "ERROR")
    latest = store.latest_record(KEY, touch=False)
    assert latest is not None and latest.id == "execution-2"
    assert [r.id for r in store.history(KEY)] == ["execution-2", "execution-1"]


def test_a_dead_owner_is_settled_and_the_key_taken(store: StateStore) -> None:
    store.claim(running("execution-1"), alive)
    taken = store.claim(running("execution-2", pid=11), lambda pid, start: pid != 10)
    assert taken.outcome is ClaimOutcome.OWNED
    dead = store.get_execution("execution-1")
    assert dead is not None and dead.status == "ERROR" and dead.data["errorCode"] == "OWNER_DIED"


def test_mirrors_join_only_when_newer(store: StateStore) -> None:
    local = running("execution-1")
    store.insert_execution(local)
    store.complete_execution(settled(local, "GREEN", "2026-01-02T00:00:00.000000000Z"), record=True)
    older = settled(running("remote-x", pid=0), "RED", "2026-01-01T00:00:00.000000000Z")
    newer = settled(running("remote-y", pid=0), "RED", "2026-01-03T00:00:00.000000000Z")
    assert not store.add_mirror(older)
    assert store.add_mirror(newer)
    assert not store.add_mirror(newer)  # known already
    latest = store.latest_record(KEY, touch=False)
    assert latest is not None and latest.id == "remote-y"


def test_a_key_in_use_cannot_be_removed(store: StateStore) -> None:
    first = running("execution-1")
    store.claim(first, alive)
    with pytest.raises(KeyInUse):
        store.remove_key(KEY)
    store.complete_execution(settled(first, "GREEN", "2026-01-01T00:00:00.000000000Z"), record=True)
    assert store.remove_key(KEY) is True
    assert store.latest_record(KEY, touch=False) is None
    assert store.remove_key(KEY) is False
