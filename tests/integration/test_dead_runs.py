"""``StateStore.settle_dead_runs`` on real SQLite: which Runs, requests and executions a
reader settles when a Run's owner died, and what it never touches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from artifactize.adapters.sqlite.state import SqliteStateStore, SqliteStateStores
from artifactize.kernel.document_codec import (
    request_from_json,
    run_from_json,
)
from artifactize.ports.documents import Execution
from artifactize.ports.ids import EvalId, ExecutionId, RequestId, RunId
from artifactize.ports.state import ExecutionRecord, RequestRecord, RunRecord
from artifactize.ports.statuses import ExecutionStatus, RequestStatus, RunStatus
from tests.support.sqlite_stores import opened_sqlite_store

DEAD = (111, 1.5)
LIVE = (222, 2.5)


def alive(pid: int, start: float) -> bool:
    return (pid, start) == LIVE


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStateStore]:
    with opened_sqlite_store(tmp_path / "state") as opened:
        yield opened


def run(run_id: str, owner: tuple[int, float] | None, status: str = "RUNNING") -> RunRecord:
    data: dict[str, Any] = {"id": run_id, "status": status, "createdAt": "2026-01-01T00:00:00Z"}
    if owner is not None:
        data["owner"] = {"pid": owner[0], "startTime": owner[1]}
    return RunRecord(RunId(run_id), "/repo", RunStatus(status), run_from_json(data))


def request(run_id: str, ordinal: int, status: str, execution: str | None = None) -> RequestRecord:
    request_id = f"{run_id}-{ordinal}"
    data = {"id": request_id, "status": status, "executionId": execution}
    return RequestRecord(
        RequestId(request_id),
        RunId(run_id),
        EvalId(f"a/e{ordinal}"),
        ordinal,
        None if execution is None else ExecutionId(execution),
        RequestStatus(status),
        request_from_json(data),
    )


def execution(
    execution_id: str, owner: tuple[int, float], status: str = "RUNNING"
) -> ExecutionRecord:
    return ExecutionRecord(
        ExecutionId(execution_id),
        None,
        "h",
        ExecutionStatus(status),
        owner[0],
        owner[1],
        None,
        None,
        Execution(id=ExecutionId(execution_id)),
    )


def test_a_dead_owners_run_settles_with_its_requests_and_executions(
    store: SqliteStateStore,
) -> None:
    store.insert_execution(execution("x-1", DEAD))
    store.insert_execution(execution("x-other", LIVE))
    store.create_run(
        run("run-dead", DEAD),
        [
            request("run-dead", 1, "RUNNING", "x-1"),
            request("run-dead", 2, "QUEUED"),
            request("run-dead", 3, "WAITING_HUMAN"),
            request("run-dead", 4, "GREEN"),
            request("run-dead", 5, "BLOCKED", "x-other"),
        ],
    )
    assert store.settle_dead_runs(alive) == ("run-dead",)
    settled = store.get_run(RunId("run-dead"))
    assert settled is not None and settled.status == "ERROR"
    assert (settled.data.error_code, settled.data.error) == ("OWNER_DIED", "Run owner died.")
    statuses = [(r.status, r.data.error_code) for r in store.list_requests(RunId("run-dead"))]
    assert statuses == [
        ("ERROR", "OWNER_DIED"),
        ("ERROR", "OWNER_DIED"),
        ("WAITING_HUMAN", None),  # a person may still answer it
        ("GREEN", None),
        ("ERROR", "OWNER_DIED"),
    ]
    dead_execution = store.get_execution(ExecutionId("x-1"))
    assert dead_execution is not None and dead_execution.status == "ERROR"
    assert dead_execution.data.error == "Execution owner died."
    other = store.get_execution(
        ExecutionId("x-other")
    )  # another process's execution: never touched
    assert other is not None and other.status == "RUNNING"
    assert store.settle_dead_runs(alive) == ()  # settled once


def test_a_dead_owners_claim_whose_request_was_not_saved_running_settles_too(
    store: SqliteStateStore,
) -> None:
    """A ``verify`` killed after its claim committed but before the request's held RUNNING
    save was written: the request says QUEUED and points at nothing; the dead owner's
    RUNNING execution is settled all the same (another owner's, and a settled one, are
    not), so no key stays held by a dead process."""
    store.insert_execution(execution("x-claimed", DEAD))
    store.insert_execution(execution("x-done", DEAD, "GREEN"))
    store.insert_execution(execution("x-other", LIVE))
    store.create_run(run("run-dead", DEAD), [request("run-dead", 1, "QUEUED")])
    assert store.settle_dead_runs(alive) == ("run-dead",)
    (settled,) = store.list_requests(RunId("run-dead"))
    assert (settled.status, settled.data.error_code) == ("ERROR", "OWNER_DIED")
    statuses = {
        name: (found.status, found.data.error_code)
        for name in ("x-claimed", "x-done", "x-other")
        if (found := store.get_execution(ExecutionId(name))) is not None
    }
    assert statuses == {
        "x-claimed": ("ERROR", "OWNER_DIED"),
        "x-done": ("GREEN", None),
        "x-other": ("RUNNING", None),
    }


def test_live_unowned_and_finished_runs_are_left_alone(store: SqliteStateStore) -> None:
    store.create_run(run("run-live", LIVE), [request("run-live", 1, "RUNNING")])
    store.create_run(run("run-old", None), [request("run-old", 1, "RUNNING")])
    store.create_run(run("run-done", DEAD, "GREEN"), [request("run-done", 1, "GREEN")])
    assert store.settle_dead_runs(alive) == ()
    assert [store.get_run(RunId(r)).status for r in ("run-live", "run-old", "run-done")] == [  # type: ignore[union-attr]
        "RUNNING",
        "RUNNING",
        "GREEN",
    ]


def test_the_monitor_reads_a_killed_owners_run_as_settled(tmp_path: Path) -> None:
    """A real owner process killed with SIGKILL (it commits nothing), its RUNNING Run in a
    real state: the monitor's source from the composition root, read-only, shows the Run
    ERROR and its running request ERROR while the state still says RUNNING."""
    import signal
    import subprocess

    import psutil

    from artifactize.entrypoints.bootstrap import Services
    from artifactize.entrypoints.cli.global_options import GlobalOptions
    from artifactize.entrypoints.container import Container

    owner = subprocess.Popen(["sleep", "60"])
    try:
        identity = (owner.pid, psutil.Process(owner.pid).create_time())
        state = tmp_path / "state"
        with opened_sqlite_store(state) as opened:
            opened.create_run(run("run-k", identity), [request("run-k", 1, "RUNNING")])
        options = GlobalOptions(repo=str(tmp_path), state_dir=str(state))
        source = Services(Container(), options, progress=lambda _: None).monitor_source(
            all_repos=True
        )
        (row,) = source.runs(10)
        assert row.status == "RUNNING"  # its owner runs
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        (row,) = source.runs(10)
        screen = source.run("run-k")
        assert (row.status, row.counts) == ("ERROR", {"ERROR": 1})
        assert screen is not None and screen.run["errorCode"] == "OWNER_DIED"
        assert [str(r.status) for r in screen.requests] == ["ERROR"]
    finally:
        owner.kill()
        owner.wait()
    saved = SqliteStateStores().open(str(state), create=False, read_only=True)
    assert saved is not None
    head = saved.run_head(RunId("run-k"))
    assert head is not None and head.status == "RUNNING"  # the monitor wrote nothing
    saved.close()
