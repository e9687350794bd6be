"""A state read as if its dead owners' Runs were settled (entrypoints/dead_owner_view.py):
the Run and its open requests read ERROR / OWNER_DIED, by the same legal moves a writer
would take; a settled request and a live owner's Run read as saved."""

from __future__ import annotations

from artifactize.entrypoints.dead_owner_view import DeadOwnersView
from artifactize.kernel.document_codec import (
    request_from_json,
    run_from_json,
    run_json,
)
from artifactize.ports.ids import EvalId, RequestId, RunId
from artifactize.ports.state import RequestRecord, RunRecord
from artifactize.ports.statuses import RequestStatus, RunStatus
from tests.fakes.state import MemoryStateStore


def _store(owner_pid: int) -> MemoryStateStore:
    store = MemoryStateStore()
    run = RunRecord(
        RunId("run-a"),
        "/repo",
        RunStatus.RUNNING,
        run_from_json(
            {"id": "run-a", "status": "RUNNING", "owner": {"pid": owner_pid, "startTime": 1.0}}
        ),
    )
    requests = [
        RequestRecord(
            RequestId(f"run-a-{ordinal}"),
            RunId("run-a"),
            EvalId(f"doc/eval{ordinal}"),
            ordinal,
            None,
            status,
            request_from_json({"id": f"run-a-{ordinal}", "status": str(status)}),
        )
        for ordinal, status in enumerate((RequestStatus.QUEUED, RequestStatus.GREEN), start=1)
    ]
    store.create_run(run, requests)
    return store


def test_a_dead_owners_run_and_its_open_requests_read_error() -> None:
    view = DeadOwnersView(_store(owner_pid=7), frozenset({(7, 1.0)}))
    run = view.get_run(RunId("run-a"))
    assert run is not None and (run.status, run.data.status) == ("ERROR", "ERROR")
    assert run_json(run.data)["errorCode"] == "OWNER_DIED"
    open_request, settled = view.list_requests(RunId("run-a"))
    assert (open_request.status, open_request.data.status) == ("ERROR", "ERROR")
    assert (settled.status, settled.data.status) == ("GREEN", "GREEN")  # left as saved
    (head,) = view.list_run_heads(None, 10, 0)  # the monitor's Run list
    assert head.status == "ERROR" and view.run_head(RunId("run-a")) == head


def test_a_live_owners_run_reads_as_saved() -> None:
    view = DeadOwnersView(_store(owner_pid=8), frozenset({(7, 1.0)}))
    run = view.get_run(RunId("run-a"))
    assert run is not None and run.status == "RUNNING"
    assert [head.status for head in view.list_run_heads(None, 10, 0)] == ["RUNNING"]
    request = view.get_request(RequestId("run-a-1"))
    assert request is not None and request.status == "QUEUED"


class _CountingRuns(MemoryStateStore):
    def __init__(self) -> None:
        super().__init__()
        self.run_reads = 0

    def get_run(self, run_id: RunId, *, definitions: bool = True) -> RunRecord | None:
        self.run_reads += 1
        return super().get_run(run_id, definitions=definitions)


def test_a_request_list_reads_a_dead_owners_open_requests_as_error_reading_its_run_once() -> None:
    """``iter_requests`` (``request list``) as ``list_requests``, and a filter by status
    after the view: a dead 10,000-Artifact Run has 14,000 open requests, and its 14 MB Run
    was read once for each."""
    saved = _store(owner_pid=7)
    counting = _CountingRuns()
    for run in saved.runs.values():
        counting.create_run(run, saved.list_requests(run.id))
    for ordinal in (3, 4, 5):  # three more open requests of the same Run
        counting.requests[RequestId(f"run-a-{ordinal}")] = RequestRecord(
            RequestId(f"run-a-{ordinal}"),
            RunId("run-a"),
            EvalId(f"doc/eval{ordinal}"),
            ordinal,
            None,
            RequestStatus.QUEUED,
            request_from_json({"id": f"run-a-{ordinal}", "status": "QUEUED"}),
        )
    view = DeadOwnersView(counting, frozenset({(7, 1.0)}))
    listed = list(view.iter_requests())
    assert [r.status for r in listed] == ["ERROR", "GREEN", "ERROR", "ERROR", "ERROR"]
    assert counting.run_reads == 1
    assert [r.id for r in view.iter_requests("ERROR")] == [
        "run-a-1",
        "run-a-3",
        "run-a-4",
        "run-a-5",
    ]
    assert list(view.iter_requests("QUEUED")) == []  # read as ERROR, so not QUEUED


def test_a_dead_owners_run_ends_when_the_view_says() -> None:
    """With ``settled_at``, the Run's ``completedAt`` is set as a writer's settlement sets
    it, so its duration stops growing; without, it stays unset."""
    at = "2026-03-01T10:00:00.000000000Z"
    settled = DeadOwnersView(_store(owner_pid=7), frozenset({(7, 1.0)}), at).get_run(RunId("run-a"))
    unset = DeadOwnersView(_store(owner_pid=7), frozenset({(7, 1.0)})).get_run(RunId("run-a"))
    assert settled is not None and run_json(settled.data)["completedAt"] == at
    assert unset is not None and run_json(unset.data).get("completedAt") is None


def test_a_text_list_reads_a_dead_owners_open_requests_as_error() -> None:
    """``iter_request_lines`` (the text ``request list``) as ``iter_requests``."""
    view = DeadOwnersView(_store(owner_pid=7), frozenset({(7, 1.0)}))
    assert [(line.id, line.status) for line in view.iter_request_lines()] == [
        ("run-a-1", "ERROR"),
        ("run-a-2", "GREEN"),
    ]
    assert [line.id for line in view.iter_request_lines(RunId("run-a"), "ERROR")] == ["run-a-1"]
    assert list(view.iter_request_lines(None, "QUEUED")) == []
    live = DeadOwnersView(_store(owner_pid=8), frozenset({(7, 1.0)}))
    assert [line.status for line in live.iter_request_lines()] == ["QUEUED", "GREEN"]
