"""The state store's contract, run against the SQLite adapter and the in-memory fake alike,
so unit tests that use the fake rely on what the real store does."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from artifactize.domain.reviews.human.settlement import supersession
from artifactize.domain.reviews.run.current import run_may_settle
from artifactize.domain.use_cases.request_views import (
    FEW_OF_A_RUN,
    RequestViews,
    list_line,
    request_definition,
)
from artifactize.kernel.document_codec import (
    execution_changed,
    execution_from_json,
    request_changed,
    request_from_json,
    request_json,
    request_merged,
    run_changed,
    run_from_json,
    run_json,
)
from artifactize.kernel.transitions import IllegalTransition
from artifactize.ports.documents import Execution
from artifactize.ports.ids import EvalId, ExecutionId, RequestId, ReuseKey, RunId
from artifactize.ports.state import (
    ClaimOutcome,
    ExecutionRecord,
    HumanClaim,
    HumanClaimRefused,
    HumanEnding,
    HumanNotWaiting,
    HumanSettlement,
    KeyInUse,
    PruneOutcome,
    RequestRecord,
    RunRecord,
    StateError,
    StateStore,
)
from artifactize.ports.statuses import ExecutionStatus, RequestStatus, RunStatus
from tests.fakes.state import MemoryStateStore
from tests.support.documents import opaque
from tests.support.query_plans import table_scans
from tests.support.sqlite_stores import opened_sqlite_store

KEY = ReuseKey("a" * 64)


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateStore]:
    if request.param == "memory":
        yield MemoryStateStore()
        return
    with opened_sqlite_store(tmp_path / "state") as opened:
        yield opened


def running(identifier: str, pid: int = 10, key: ReuseKey | None = KEY) -> ExecutionRecord:
    return ExecutionRecord(
        ExecutionId(identifier),
        key,
        "d" * 64,
        ExecutionStatus.RUNNING,
        pid,
        1.0,
        None,
        None,
        Execution(id=ExecutionId(identifier)),
    )


def settled(execution: ExecutionRecord, status: str, completed: str) -> ExecutionRecord:
    data = execution_changed(execution.data, {"status": status})
    return ExecutionRecord(
        execution.id,
        ReuseKey(KEY),
        execution.eval_def_hash,
        ExecutionStatus(status),
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
    latest = store.latest_record(ReuseKey(KEY), touch=False)
    assert latest is not None and latest.id == "execution-2"
    assert [r.id for r in store.history(ReuseKey(KEY))] == ["execution-2", "execution-1"]


def test_a_dead_owner_is_settled_and_the_key_taken(store: StateStore) -> None:
    store.claim(running("execution-1"), alive)
    taken = store.claim(running("execution-2", pid=11), lambda pid, start: pid != 10)
    assert taken.outcome is ClaimOutcome.OWNED
    dead = store.get_execution(ExecutionId("execution-1"))
    assert dead is not None and dead.status == "ERROR" and dead.data.error_code == "OWNER_DIED"


MIRRORED_AT = "2026-02-01T00:00:00.000000000Z"


def test_mirrors_join_only_when_newer(store: StateStore) -> None:
    local = running("execution-1")
    store.insert_execution(local)
    store.complete_execution(settled(local, "GREEN", "2026-01-02T00:00:00.000000000Z"), record=True)
    older = mirror("remote-x", "RED", "2026-01-01T00:00:00.000000000Z")
    newer = mirror("remote-y", "RED", "2026-01-03T00:00:00.000000000Z")
    assert not store.add_mirror(older, supersession(older, MIRRORED_AT))
    assert store.add_mirror(newer, supersession(newer, MIRRORED_AT))
    assert not store.add_mirror(newer, supersession(newer, MIRRORED_AT))  # known already
    latest = store.latest_record(ReuseKey(KEY), touch=False)
    assert latest is not None and latest.id == "remote-y"


def test_a_key_in_use_cannot_be_removed(store: StateStore) -> None:
    first = running("execution-1")
    store.claim(first, alive)
    with pytest.raises(KeyInUse):
        store.remove_key(ReuseKey(KEY))
    store.complete_execution(settled(first, "GREEN", "2026-01-01T00:00:00.000000000Z"), record=True)
    assert store.remove_key(ReuseKey(KEY)) is True
    assert store.latest_record(ReuseKey(KEY), touch=False) is None
    assert store.remove_key(ReuseKey(KEY)) is False


# --- Human claims and settlement ---------------------------------------------------------

SETTLED_AT = "2026-01-01T00:00:00.000000000Z"


def human_run(
    store: StateStore, run_id: str, created: str, waits: list[tuple[str, str]]
) -> list[RequestRecord]:
    """A Run whose requests ``(request ID, execution ID)`` all wait for a Human."""
    requests = [
        RequestRecord(
            RequestId(request_id),
            RunId(run_id),
            EvalId(f"doc/eval{ordinal}"),
            ordinal,
            ExecutionId(execution_id),
            RequestStatus.WAITING_HUMAN,
            request_from_json({"id": request_id, "status": "WAITING_HUMAN"}),
        )
        for ordinal, (request_id, execution_id) in enumerate(waits, start=1)
    ]
    store.create_run(
        RunRecord(RunId(run_id), "/repo", RunStatus.RUNNING, run_from_json({"createdAt": created})),
        requests,
    )
    return requests


def waiting_execution(
    store: StateStore, identifier: str, key: ReuseKey | None = KEY
) -> ExecutionRecord:
    """An execution waiting for a Human: holding ``key``, or (None) holding no key."""
    execution = dataclasses.replace(
        running(identifier, key=key), status=ExecutionStatus.WAITING_HUMAN
    )
    if key is None:
        store.insert_execution(execution)
    else:
        assert store.claim(running(identifier, key=key), alive).outcome is ClaimOutcome.OWNED
        store.complete_execution(execution, record=False)
    return execution


def settlement(
    request: RequestRecord,
    execution: ExecutionRecord,
    status: str = "GREEN",
    reviewer: str = "alice",
    key: ReuseKey | None = KEY,
) -> HumanSettlement:
    data = execution_changed(execution.data, {"status": status})
    settled_execution = dataclasses.replace(
        execution,
        key=key,
        status=ExecutionStatus(status),
        completed_at=SETTLED_AT,
        data=data,
    )
    settled_request = dataclasses.replace(
        request,
        status=RequestStatus(status),
        data=request_changed(request.data, status=RequestStatus(status)),
    )
    return HumanSettlement(
        settled_request,
        settled_execution,
        reviewer,
        record=status != "ERROR" and key is not None,
        follower_fields=opaque({"status": status, "source": {"kind": "joined"}}),
    )


def test_a_claim_is_held_by_one_reviewer(store: StateStore) -> None:
    execution = waiting_execution(store, "execution-1")
    (request,) = human_run(store, "run-a", "1", [("run-a-1", execution.id)])
    assert store.human_claim(request.id) is None
    first = store.claim_human(request.id, "alice", "t1")
    assert first == HumanClaim(request.id, "alice", "t1")
    assert store.claim_human(request.id, "alice", "t2") == first  # idempotent, unchanged
    with pytest.raises(HumanClaimRefused) as refused:
        store.claim_human(request.id, "bob", "t3")
    assert refused.value.claimant == "alice"
    assert store.human_claim(request.id) == first


def test_claims_and_executions_read_together_are_those_read_one_by_one(
    store: StateStore,
) -> None:
    """What a list of every request reads in a few statements (``human_claims``,
    ``get_executions``) is what it read one request at a time."""
    first = waiting_execution(store, "execution-1")
    second = waiting_execution(store, "execution-2", key=None)
    requests = human_run(
        store, "run-a", "1", [("run-a-1", first.id), ("run-a-2", second.id), ("run-a-3", second.id)]
    )
    assert store.human_claims() == {}
    store.claim_human(requests[0].id, "alice", "t1")
    store.claim_human(requests[2].id, "bob", "t2")
    claims = store.human_claims()
    assert claims == {
        r.id: claim for r in requests if (claim := store.human_claim(r.id)) is not None
    }
    assert set(claims) == {requests[0].id, requests[2].id}
    wanted = [first.id, second.id, ExecutionId("execution-none")]
    assert store.get_executions(wanted) == {
        i: found for i in wanted if (found := store.get_execution(i)) is not None
    }
    assert store.get_executions([]) == {}


def test_the_change_mark_moves_with_every_write_and_only_then(store: StateStore) -> None:
    """A reader that shows the state again every second (the monitor) reads nothing while
    the mark holds: every kind of write that changes something moves it, and reads leave
    it alone."""
    marks = [store.change_mark()]

    def moved() -> bool:
        marks.append(store.change_mark())
        return marks[-1] != marks[-2]

    execution = waiting_execution(store, "execution-1")
    assert moved()  # a claim of the key and its completion
    (request,) = human_run(store, "run-a", "1", [("run-a-1", execution.id)])
    assert moved()  # create_run
    store.get_run(RunId("run-a"))
    store.list_requests(RunId("run-a"))
    store.human_claims()
    store.list_runs(None, 10, 0)
    assert not moved()  # reads
    store.claim_human(request.id, "alice", "t1")
    assert moved()
    store.unclaim_human(request.id, "alice")
    assert moved()
    store.update_request(
        dataclasses.replace(request, data=request_changed(request.data, title="renamed"))
    )
    assert moved()
    run = store.get_run(RunId("run-a"))
    assert run is not None
    store.update_run(dataclasses.replace(run, data=run_changed(run.data, comment="why")))
    assert moved()
    assert not moved()


def test_the_runs_heads_are_the_listed_runs_columns(store: StateStore) -> None:
    """``list_run_heads`` lists what ``list_runs`` lists, in its order, from the columns."""
    for index, (repo, created) in enumerate([("/a", "3"), ("/b", "1"), ("/a", "2"), ("/a", "")]):
        saved = run_from_json({"id": f"run-{index}", "createdAt": created})
        store.create_run(RunRecord(RunId(f"run-{index}"), repo, RunStatus.GREEN, saved), [])
    pages: list[tuple[str | None, int, int]] = [(None, 10, 0), ("/a", 2, 0), ("/a", 2, 1)]
    for repo_of, limit, offset in [*pages, ("/b", 10, 0)]:
        listed = store.list_runs(repo_of, limit, offset)
        heads = store.list_run_heads(repo_of, limit, offset)
        assert [(h.id, h.repo, h.status, h.created_at) for h in heads] == [
            (r.id, r.repo, r.status, r.data.created_at or None) for r in listed
        ]


def test_a_run_read_without_its_definitions_is_the_run_with_none(store: StateStore) -> None:
    definitions: dict[str, Any] = {
        "evals": {"doc/check": {"artifact": "doc", "id": "check"}},
        "artifacts": {"doc": {"name": "doc", "path": "doc"}},
    }
    saved = run_from_json({"id": "run-a", "createdAt": "1", "definitions": definitions})
    store.create_run(RunRecord(RunId("run-a"), "/repo", RunStatus.RUNNING, saved), [])
    whole = store.get_run(RunId("run-a"))
    bare = store.get_run(RunId("run-a"), definitions=False)
    assert whole is not None and bare is not None
    assert whole.data.definitions == definitions
    assert bare.data.definitions == {"evals": {}, "artifacts": {}}
    assert (bare.id, bare.repo, bare.status) == (whole.id, whole.repo, whole.status)
    rest = {k: v for k, v in run_json(whole.data).items() if k != "definitions"}
    assert {k: v for k, v in run_json(bare.data).items() if k != "definitions"} == rest
    assert run_json(bare.data) == run_json(store.list_runs(None, 1, 0)[0].data)
    assert store.get_run(RunId("run-none"), definitions=False) is None


def test_the_definitions_read_for_one_request_join_as_the_whole_runs(store: StateStore) -> None:
    """``definitions_for`` reads one eval and its Artifact out of a Run's definitions: what a
    request's view joins from them is what it joins from the whole."""
    definitions: dict[str, Any] = {
        "evals": {
            "doc/check": {"artifact": "doc", "title": "t", "nested": [1, {"a": None}]},
            'odd"id/eval': {"artifact": "doc"},
            "lost/eval": {"artifact": "gone"},
            "quoted/eval": {"artifact": 'do"c'},
            "bare/eval": {"title": "no artifact"},
            "text/eval": "not an object",
        },
        "artifacts": {"doc": {"path": "doc", "tags": ["x"]}, 'do"c': {"path": "q"}},
    }
    saved = run_from_json({"createdAt": "1", "definitions": definitions})
    store.create_run(RunRecord(RunId("run-d"), "/repo", RunStatus.GREEN, saved), [])
    store.create_run(
        RunRecord(RunId("run-old"), "/repo", RunStatus.GREEN, run_from_json({"createdAt": "0"})),
        [],
    )
    for eval_id in [*definitions["evals"], "missing/eval"]:
        request = request_from_json({"id": "run-d-1", "evalId": eval_id})
        part = store.definitions_for(RunId("run-d"), eval_id)
        assert request_definition(part, request) == request_definition(definitions, request)
    assert request_definition(
        store.definitions_for(RunId("run-d"), "doc/check"),
        request_from_json({"evalId": "doc/check"}),
    ) == {
        "eval": definitions["evals"]["doc/check"],
        "artifact": definitions["artifacts"]["doc"],
    }
    old = request_from_json({"id": "run-old-1", "evalId": "doc/check"})
    assert request_definition(store.definitions_for(RunId("run-old"), "doc/check"), old) is None
    assert store.definitions_for(RunId("run-none"), "doc/check") is None


