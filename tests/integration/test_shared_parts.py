"""The parts Runs share (state revision 6), on real SQLite files.

A Run's definitions and a settled request's body are kept once by digest however many
Runs name them; every reader puts the documents back whole; a request written again holds
its whole document; ``prune`` removes a part no row names; a replay whose parts are gone
writes nothing; a row whose part is lost is named, and ``repair`` drops it."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from artifactize.adapters.sqlite import recovery
from artifactize.adapters.sqlite.connection import PAGE_CACHE_KIB
from artifactize.adapters.sqlite.state import SqliteStateStore
from artifactize.adapters.sqlite.state_files import STATE_FILE
from artifactize.kernel.document_codec import request_from_json, request_json, run_from_json
from artifactize.ports.ids import EvalId, RequestId, RunId
from artifactize.ports.state import RequestRecord, RunRecord, StateError
from artifactize.ports.statuses import RequestStatus, RunStatus
from tests.integration.test_sqlite_state import OpenStore, at, open_store, raw

__all__ = ["open_store"]  # the fixture, used by name

DEFINITIONS: dict[str, Any] = {
    "evals": {f"doc/eval{n}": {"artifact": "doc", "title": f"Check {n}"} for n in (1, 2)},
    "artifacts": {"doc": {"path": "doc", "title": "Ü ✓"}},
}


def run(run_id: str, second: int, definitions: Any = DEFINITIONS) -> RunRecord:
    data = {"createdAt": at(second), "definitions": definitions, "status": "GREEN"}
    return RunRecord(RunId(run_id), "/repo", RunStatus.GREEN, run_from_json(data))


def reused(run_id: str, ordinal: int, second: int, **fields: Any) -> RequestRecord:
    """A request of ``run_id`` that reused ``execution-old-<ordinal>``: all but its own
    members are the same in every Run."""
    document = {
        "id": f"{run_id}-{ordinal}",
        "runId": run_id,
        "evalId": f"doc/eval{ordinal}",
        "ordinal": ordinal,
        "status": "GREEN",
        "title": f"Check {ordinal}",
        "key": f"{ordinal}" * 64,
        "executionId": f"execution-old-{ordinal}",
        "source": {"runId": "run-old", "requestId": f"run-old-{ordinal}", "kind": "cache"},
        "createdAt": at(second),
        "completedAt": at(second + 1),
        "summary": {"status": "GREEN", "wallMs": 1000},
        **fields,
    }
    return RequestRecord(
        RequestId(f"{run_id}-{ordinal}"),
        RunId(run_id),
        EvalId(f"doc/eval{ordinal}"),
        ordinal,
        None,  # its record is not in this state (the document names it all the same)
        RequestStatus.GREEN,
        request_from_json(document),
    )


def two_runs(store: SqliteStateStore) -> dict[str, list[RequestRecord]]:
    made = {}
    for second, run_id in ((1, "run-a"), (10, "run-b")):
        made[run_id] = [reused(run_id, 1, second), reused(run_id, 2, second)]
        store.create_run(run(run_id, second), made[run_id])
    return made


def counts(tmp_path: Path) -> tuple[int, int]:
    database = tmp_path / "state" / STATE_FILE
    ((definitions, bodies),) = raw(
        database,
        "SELECT (SELECT count(*) FROM run_definitions), (SELECT count(*) FROM request_bodies)",
    )
    return int(definitions), int(bodies)


def test_runs_reusing_the_same_verdicts_share_their_parts(
    open_store: OpenStore, tmp_path: Path
) -> None:
    store = open_store()
    made = two_runs(store)
    assert counts(tmp_path) == (1, 2)  # one definitions, one body per eval
    rows = raw(tmp_path / "state" / STATE_FILE, "SELECT data, body FROM requests")
    assert all(body is not None and '"key"' not in data for data, body in rows)
    for run_id, requests in made.items():
        whole = store.get_run(RunId(run_id))
        assert whole is not None and whole.data.definitions == DEFINITIONS
        assert store.list_requests(RunId(run_id)) == requests
        assert store.get_request(requests[0].id) == requests[0]
        assert store.definitions_for(RunId(run_id), "doc/eval2") == {
            "evals": {"doc/eval2": DEFINITIONS["evals"]["doc/eval2"]},
            "artifacts": {"doc": DEFINITIONS["artifacts"]["doc"]},
        }
    assert store.all_requests() == [*made["run-b"], *made["run-a"]]
    assert list(store.iter_requests("GREEN")) == [*made["run-b"], *made["run-a"]]
    (listed,) = store.list_runs("/repo", 1, 1)
    assert listed.id == "run-a" and listed.data.definitions == {"evals": {}, "artifacts": {}}


def test_a_request_written_again_holds_its_whole_document(
    open_store: OpenStore, tmp_path: Path
) -> None:
    store = open_store()
    made = two_runs(store)
    document = {**request_json(made["run-b"][0].data), "title": "Again", "reviewer": "ana"}
    changed = replace(made["run-b"][0], data=request_from_json(document))
    store.update_request(changed)
    assert store.get_request(changed.id) == changed
    assert [line.reviewer for line in store.iter_request_lines(RunId("run-b"))] == ["ana", None]
    database = tmp_path / "state" / STATE_FILE
    assert raw(database, "SELECT body FROM requests WHERE id = 'run-b-1'") == [(None,)]
    assert store.get_request(made["run-a"][0].id) == made["run-a"][0]  # its body still held


def test_prune_removes_the_parts_no_row_names(open_store: OpenStore, tmp_path: Path) -> None:
    store = open_store()
    two_runs(store)
    store.prune(before=None, keep=1, dry_run=False)
    assert counts(tmp_path) == (1, 2)  # run-b still names them
    other: dict[str, Any] = {"evals": {}, "artifacts": {"other": {}}}
    newest = [reused("run-c", 1, 20, title="Another title")]
    store.create_run(run("run-c", 20, other), newest)
    assert counts(tmp_path) == (2, 3)
    store.prune(before=None, keep=1, dry_run=False)
    assert counts(tmp_path) == (1, 1)
    whole = store.get_run(RunId("run-c"))
    assert whole is not None and whole.data.definitions == other
    assert store.list_requests(RunId("run-c")) == newest


def test_a_replay_whose_parts_are_gone_writes_nothing(open_store: OpenStore) -> None:
    store = open_store()
    made = two_runs(store)
    stamp = store.history_stamp()
    planned = store.run_rows(run("run-new", 30), [reused("run-new", 1, 30)])
    assert set(planned.shared) == {planned.run[5], planned.requests[0][7]}
    assert store.replay_run(planned, stamp, ())  # both parts held: run-a's and run-b's
    unheld = store.run_rows(run("run-new2", 31), [reused("run-new2", 1, 31, title="new")])
    assert not store.replay_run(unheld, stamp, ())
    assert store.get_run(RunId("run-new2")) is None
    assert store.list_requests(RunId("run-new")) == [reused("run-new", 1, 30)]
    assert len(store.all_requests()) == len(made["run-a"]) * 2 + 1


def test_a_row_naming_a_lost_part_is_named_and_repair_drops_it(
    open_store: OpenStore, tmp_path: Path
) -> None:
    store = open_store()
    two_runs(store)
    store.close()
    database = tmp_path / "state" / STATE_FILE
    with sqlite3.connect(database) as db:  # as a damaged page would lose it
        (body,) = db.execute("SELECT body FROM requests WHERE id = 'run-b-2'").fetchone()
        db.execute("DELETE FROM request_bodies WHERE digest = ?", (body,))
    again = open_store()
    with pytest.raises(StateError, match=r"requests row run-a-2 names a shared part"):
        again.list_requests(RunId("run-a"))
    again.close()
    target = tmp_path / "new" / STATE_FILE
    open_store(tmp_path / "new").close()
    found = recovery.Recovery(str(database), str(target))
    recovery._copy(str(database), str(target), found)
    assert found.copied["requests"] == 2 and found.unreadable == {"requests": 1}
    repaired = open_store(tmp_path / "new")
    assert [r.id for r in repaired.all_requests()] == ["run-b-1", "run-a-1"]


def test_each_connection_keeps_its_statement_journals_in_memory_but_vacuum(
    open_store: OpenStore, tmp_path: Path
) -> None:
    """A Run's inserts and touches journal each statement in memory (they spilled to a
    temporary file, page by page); ``prune``'s ``VACUUM`` copies the database through a
    file, and the connection goes back to memory after it."""
    store = open_store()
    two_runs(store)

    def pragmas() -> tuple[int, int]:
        raw = store._engine.raw_connection()
        try:
            found = [raw.execute(f"PRAGMA {name}").fetchone()[0] for name in PRAGMAS]
        finally:
            raw.close()
        return found[0], found[1]

    assert pragmas() == (2, -PAGE_CACHE_KIB)  # 2: MEMORY
    store.prune(before=None, keep=1, dry_run=False)  # compacts
    assert pragmas() == (2, -PAGE_CACHE_KIB)
    assert counts(tmp_path) == (1, 2)


PRAGMAS = ("temp_store", "cache_size")
