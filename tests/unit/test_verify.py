"""``Verify`` through fake adapters: keys, reuse, joins, force, unkeyed evals, Run status.

The workspace lives in a MemoryFilesystem, the model is scripted, the state is in memory;
no process, file or socket is touched.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import pytest

from artifactize.domain.project.workspace import Workspace
from artifactize.domain.reviews.agent.review import ReviewPorts
from artifactize.domain.reviews.human.asking import WAITING_FOR_HUMAN
from artifactize.domain.reviews.run import reuse as reuse_module
from artifactize.domain.reviews.run.context import VerifyPorts
from artifactize.domain.reviews.run.documents import run_status
from artifactize.domain.reviews.run.policy import VerifyOptions
from artifactize.domain.reviews.run.selection import SelectionError, select_evals
from artifactize.domain.tools.registry import ToolPorts
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.domain.use_cases.verify import Verify
from artifactize.kernel.document_codec import (
    request_json,
    run_json,
)
from artifactize.ports.documents import Execution, Request
from artifactize.ports.ids import ExecutionId
from artifactize.ports.sessions import ProcessIdentity
from artifactize.ports.state import ExecutionRecord, StateError
from artifactize.ports.statuses import ExecutionStatus
from tests.fakes.filesystem import MemoryFilesystem
from tests.fakes.ids import CountingIds
from tests.fakes.model import ScriptedBackend, ScriptedBackends, call_reply, verdict_reply
from tests.fakes.processes import FakeClock
from tests.fakes.state import MemoryStateStore
from tests.fakes.threads import THREADS

pytestmark = pytest.mark.anyio
ME = ProcessIdentity(4242, 1000.0)
OTHER = ProcessIdentity(5151, 2000.0)

DOC = """name = "doc"
[views.agent_tools]
read = { builtin = "read" }
[evals.review]
title = "Notes are right"
profile = { kind = "agent", backend = "openai", model = "m1" }
payload.instruction = "Check {doc}."
[evals.signoff]
title = "Signed off"
profile = { kind = "human" }
payload.instruction = "Sign off {doc}."
"""
SCRATCH = """name = "scratch"
fingerprint = false
[evals.review]
title = "Scratch"
profile = { kind = "agent", backend = "openai", model = "m1" }
payload.instruction = "Check {scratch}."
"""


class Table:
    def __init__(self) -> None:
        self.alive = {ME, OTHER}

    def own_identity(self) -> ProcessIdentity:
        return ME

    def is_alive(self, identity: ProcessIdentity) -> bool:
        return identity in self.alive

    def kill_group(self, leader: ProcessIdentity) -> bool:
        raise AssertionError("verify never kills a group itself")


class Setup:
    def __init__(self, notes: bytes = b"The answer is 42.\n") -> None:
        self.files = MemoryFilesystem(
            {
                "/repo": {
                    "doc": {"index.artf": DOC.encode(), "notes.txt": notes},
                    "scratch": {"index.artf": SCRATCH.encode()},
                }
            }
        )
        self.state = MemoryStateStore()
        self.ids = CountingIds()
        self.table = Table()
        self.sleeps: list[float] = []

    def workspace(self) -> Workspace:
        return ConfigService(self.files).load("/repo")

    def ports(self, backends: ScriptedBackends) -> VerifyPorts:
        tools = ToolPorts(self.files, cast(Any, None), cast(Any, None), {}, threads=THREADS)
        review = ReviewPorts(
            FakeClock(), backends, tools, cast(Any, None), self.workspace, threads=THREADS
        )

        async def sleep(seconds: float) -> None:
            self.sleeps.append(seconds)
            self.release_holder()

        return VerifyPorts(
            review,
            self.state,
            self.table,
            lambda run_id: "/out",
            {"name": "t@h"},
            self.ids,
            sleep=sleep,
        )

    def release_holder(self) -> None:
        """What another process does while we wait: settle its execution GREEN."""

    async def verify(
        self, backends: ScriptedBackends, selector: str, *, force: bool = False
    ) -> list[Any]:
        workspace = self.workspace()
        options = VerifyOptions("/repo", "/state", force=force)
        service = Verify(self.ports(backends), workspace, options)
        refs = select_evals(workspace, selector, False)
        result = await service.run(refs, service.prepare(refs))
        self.last_run: Any = run_json(result.run)
        return [request_json(r) for r in result.requests]


def backends(*replies: Any) -> ScriptedBackends:
    return ScriptedBackends(ScriptedBackend(list(replies)))


async def test_review_then_reuse_starts_nothing() -> None:
    setup = Setup()
    first = backends(call_reply(("c1", "read_doc", '{"path": "notes.txt"}')), verdict_reply())
    (request,) = await setup.verify(first, "doc/review")
    assert (request["status"], request["source"]) == ("GREEN", None)
    assert request["toolCalls"][0]["name"] == "read_doc"
    # `doc/signoff` is not selected, but `doc` needs it GREEN: the Run cannot be GREEN.
    assert setup.last_run["status"] == "INCOMPLETE"
    assert setup.last_run["evidence"]["doc/signoff"]["status"] == "UNREVIEWED"

    second = backends()
    (again,) = await setup.verify(second, "doc/review")
    assert again["source"] == {
        "runId": request["runId"],
        "requestId": request["id"],
        "kind": "cache",
    }
    assert again["result"] == request["result"] and again["usage"] is None
    assert second.opened == 0


async def test_force_reviews_again_and_becomes_the_newest_record() -> None:
    setup = Setup()
    await setup.verify(backends(verdict_reply("GREEN")), "doc/review")
    (forced,) = await setup.verify(backends(verdict_reply("RED")), "doc/review", force=True)
    assert (forced["status"], forced["source"]) == ("RED", None)
    (reused,) = await setup.verify(backends(), "doc/review")
    assert (reused["status"], reused["source"]["requestId"]) == ("RED", forced["id"])


async def test_a_changed_file_changes_the_key() -> None:
    setup = Setup()
    (first,) = await setup.verify(backends(verdict_reply()), "doc/review")
    changed = Setup(notes=b"The answer is 43.\n")
    changed.state = setup.state
    (second,) = await changed.verify(backends(verdict_reply("RED")), "doc/review")
    assert second["key"] != first["key"] and second["source"] is None


async def test_errors_are_never_reused() -> None:
    setup = Setup()
    (failed,) = await setup.verify(
        backends(verdict_reply("BLUE"), verdict_reply("BLUE")), "doc/review"
    )
    assert failed["errorCode"] == "INVALID_RESULT"
    assert setup.last_run["status"] == "ERROR"
    (again,) = await setup.verify(backends(verdict_reply()), "doc/review")
    assert (again["status"], again["source"]) == ("GREEN", None)


async def test_an_unkeyed_eval_is_reviewed_every_time() -> None:
    setup = Setup()
    (first,) = await setup.verify(backends(verdict_reply()), "scratch/review")
    assert first["key"] is None
    assert first["unkeyedReason"] == "Target Artifact `scratch` declares no fingerprint."
    (second,) = await setup.verify(backends(verdict_reply()), "scratch/review")
    assert second["source"] is None and setup.state.history_ids == []


async def test_a_live_execution_of_the_key_is_joined() -> None:
    setup = Setup()
    (first,) = await setup.verify(backends(verdict_reply()), "doc/review")
    key = first["key"]
    setup.state.history_ids.clear()  # as if nothing were recorded yet ...
    holder = ExecutionRecord(
        ExecutionId("execution-other"),
        key,
        first["evalDefHash"],
        ExecutionStatus.RUNNING,
        OTHER.pid,
        OTHER.create_time,
        "openai",
        None,
        Execution(id=ExecutionId("execution-other")),
    )
    setup.state.executions[holder.id] = holder  # ... and another process reviewed the key

    def release() -> None:
        data = setup.state.executions[first["executionId"]].data
        done = dataclasses.replace(
            holder,
            status=ExecutionStatus.GREEN,
            completed_at="2027-01-01T00:00:00.000000000Z",
            data=data,
        )
        setup.state.complete_execution(done, record=True)

    setup.release_holder = release  # type: ignore[method-assign]
    waiting = backends()
    (joined,) = await setup.verify(waiting, "doc/review")
    assert joined["source"]["kind"] == "joined" and waiting.opened == 0
    assert setup.sleeps == [0.2]


async def test_a_dead_owner_is_taken_over() -> None:
    setup = Setup()
    (first,) = await setup.verify(backends(verdict_reply()), "doc/review")
    setup.state.history_ids.clear()
    holder = ExecutionRecord(
        ExecutionId("execution-dead"),
        first["key"],
        first["evalDefHash"],
        ExecutionStatus.RUNNING,
        OTHER.pid,
        OTHER.create_time,
        "openai",
        None,
        Execution(id=ExecutionId("execution-dead")),
    )
    setup.state.executions[holder.id] = holder
    setup.table.alive.discard(OTHER)
    (taken,) = await setup.verify(backends(verdict_reply("RED")), "doc/review")
    assert (taken["status"], taken["source"]) == ("RED", None)
    assert setup.state.executions["execution-dead"].data.error_code == "OWNER_DIED"


async def test_human_evals_wait_for_a_person_and_the_run_is_incomplete() -> None:
    setup = Setup()
    requests = await setup.verify(backends(verdict_reply()), "doc")
    by_eval = {r["evalId"]: r for r in requests}
    assert by_eval["doc/signoff"]["status"] == "WAITING_HUMAN"
    assert by_eval["doc/signoff"]["blockedReason"] == WAITING_FOR_HUMAN
    assert by_eval["doc/review"]["status"] == "GREEN"
    assert setup.last_run["status"] == "INCOMPLETE"
    assert setup.last_run["summary"]["executed"] == {
        "total": 1,
        "runtime": 0,
        "agent": 1,
        "human": 0,
    }


def test_selection() -> None:
    workspace = Setup().workspace()
    assert [r.qualified_id for r in select_evals(workspace, "doc", False)] == [
        "doc/review",
        "doc/signoff",
    ]
    assert len(select_evals(workspace, None, True)) == 3
    for selector, message in (
        ("doc/nope", "Unknown eval: doc/nope"),
        ("nope", "Unknown Artifact: nope"),
        (None, "Select evals: ARTIFACT, ARTIFACT/EVAL, --eval ID or --all."),
    ):
        with pytest.raises(SelectionError, match=message):
            select_evals(workspace, selector, False)


@pytest.mark.parametrize(
    ("statuses", "satisfied", "expected"),
    [
        (["GREEN", "GREEN"], True, "GREEN"),
        (["GREEN", "GREEN"], False, "INCOMPLETE"),
        (["GREEN", "RED"], False, "RED"),
        (["RED", "ERROR"], False, "ERROR"),
        (["GREEN", "UNREVIEWED"], False, "INCOMPLETE"),
    ],
)
def test_run_status(statuses: list[str], satisfied: bool, expected: str) -> None:
    assert run_status(statuses, satisfied) == expected


async def test_a_failed_state_write_ends_the_run_and_its_open_requests_state_write_failed() -> None:
    """Main's STATE_WRITE_FAILED settlement on unmutated documents: the code lands on the Run
    the result holds (not a stale copy), and the request still open settles with it."""
    setup = Setup()
    failing = "Cannot write state /state/state.sqlite: No space left on device"

    def claim(execution: ExecutionRecord, owner_alive: Any) -> Any:
        raise StateError(failing)

    setup.state.claim = claim  # type: ignore[method-assign]
    with pytest.raises(StateError):
        await setup.verify(backends(verdict_reply()), "doc/review")
    (run,) = setup.state.list_runs(None, 10, 0)
    assert (run.status, run.data.error_code, run.data.error) == (
        "ERROR",
        "STATE_WRITE_FAILED",
        failing,
    )
    (request,) = setup.state.list_requests(run.id)
    assert (request.status, request.data.error_code, request.data.error) == (
        "ERROR",
        "STATE_WRITE_FAILED",
        failing,
    )


async def test_a_reused_request_is_settled_with_its_summary_in_one_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reusing a verdict builds the settled request once, its summary with it (the change
    and then ``summarized`` built it twice); what is saved is the same."""
    setup = Setup()
    await setup.verify(backends(verdict_reply()), "doc/review")
    built: list[str] = []
    constructor = Request.__init__

    def counted(self: Request, *args: Any, **kwargs: Any) -> None:
        built.append("request")
        constructor(self, *args, **kwargs)

    settled: list[Any] = []
    real_reuse = reuse_module.reuse

    def reuse(*args: Any, **kwargs: Any) -> None:
        before = len(built)
        monkeypatch.setattr(Request, "__init__", counted)
        try:
            real_reuse(*args, **kwargs)
        finally:
            monkeypatch.setattr(Request, "__init__", constructor)
        settled.append(len(built) - before)

    monkeypatch.setattr(reuse_module, "reuse", reuse)
    (again,) = await setup.verify(backends(), "doc/review")
    assert settled == [1]  # [2] on the base
    assert again["source"]["kind"] == "cache"
    assert again["summary"]["executionSource"] == "cache" and again["summary"]["status"] == "GREEN"