class _CountingReads:
    """A store whose Run reads are counted: the whole Run, or one eval's definitions."""

    def __init__(self, store: StateStore) -> None:
        self.store = store
        self.reads: list[str] = []

    def get_run(self, run_id: RunId, *, definitions: bool = True) -> RunRecord | None:
        self.reads.append("get_run")
        return self.store.get_run(run_id, definitions=definitions)

    def definitions_for(self, run_id: RunId, eval_id: str) -> object:
        self.reads.append("definitions_for")
        return self.store.definitions_for(run_id, eval_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@pytest.mark.parametrize("listed", [FEW_OF_A_RUN, FEW_OF_A_RUN + 1])
def test_a_list_reads_a_runs_definitions_whole_only_for_many_of_its_requests(
    store: StateStore, listed: int
) -> None:
    evals = {f"doc/e{n}": {"artifact": "doc", "title": f"t{n}"} for n in range(listed)}
    definitions = {"evals": evals, "artifacts": {"doc": {"path": "doc"}}}
    saved = run_from_json({"createdAt": "1", "definitions": definitions})
    requests = [
        RequestRecord(
            RequestId(f"run-d-{n}"),
            RunId("run-d"),
            EvalId(eval_id),
            n,
            None,
            RequestStatus.GREEN,
            request_from_json({"id": f"run-d-{n}", "runId": "run-d", "evalId": eval_id}),
        )
        for n, eval_id in enumerate(evals, start=1)
    ]
    store.create_run(RunRecord(RunId("run-d"), "/repo", RunStatus.GREEN, saved), requests)
    counting = _CountingReads(store)
    views = RequestViews(cast(StateStore, counting)).views(requests)
    whole = listed > FEW_OF_A_RUN
    expected = ["get_run"] if whole else ["definitions_for"] * listed
    assert counting.reads == expected
    one_by_one = [RequestViews(store).view(request) for request in requests]
    assert views == one_by_one
    expected_definitions: list[Any] = [
        {"eval": evals[r.eval_id], "artifact": {"path": "doc"}} for r in requests
    ]
    assert [view["definition"] for view in views] == expected_definitions


class _CountingRequests:
    """A store whose ``iter_requests`` counts the requests it has handed out."""

    def __init__(self, store: StateStore) -> None:
        self.store = store
        self.handed = 0

    def iter_requests(self, status: str | None = None) -> Any:
        for request in self.store.iter_requests(status):
            self.handed += 1
            yield request

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def _three_runs(store: StateStore) -> None:
    execution = waiting_execution(store, "execution-1")
    for run, created, size in (("run-a", "2026-01-01", 3), ("run-b", "2026-01-02", 2)):
        human_run(store, run, created, [(f"{run}-{n}", execution.id) for n in range(1, size + 1)])
    human_run(store, "run-c", "2026-01-03", [("run-c-1", execution.id)])
    store.claim_human(RequestId("run-a-2"), "alice", "t1")


@pytest.mark.parametrize("limit", [None, 1, 2, 4, 10])
@pytest.mark.parametrize("statuses", [None, frozenset({"WAITING_HUMAN"}), frozenset({"GREEN"})])
def test_a_request_list_is_written_a_run_at_a_time(
    store: StateStore, limit: int | None, statuses: frozenset[str] | None
) -> None:
    """The pages are the whole list's views cut at each Run, and each is made before the
    next Run's requests are read: a list holds one Run, not the history."""
    _three_runs(store)
    counting = _CountingRequests(store)
    reader = RequestViews(cast(StateStore, counting))
    pages = list(reader.pages(None, statuses, limit))
    chosen = [r for r in store.all_requests() if statuses is None or r.status in statuses]
    chosen = chosen[:limit]
    assert [view for page in pages for view in page] == RequestViews(store).views(chosen)
    assert [{str(view["id"]).rsplit("-", 1)[0] for view in page} for page in pages] == [
        {run} for run in dict.fromkeys(r.run_id for r in chosen)
    ]
    assert counting.handed <= len(chosen) + 1  # a limit stops the reading once met
    counting.handed = 0
    lazily = reader.pages(None, None, None)
    assert [view["id"] for view in next(lazily)] == ["run-c-1"]
    assert counting.handed == 2  # run-c's one request, and the first of run-b's


@pytest.mark.parametrize("run", [None, "run-a"])
@pytest.mark.parametrize("limit", [None, 1, 4])
@pytest.mark.parametrize(
    "statuses", [None, frozenset({"WAITING_HUMAN"}), frozenset({"GREEN", "WAITING_HUMAN"})]
)
def test_the_text_list_is_made_from_the_columns_as_from_the_documents(
    store: StateStore, run: str | None, limit: int | None, statuses: frozenset[str] | None
) -> None:
    """``line_pages`` (columns, the signer out of the JSON, no document decoded) prints what
    ``list_line`` prints of each request's view: the claimant while it waits (a follower:
    its original's), else who signed it off, else ``-``."""
    _three_runs(store)
    signed = RequestRecord(
        RequestId("run-s-1"),
        RunId("run-s"),
        EvalId("doc/eval1"),
        1,
        None,
        RequestStatus.GREEN,
        request_from_json(
            {
                "id": "run-s-1",
                "runId": "run-s",
                "evalId": "doc/eval1",
                "status": "GREEN",
                "reviewer": "bob",
            }
        ),
    )
    saved = run_from_json({"createdAt": "2026-01-04"})
    store.create_run(RunRecord(RunId("run-s"), "/repo", RunStatus.GREEN, saved), [signed])
    reader = RequestViews(store)
    one = None if run is None else RunId(run)
    lines = [line for page in reader.line_pages(one, statuses, limit) for line in page]
    listed = [r for r in store.all_requests() if run is None or r.run_id == run]
    chosen = [r for r in listed if statuses is None or r.status in statuses][:limit]
    views = reader.listed(chosen)
    expected = [
        list_line({**view, "runId": r.run_id, "evalId": r.eval_id})
        for r, view in zip(chosen, views, strict=True)
    ]
    assert lines == expected
    if run is None and statuses is None and limit is None:
        assert lines[0] == "run-s-1\trun-s\tdoc/eval1\tGREEN\tbob"
        assert "run-a-2\trun-a\tdoc/eval2\tWAITING_HUMAN\talice" in lines


def test_only_waiting_requests_with_waiting_executions_are_claimed(store: StateStore) -> None:
    running_execution = running("execution-1")
    store.claim(running_execution, alive)  # RUNNING, not waiting for a Human
    (request,) = human_run(store, "run-a", "1", [("run-a-1", running_execution.id)])
    with pytest.raises(HumanNotWaiting):
        store.claim_human(request.id, "alice", "t1")
    with pytest.raises(HumanNotWaiting):
        store.claim_human(RequestId("run-missing-1"), "alice", "t1")
    with pytest.raises(HumanNotWaiting):
        store.unclaim_human(RequestId("run-missing-1"), "alice")


def test_only_the_claimant_releases_and_then_anyone_may_claim(store: StateStore) -> None:
    execution = waiting_execution(store, "execution-1")
    (request,) = human_run(store, "run-a", "1", [("run-a-1", execution.id)])
    with pytest.raises(HumanClaimRefused) as nobody:
        store.unclaim_human(request.id, "alice")
    assert nobody.value.claimant is None
    claim = store.claim_human(request.id, "alice", "t1")
    with pytest.raises(HumanClaimRefused):
        store.unclaim_human(request.id, "bob")
    assert store.unclaim_human(request.id, "alice") == claim
    assert store.human_claim(request.id) is None
    assert store.claim_human(request.id, "bob", "t2").reviewer == "bob"


def test_update_request_keeps_the_claim(store: StateStore) -> None:
    execution = waiting_execution(store, "execution-1")
    (request,) = human_run(store, "run-a", "1", [("run-a-1", execution.id)])
    store.claim_human(request.id, "alice", "t1")
    noted = request_merged(request.data, {"note": 1})
    store.update_request(dataclasses.replace(request, data=noted))
    claim = store.human_claim(request.id)
    assert claim is not None and claim.reviewer == "alice"


def test_settlement_writes_records_settles_followers_and_drops_the_claim(
    store: StateStore,
) -> None:
    execution = waiting_execution(store, "execution-1")
    (original,) = human_run(store, "run-a", "1", [("run-a-1", execution.id)])
    (follower,) = human_run(store, "run-b", "2", [("run-b-1", execution.id)])
    store.claim_human(original.id, "alice", "t1")
    settled = store.settle_human(settlement(original, execution))
    assert settled.recorded and settled.followers == ("run-b-1",)
    saved = store.get_request(original.id)
    assert saved is not None and (saved.status, saved.data.status) == ("GREEN", "GREEN")
    joined = store.get_request(follower.id)
    assert joined is not None and joined.status == "GREEN"
    assert joined.data.source == {"kind": "joined"} and joined.data.id == follower.id
    assert store.human_claim(original.id) is None
    latest = store.latest_record(ReuseKey(KEY), touch=False)
    assert latest is not None and (latest.id, latest.status) == ("execution-1", "GREEN")


def test_a_run_is_given_to_settle_run_only_once_none_of_its_requests_waits(
    store: StateStore,
) -> None:
    """Every submission in a Run asks whether the Run settles; while another of its
    requests waits, the store answers from the statuses alone and decodes none of the
    Run's requests (at 10,000 Artifacts, 1.9 s per submission); the last one settles it."""
    first = waiting_execution(store, "execution-1")
    second = waiting_execution(store, "execution-2", key=None)
    run_id = RunId("run-a")
    waiting = [
        RequestRecord(
            RequestId(f"run-a-{ordinal}"),
            run_id,
            EvalId(f"doc/eval{ordinal}"),
            ordinal,
            execution.id,
            RequestStatus.WAITING_HUMAN,
            request_from_json({"id": f"run-a-{ordinal}", "status": "WAITING_HUMAN"}),
        )
        for ordinal, execution in ((1, first), (2, second))
    ]
    ended = run_from_json({"createdAt": "1", "completedAt": "2"})
    store.create_run(RunRecord(run_id, "/repo", RunStatus.INCOMPLETE, ended), waiting)
    given: list[list[str]] = []

    def settle_run(_run: RunRecord, requests: list[RequestRecord]) -> None:
        given.append([str(r.status) for r in requests])

    def submit(settling: HumanSettlement) -> None:
        store.claim_human(settling.request.id, "alice", "t1")
        store.settle_human(
            dataclasses.replace(settling, settle_run=settle_run, run_may_settle=run_may_settle)
        )

    submit(settlement(waiting[0], first))
    assert given == []  # run-a-2 still waits
    submit(settlement(waiting[1], second, key=None))
    assert given == [["GREEN", "GREEN"]]


def test_a_second_settlement_is_refused(store: StateStore) -> None:
    execution = waiting_execution(store, "execution-1")
    (request,) = human_run(store, "run-a", "1", [("run-a-1", execution.id)])
    store.claim_human(request.id, "alice", "t1")
    store.settle_human(settlement(request, execution, "GREEN"))
    with pytest.raises(HumanNotWaiting):
        store.settle_human(settlement(request, execution, "RED"))
    saved = store.get_request(request.id)
    assert saved is not None and saved.status == "GREEN"


def test_settlement_needs_the_claimant(store: StateStore) -> None:
    execution = waiting_execution(store, "execution-1")
    (request,) = human_run(store, "run-a", "1", [("run-a-1", execution.id)])
    with pytest.raises(HumanNotWaiting):  # nobody claimed it
        store.settle_human(settlement(request, execution))
    store.claim_human(request.id, "bob", "t1")
    with pytest.raises(HumanNotWaiting):  # bob holds it, not alice
        store.settle_human(settlement(request, execution, reviewer="alice"))
    saved, held = store.get_request(request.id), store.human_claim(request.id)
    assert saved is not None and saved.status == "WAITING_HUMAN"
    assert held is not None and held.reviewer == "bob"
    assert store.latest_record(ReuseKey(KEY), touch=False) is None


def ending(request: RequestRecord, execution: ExecutionRecord, reviewer: str | None) -> HumanEnding:
    return HumanEnding(
        request.id,
        execution.id,
        request_fields={
            "status": RequestStatus.CANCELLED,
            "reason": "why",
            "endedBy": reviewer,
            "completedAt": "t2",
        },
        execution_fields={
            "status": ExecutionStatus.ERROR,
            "errorCode": "CANCELLED",
            "reason": "why",
            "endedBy": reviewer,
            "completedAt": "t2",
        },
        reviewer=reviewer,
    )


def test_ending_a_wait_ends_followers_releases_the_claim_and_frees_the_key(
    store: StateStore,
) -> None:
    execution = waiting_execution(store, "execution-1")
    (original,) = human_run(store, "run-a", "1", [("run-a-1", execution.id)])
    human_run(store, "run-b", "2", [("run-b-1", execution.id)])  # a follower
    store.claim_human(original.id, "alice", "t1")
    with pytest.raises(HumanClaimRefused):  # bob may not end alice's claim
        store.end_human(ending(original, execution, "bob"))
    assert store.end_human(ending(original, execution, "alice")) == ("run-a-1", "run-b-1")
    for request_id in ("run-a-1", "run-b-1"):
        saved = store.get_request(RequestId(request_id))
        assert saved is not None and (saved.status, saved.data.reason) == ("CANCELLED", "why")
    ended = store.get_execution(execution.id)
    assert ended is not None and (ended.status, ended.data.error_code) == ("ERROR", "CANCELLED")
    assert store.human_claim(original.id) is None
    with pytest.raises(HumanNotWaiting):
        store.end_human(ending(original, execution, "alice"))
    assert store.latest_record(ReuseKey(KEY), touch=False) is None
    assert store.claim(running("execution-2"), alive).outcome is ClaimOutcome.OWNED


def test_an_unclaimed_wait_is_ended_by_anyone_and_a_supersession_ignores_claims(
    store: StateStore,
) -> None:
    first = waiting_execution(store, "execution-1")
    (one,) = human_run(store, "run-a", "1", [("run-a-1", first.id)])
    assert store.end_human(ending(one, first, "bob")) == ("run-a-1",)
    second = waiting_execution(store, "execution-2")
    (two,) = human_run(store, "run-b", "2", [("run-b-1", second.id)])
    store.claim_human(two.id, "alice", "t1")
    assert store.end_human(ending(two, second, None)) == ("run-b-1",)


def test_errors_and_unkeyed_settlements_are_not_recorded(store: StateStore) -> None:
    failed = waiting_execution(store, "execution-1")
    unkeyed = waiting_execution(store, "execution-2", key=None)
    one, two = human_run(store, "run-a", "1", [("run-a-1", failed.id), ("run-a-2", unkeyed.id)])
    store.claim_human(one.id, "alice", "t1")
    store.claim_human(two.id, "alice", "t1")
    assert not store.settle_human(settlement(one, failed, "ERROR")).recorded
    assert not store.settle_human(settlement(two, unkeyed, "GREEN", key=None)).recorded
    assert store.latest_record(ReuseKey(KEY), touch=False) is None
    # the key is free again: a new claim owns it
    assert store.claim(running("execution-3"), alive).outcome is ClaimOutcome.OWNED


def test_all_requests_newest_run_first_in_ordinal_order(store: StateStore) -> None:
    execution = waiting_execution(store, "execution-1")
    human_run(store, "run-a", "2026-01-01", [("run-a-1", execution.id), ("run-a-2", execution.id)])
    human_run(store, "run-b", "2026-01-02", [("run-b-1", execution.id)])
    assert [r.id for r in store.all_requests()] == ["run-b-1", "run-a-1", "run-a-2"]


def test_the_requests_one_at_a_time_are_all_requests(store: StateStore) -> None:
    execution = waiting_execution(store, "execution-1")
    human_run(store, "run-a", "2026-01-01", [("run-a-1", execution.id), ("run-a-2", execution.id)])
    human_run(store, "run-b", "2026-01-02", [("run-b-1", execution.id)])
    store.claim_human(RequestId("run-a-2"), "alice", "t1")
    for status in (None, "WAITING_HUMAN", "GREEN"):
        assert list(store.iter_requests(status)) == store.all_requests(status)
    with store.batch(write=False):  # inside one read too, with other reads between
        read = store.iter_requests()
        first = next(read)
        assert store.human_claims() and store.get_run(RunId("run-a")) is not None
        assert [first, *read] == store.all_requests()


# --- a request settles together with its execution -------------------------------------------


def test_a_request_is_saved_with_its_execution_or_not_at_all(store: StateStore) -> None:
    run = RunRecord(
        RunId("run-a"), "/repo", RunStatus.RUNNING, run_from_json({"createdAt": SETTLED_AT})
    )
    queued = RequestRecord(
        RequestId("run-a-1"),
        RunId("run-a"),
        EvalId("doc/review"),
        1,
        None,
        RequestStatus.QUEUED,
        request_from_json({"n": 1}),
    )
    store.create_run(run, [queued])
    first = running("execution-1")
    assert store.claim(first, alive).outcome is ClaimOutcome.OWNED
    green = settled(first, "GREEN", SETTLED_AT)
    done = dataclasses.replace(
        queued, execution_id=first.id, status=RequestStatus.GREEN, data=request_from_json({"n": 2})
    )
    assert store.complete_execution(green, record=True, request=done)
    saved = store.get_request(RequestId("run-a-1"))
    assert saved is not None and (saved.status, request_json(saved.data)) == ("GREEN", {"n": 2})

    second = running("execution-2", key=None)
    store.insert_execution(second)
    stranger = dataclasses.replace(done, id=RequestId("run-a-9"))  # a request that does not exist
    with pytest.raises(StateError):
        store.complete_execution(settled(second, "RED", SETTLED_AT), record=False, request=stranger)
    unchanged = store.get_execution(ExecutionId("execution-2"))
    assert unchanged is not None and unchanged.status == "RUNNING"  # rolled back together


# --- a mirror supersedes a local Human wait ----------------------------------------------


def mirror(identifier: str, status: str, completed: str) -> ExecutionRecord:
    """A mirrored record as ``mirror_record`` makes it: self-contained, no owner."""
    data: dict[str, Any] = {
        "id": identifier,
        "status": status,
        "result": {"verdict": status},
        "profile": {"kind": "human"},
        "provenance": {"runId": "run-t", "requestId": "run-t-1", "completedAt": completed},
        "usage": [],
        "producer": {"name": "artifactize"},
        "reviewer": "carol",
        "origin": {"url": "https://store.example/", "publisher": "team"},
    }
    return ExecutionRecord(
        ExecutionId(identifier),
        ReuseKey(KEY),
        "d" * 64,
        ExecutionStatus(status),
        0,
        0.0,
        None,
        completed,
        execution_from_json(data),
    )


def waiting_owner_and_follower(store: StateStore) -> tuple[RequestRecord, RequestRecord]:
    """A Human wait of KEY: its owner request (claimed by alice) and a follower (by bob)."""
    execution = waiting_execution(store, "execution-1")
    (owner,) = human_run(store, "run-a", "1", [("run-a-1", execution.id)])
    (follower,) = human_run(store, "run-b", "2", [("run-b-1", execution.id)])
    store.claim_human(owner.id, "alice", "t1")
    store.claim_human(follower.id, "bob", "t2")
    return owner, follower


@pytest.mark.parametrize("verdict", ["GREEN", "RED"])
def test_a_newer_mirror_supersedes_the_waiting_execution_and_answers_its_requests(
    store: StateStore, verdict: str
) -> None:
    owner, follower = waiting_owner_and_follower(store)
    remote = mirror("remote-x", verdict, "2026-01-03T00:00:00.000000000Z")
    assert store.add_mirror(remote, supersession(remote, MIRRORED_AT))
    superseded = store.get_execution(ExecutionId("execution-1"))
    assert superseded is not None
    assert (superseded.status, superseded.completed_at) == ("ERROR", MIRRORED_AT)
    assert superseded.data.error_code == "SUPERSEDED"
    assert superseded.data.error == ("Superseded by the completed result remote-x for this key.")
    for waited in (owner, follower):
        saved = store.get_request(waited.id)
        assert saved is not None
        assert (saved.status, saved.execution_id) == (verdict, "remote-x")
        assert saved.data.id == waited.id  # merged into the request, not replaced
        assert saved.data.source == {
            "runId": "run-t",
            "requestId": "run-t-1",
            "kind": "remote",
        }
        assert (saved.data.usage, saved.data.reused_usage) == (None, [])
        assert (saved.data.reviewer, saved.data.completed_at) == ("carol", MIRRORED_AT)
        assert saved.data.blocked_reason is None
        assert store.human_claim(waited.id) is None
    with pytest.raises(HumanNotWaiting):
        store.claim_human(owner.id, "alice", "t3")
    latest = store.latest_record(ReuseKey(KEY), touch=False)
    assert latest is not None and latest.id == "remote-x"


def test_mirrors_added_together_are_added_as_one_after_another(store: StateStore) -> None:
    other, third = ReuseKey("b" * 64), ReuseKey("c" * 64)
    owner, _follower = waiting_owner_and_follower(store)  # KEY waits for a Human
    local = running("execution-2", pid=11, key=other)
    store.insert_execution(local)
    done = dataclasses.replace(settled(local, "GREEN", "2026-01-02T00:00:00.000000000Z"), key=other)
    assert store.complete_execution(done, record=True)

    def at(identifier: str, key: ReuseKey, day: int) -> ExecutionRecord:
        made = mirror(identifier, "GREEN", f"2026-01-0{day}T00:00:00.000000000Z")
        return dataclasses.replace(made, key=key)

    batch = [
        at("remote-a", ReuseKey(KEY), 3),  # newer than the wait: added, the wait superseded
        at("remote-b", ReuseKey(KEY), 2),  # older than remote-a, just added: left out
        at("remote-c", other, 1),  # older than the local record: left out
        at("remote-d", third, 5),  # a key without a history: added
        at("remote-d", third, 5),  # known by now: left out
        at("remote-e", third, 6),  # newer than remote-d: added
    ]
    added = store.add_mirrors([(m, supersession(m, MIRRORED_AT)) for m in batch])
    assert added == [True, False, False, True, False, True]
    latest = {key: store.latest_record(key, touch=False) for key in (ReuseKey(KEY), other, third)}
    assert {key: found.id if found else None for key, found in latest.items()} == {
        ReuseKey(KEY): "remote-a",
        other: "execution-2",
        third: "remote-e",
    }
    superseded = store.get_execution(ExecutionId("execution-1"))
    assert superseded is not None and superseded.status == "ERROR"
    saved = store.get_request(owner.id)
    assert saved is not None and (saved.status, saved.execution_id) == ("GREEN", "remote-a")
    assert [r.id for r in store.history(third)] == ["remote-e", "remote-d"]


def test_an_older_mirror_leaves_the_human_wait_alone(store: StateStore) -> None:
    owner, follower = waiting_owner_and_follower(store)
    forced = running("execution-2", pid=11)  # a forced run recorded while the Human waits
    store.insert_execution(forced)
    store.complete_execution(
        settled(forced, "GREEN", "2026-01-02T00:00:00.000000000Z"), record=True
    )
    remote = mirror("remote-x", "RED", "2026-01-01T00:00:00.000000000Z")
    assert not store.add_mirror(remote, supersession(remote, MIRRORED_AT))
    waiting = store.get_execution(ExecutionId("execution-1"))
    assert waiting is not None and waiting.status == "WAITING_HUMAN"
    for waited, reviewer in ((owner, "alice"), (follower, "bob")):
        saved = store.get_request(waited.id)
        assert saved is not None and (saved.status, saved.execution_id) == (
            "WAITING_HUMAN",
            "execution-1",
        )
        claim = store.human_claim(waited.id)
        assert claim is not None and claim.reviewer == reviewer


def test_a_mirror_leaves_other_keys_and_settled_requests_alone(store: StateStore) -> None:
    other = waiting_execution(store, "execution-9", key=ReuseKey("b" * 64))
    (request,) = human_run(store, "run-c", "3", [("run-c-1", other.id)])
    remote = mirror("remote-x", "GREEN", "2026-01-03T00:00:00.000000000Z")
    assert store.add_mirror(remote, supersession(remote, MIRRORED_AT))
    saved = store.get_request(request.id)
    assert saved is not None and saved.status == "WAITING_HUMAN"
    holder = store.get_execution(other.id)
    assert holder is not None and holder.status == "WAITING_HUMAN"


# --- a follower's move is checked by the state machine (kernel/transitions.py) ------------


def test_a_settlement_that_moves_its_followers_illegally_is_refused_whole(
    store: StateStore,
) -> None:
    execution = waiting_execution(store, "execution-1")
    (original,) = human_run(store, "run-a", "1", [("run-a-1", execution.id)])
    (follower,) = human_run(store, "run-b", "2", [("run-b-1", execution.id)])
    store.claim_human(original.id, "alice", "t1")
    illegal = dataclasses.replace(
        settlement(original, execution), follower_fields=opaque({"status": "QUEUED"})
    )
    with pytest.raises(IllegalTransition, match="A request cannot go from WAITING_HUMAN to QUEUED"):
        store.settle_human(illegal)
    for waiting in (original, follower):
        saved = store.get_request(waiting.id)
        assert saved is not None and saved.status == "WAITING_HUMAN"
    unsettled = store.get_execution(execution.id)
    assert unsettled is not None and unsettled.status == "WAITING_HUMAN"
    held = store.human_claim(original.id)
    assert held is not None and held.reviewer == "alice"


@pytest.mark.parametrize(
    ("request_status", "execution_status", "refusal"),
    [
        (
            RequestStatus.RUNNING,
            ExecutionStatus.ERROR,
            "A request cannot go from WAITING_HUMAN to RUNNING",
        ),
        (
            RequestStatus.CANCELLED,
            ExecutionStatus.RUNNING,
            "An execution cannot go from WAITING_HUMAN to RUNNING",
        ),
    ],
)
def test_an_ending_that_moves_a_wait_illegally_is_refused_whole(
    store: StateStore,
    request_status: RequestStatus,
    execution_status: ExecutionStatus,
    refusal: str,
) -> None:
    execution = waiting_execution(store, "execution-1")
    (original,) = human_run(store, "run-a", "1", [("run-a-1", execution.id)])
    human_run(store, "run-b", "2", [("run-b-1", execution.id)])
    illegal = dataclasses.replace(
        ending(original, execution, None),
        request_fields={"status": request_status, "completedAt": "t2"},
        execution_fields={"status": execution_status, "completedAt": "t2"},
    )
    with pytest.raises(IllegalTransition, match=refusal):
        store.end_human(illegal)
    for request_id in ("run-a-1", "run-b-1"):
        saved = store.get_request(RequestId(request_id))
        assert saved is not None and saved.status == "WAITING_HUMAN"
    unchanged = store.get_execution(execution.id)
    assert unchanged is not None and unchanged.status == "WAITING_HUMAN"


def test_a_mirror_whose_supersession_moves_a_wait_illegally_is_refused_whole(
    store: StateStore,
) -> None:
    owner, follower = waiting_owner_and_follower(store)
    remote = mirror("remote-x", "GREEN", "2026-01-03T00:00:00.000000000Z")
    legal = supersession(remote, MIRRORED_AT)
    illegal = dataclasses.replace(
        legal, request_fields=opaque({**legal.request_fields, "status": "WAIT_DEPENDENCY"})
    )
    with pytest.raises(IllegalTransition, match="from WAITING_HUMAN to WAIT_DEPENDENCY"):
        store.add_mirror(remote, illegal)
    assert store.get_execution(ExecutionId("remote-x")) is None  # the mirror rolled back too
    for waited in (owner, follower):
        saved = store.get_request(waited.id)
        assert saved is not None and saved.status == "WAITING_HUMAN"
    waiting = store.get_execution(ExecutionId("execution-1"))
    assert waiting is not None and waiting.status == "WAITING_HUMAN"


# --- what SQLite reads for them ---------------------------------------------------------


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[StateStore]:
    """The SQLite store alone, at ``tmp_path/state/state.sqlite``, for its query plans."""
    with opened_sqlite_store(tmp_path / "state") as opened:
        yield opened


def test_a_settlement_finds_its_followers_by_index(
    sqlite_store: StateStore, tmp_path: Path
) -> None:
    """A Human settlement looks up the requests still waiting on its execution: through the
    index of requests by execution (state revision 4), not by reading every request of
    every Run once per submission (the only index on the column was the active requests',
    which a bound status cannot use)."""
    execution = waiting_execution(sqlite_store, "execution-1")
    (original,) = human_run(sqlite_store, "run-a", "1", [("run-a-1", execution.id)])
    (follower,) = human_run(sqlite_store, "run-b", "2", [("run-b-1", execution.id)])
    sqlite_store.claim_human(original.id, "alice", "t1")
    settled: list[Any] = []
    scans = table_scans(
        tmp_path / "state" / "state.sqlite",
        lambda: settled.append(sqlite_store.settle_human(settlement(original, execution))),
        ("requests",),
    )
    assert settled[0].followers == (follower.id,)
    assert scans == []


def test_prune_sweeps_the_executions_nothing_points_at_by_index(
    sqlite_store: StateStore, tmp_path: Path
) -> None:
    """``prune`` deletes the executions no remaining request points at: the correlated
    ``NOT EXISTS`` (and the foreign key check of each deleted execution) reads the index of
    requests by execution, not every request once per candidate (35 s for 5,000 evicted
    records of a 10,000-Artifact state, 0.015 s with the index)."""
    for number in range(3):
        ended = dataclasses.replace(
            running(f"execution-{number}", key=None),
            status=ExecutionStatus.ERROR,
            completed_at=SETTLED_AT,
        )
        sqlite_store.insert_execution(ended)
        run_id = RunId(f"run-{number}")
        request_id = RequestId(f"run-{number}-1")
        sqlite_store.create_run(
            RunRecord(run_id, "/repo", RunStatus.ERROR, run_from_json({"createdAt": "1"})),
            [
                RequestRecord(
                    request_id,
                    run_id,
                    EvalId("doc/eval"),
                    1,
                    ended.id,
                    RequestStatus.ERROR,
                    request_from_json({"id": request_id, "status": "ERROR"}),
                )
            ],
        )
    outcome: list[PruneOutcome] = []
    scans = table_scans(
        tmp_path / "state" / "state.sqlite",
        lambda: outcome.append(sqlite_store.prune(before=None, keep=1, dry_run=False)),
        ("requests",),
    )
    assert (outcome[0].requests, outcome[0].executions) == (2, 2)
    assert len(sqlite_store.list_runs("/repo", 10, 0)) == 1
    # one pass over the requests left, once per prune: the bodies any of them names (state
    # revision 6 keeps no index of ``requests.body``: each Run would rewrite it whole)
    assert [sql.split(" WHERE")[0] for sql, _ in scans] == ["DELETE FROM request_bodies"]


def test_a_mirror_finds_its_keys_waiting_execution_by_index(
    sqlite_store: StateStore, tmp_path: Path
) -> None:
    """A record mirrored from the team sqlite_store ends its key's Human wait: the waiting holder
    is found through the partial unique index of active executions, not by reading every
    execution once per mirrored record (a CI ``verify`` of 10,000 Artifacts from an empty
    state mirrors 10,000 records: 31 s in that one statement)."""
    owner, _follower = waiting_owner_and_follower(sqlite_store)
    remote = mirror("remote-x", "GREEN", "2026-01-03T00:00:00.000000000Z")
    added: list[bool] = []
    scans = table_scans(
        tmp_path / "state" / "state.sqlite",
        lambda: added.append(sqlite_store.add_mirror(remote, supersession(remote, MIRRORED_AT))),
        ("executions", "requests"),
    )
    answered = sqlite_store.get_request(owner.id)
    assert added == [True] and answered is not None and answered.status == "GREEN"
    assert scans == []


def test_known_executions_are_those_the_state_holds(store: StateStore) -> None:
    assert store.known_executions([]) == frozenset()
    store.insert_execution(running("execution-1", key=None))
    many = [f"execution-{n}" for n in range(2000)]  # more than one statement's IDs
    assert store.known_executions([*many, "execution-1"]) == {"execution-1"}
    assert store.known_executions(["execution-2"]) == frozenset()
