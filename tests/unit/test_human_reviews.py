"""The Human review lifecycle through fakes: ``verify`` asking, following and waiting, then
claim, unclaim, tools, submission, rechecks and publishing.

The workspace lives in a MemoryFilesystem, tools run through a scripted process runner, the
state is the in-memory store held to the SQLite contract (tests/integration/
test_state_contract.py). Real processes and the real CLI: tests/integration/
test_human_reviews.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import pytest

from artifactize.domain.project.workspace import Workspace
from artifactize.domain.reviews.human.asking import (
    FOLLOWING_HUMAN,
    HUMAN_POLL_SECONDS,
    WAITING_FOR_HUMAN,
)
from artifactize.domain.reviews.human.errors import (
    CANCELLED,
    FINGERPRINT_CHANGED,
    NOT_CLAIMANT,
    NOT_CLAIMED,
    NOT_WAITING,
    REQUEST_ID_NOT_FOUND,
    UNKNOWN_TOOL_NAMED,
    HumanPublishError,
    HumanReviewError,
)
from artifactize.domain.reviews.human.recorded_declarations import DEFINITION_CHANGED, EVAL_GONE
from artifactize.domain.reviews.human.reviewers import INVALID_REVIEWER
from artifactize.domain.reviews.run.context import VerifyPorts
from artifactize.domain.reviews.run.human_wait import WAIT_CANCELLED
from artifactize.domain.reviews.run.policy import VerifyOptions
from artifactize.domain.reviews.run.selection import select_evals
from artifactize.domain.tools.cancellation import Cancellation
from artifactize.domain.use_cases.human_reviews import (
    HUMAN_RESULT_MAX_BYTES,
)
from artifactize.domain.use_cases.request_views import RequestViews, list_line
from artifactize.domain.use_cases.verify import Verify
from artifactize.kernel.document_codec import (
    execution_json,
    request_json,
    run_from_json,
    run_json,
)
from artifactize.ports.documents import RequestView
from artifactize.ports.ids import ExecutionId, RequestId
from artifactize.ports.process import ProcessOutcome
from artifactize.ports.review_store import FailureMode, Principal, RemoteFailure, RemoteSettings
from tests.fakes.filesystem import MemoryFilesystem, Symlink
from tests.fakes.processes import FakeClock, FakeProcessRunner
from tests.fakes.remote_leases import NoLeases
from tests.support.human_workspace import artifact, human_eval, human_tool, show_tool, signoff_eval
from tests.support.human_world import PRODUCER, HumanWorld, Table

pytestmark = pytest.mark.anyio

DOC = artifact(
    "doc",
    show_tool(),
    human_tool("fail", "Fails.", "false", []),
    '[views.human_tools]\nnotes = { builtin = "read", args = ["notes.txt"] }\n',
    signoff_eval(),
    human_eval("note", "A note", "Write a note on {doc}.")
    + 'pass_schema = { type = "object", properties.note = { type = "string" } }\n',
)
SCRATCH = artifact(
    "scratch", human_eval("check", "Scratch", "Check {scratch}."), settings="fingerprint = false\n"
)


class FakeStore(NoLeases):
    """A RemoteStore that records publications, or fails with ``failure``."""

    def __init__(
        self, scopes: tuple[str, ...] = ("read", "publish", "human"), failure: Any = None
    ) -> None:
        self.settings = RemoteSettings("http://127.0.0.1:1/", "summary", "t", "env")
        self.scopes = scopes
        self.failure = failure
        self.published: list[tuple[str, Mapping[str, Any]]] = []

    async def whoami(self) -> Principal:
        return Principal("a", self.scopes)

    async def lookup(self, keys: Sequence[str]) -> list[Mapping[str, Any]]:
        return []

    async def publish(self, key: str, record: Mapping[str, Any]) -> bool:
        if self.failure is not None:
            raise self.failure
        self.published.append((key, record))
        return True

    async def publish_batch(self, batch: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        raise AssertionError("a Human sign-off is published alone")

    async def aclose(self) -> None:
        return None


class World(HumanWorld):
    def __init__(self) -> None:
        self.doc: dict[str, Any] = {"index.artf": DOC.encode(), "notes.txt": b"Notes.\n"}
        self.scratch: dict[str, Any] = {"index.artf": SCRATCH.encode()}
        super().__init__(
            MemoryFilesystem({"/repo": {"doc": self.doc, "scratch": self.scratch}}),
            FakeProcessRunner(ProcessOutcome(exit_code=0, stdout=b"Notes.\n")),
            FakeClock(),
        )

    def verify_ports(self) -> VerifyPorts:
        return VerifyPorts(
            self.review_ports(),
            self.state,
            Table(),
            lambda run_id: f"/state/runs/{run_id}",
            PRODUCER,
            self.ids,
            sleep=self.sleep,
        )

    async def verify(
        self, selector: str, *, force: bool = False, wait: bool = False, timeout_ms: int = 600_000
    ) -> list[Any]:
        workspace = self.workspace()
        options = VerifyOptions(
            "/repo", "/state", force=force, wait=wait, wait_timeout_ms=timeout_ms
        )
        service = Verify(self.verify_ports(), workspace, options)
        refs = select_evals(workspace, selector, False)
        result = await service.run(refs, service.prepare(refs))
        self.run: Any = run_json(result.run)
        return [request_json(r) for r in result.requests]

    async def waiting(self, selector: str = "doc/signoff", **options: Any) -> Any:
        (request,) = await self.verify(selector, **options)
        assert request["status"] == "WAITING_HUMAN"
        return request

    def saved(self, request_id: str) -> Any:
        return self.state.requests[request_id]


async def refused(message: str, action: Any) -> HumanReviewError:
    with pytest.raises(HumanReviewError) as info:
        await action
    assert info.value.message == message
    return info.value


# --- verify --------------------------------------------------------------------------------


async def test_a_human_eval_asks_and_holds_its_key_without_an_executor_start() -> None:
    world = World()
    request = await world.waiting()
    assert request["blockedReason"] == WAITING_FOR_HUMAN
    assert request["runDir"] == f"/state/runs/{request['runId']}"
    definition = request["humanDefinition"]
    assert definition["repo"] == "/repo" and definition["eval"]["qualifiedId"] == "doc/signoff"
    assert set(definition["artifacts"]) == {"doc"}
    execution = world.state.executions[request["executionId"]]
    assert (execution.status, execution.key) == ("WAITING_HUMAN", request["key"])
    assert "humanDefinition" not in execution_json(execution.data)  # no local paths in a record
    assert world.run["status"] == "INCOMPLETE" and world.run["executionsStarted"] == 0
    assert world.run["summary"]["executed"]["total"] == 0
    assert world.runner.specs == []


async def test_a_second_run_follows_the_waiting_execution() -> None:
    world = World()
    first = await world.waiting()
    second = await world.waiting()
    assert second["executionId"] == first["executionId"]
    assert second["blockedReason"] == FOLLOWING_HUMAN
    assert "humanDefinition" not in second


async def test_forced_and_unkeyed_requests_hold_no_key() -> None:
    world = World()
    await world.waiting()
    forced = await world.waiting(force=True)
    unkeyed = await world.waiting("scratch/check")
    for request in (forced, unkeyed):
        execution = world.state.executions[request["executionId"]]
        assert (execution.status, execution.key) == ("WAITING_HUMAN", None)
        assert request["blockedReason"] == WAITING_FOR_HUMAN
    assert forced["key"] is not None and unkeyed["key"] is None


async def test_wait_ends_the_same_run_with_the_submitted_verdict() -> None:
    world = World()
    reviews = world.reviews()
    polls = 0

    async def submit_on_second_poll() -> None:
        nonlocal polls
        polls += 1
        if polls == 2:
            (request,) = world.state.list_requests(world.state.all_requests()[0].run_id)
            await reviews.claim(request.id, "alice")
            await reviews.submit(request.id, "alice", {"verdict": "GREEN", "approved": True})

    world.during_sleep = submit_on_second_poll
    (request,) = await world.verify("doc/signoff", wait=True)
    assert request["status"] == "GREEN" and request["reviewer"] == "alice"
    # `doc/note` is not selected but belongs to `doc`: the obligation stays unmet.
    assert world.run["status"] == "INCOMPLETE" and world.run["waitTimedOut"] is False
    assert world.run["evidence"]["doc/note"]["status"] == "UNREVIEWED"
    assert world.run["validation"]["unmetObligations"] == ["doc"]
    assert world.sleeps == [HUMAN_POLL_SECONDS, HUMAN_POLL_SECONDS]
    assert world.run["summary"]["executed"] == {"total": 1, "runtime": 0, "agent": 0, "human": 1}


async def test_wait_times_out_and_leaves_the_request_open() -> None:
    world = World()
    (request,) = await world.verify("doc/signoff", wait=True, timeout_ms=500)
    assert request["status"] == "WAITING_HUMAN"
    assert world.run["status"] == "INCOMPLETE" and world.run["waitTimedOut"] is True
    assert world.run["waitTimeoutMs"] == 500
    assert world.sleeps == pytest.approx([0.2, 0.2, 0.1])  # never past the deadline
    assert world.saved(request["id"]).status == "WAITING_HUMAN"


async def test_wait_without_human_work_does_not_poll() -> None:
    world = World()
    await world.verify("doc/signoff")
    reviews = world.reviews()
    (waiting,) = [r for r in world.state.all_requests() if r.status == "WAITING_HUMAN"]
    await reviews.claim(waiting.id, "alice")
    await reviews.submit(waiting.id, "alice", {"verdict": "GREEN", "approved": True})
    (reused,) = await world.verify("doc/signoff", wait=True)
    assert reused["source"]["kind"] == "cache" and world.sleeps == []


async def test_cancelling_the_wait_records_an_error_run_and_keeps_the_request() -> None:
    world = World()

    async def cancel() -> None:
        raise anyio.get_cancelled_exc_class()()

    world.during_sleep = cancel
    workspace = world.workspace()
    options = VerifyOptions("/repo", "/state", wait=True)
    service = Verify(world.verify_ports(), workspace, options)
    refs = select_evals(workspace, "doc/signoff", False)
    with anyio.CancelScope():
        with pytest.raises(anyio.get_cancelled_exc_class()):
            await service.run(refs, service.prepare(refs))
    assert service.result is not None
    run = world.state.runs[service.result.run.id]
    assert (run.status, run.data.error) == ("ERROR", WAIT_CANCELLED)
    (request,) = world.state.list_requests(run.id)
    assert request.status == "WAITING_HUMAN"


@pytest.mark.parametrize("value", [0, 2_147_483_648, -1])
def test_wait_timeout_outside_its_range_is_refused(value: int) -> None:
    with pytest.raises(ValueError, match="--timeout-ms must be between 1 and 2147483647"):
        VerifyOptions("/repo", "/state", wait=True, wait_timeout_ms=value)


@pytest.mark.parametrize("value", [1, 2_147_483_647])
def test_wait_timeout_at_its_limits_is_accepted(value: int) -> None:
    assert VerifyOptions("/r", "/s", wait=True, wait_timeout_ms=value).wait_timeout_ms == value


# --- claims --------------------------------------------------------------------------------


async def test_claim_is_idempotent_for_the_claimant_and_refused_to_others() -> None:
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    claim = await reviews.claim(request["id"], "alice")
    world.clock.advance(5)
    assert await reviews.claim(request["id"], "alice") == claim
    await refused(NOT_CLAIMANT, reviews.claim(request["id"], "bob"))
    await refused(
        REQUEST_ID_NOT_FOUND.format(id="run-nope-1"),
        reviews.claim(RequestId("run-nope-1"), "alice"),
    )
    await refused(INVALID_REVIEWER, reviews.claim(request["id"], " "))


async def test_unclaim_only_by_the_claimant_while_waiting() -> None:
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    await refused(NOT_CLAIMANT, reviews.unclaim(request["id"], "alice"))  # nobody holds it
    await reviews.claim(request["id"], "alice")
    await refused(NOT_CLAIMANT, reviews.unclaim(request["id"], "bob"))
    released = await reviews.unclaim(request["id"], "alice")
    assert released.reviewer == "alice" and world.state.human_claim(request["id"]) is None
    await reviews.claim(request["id"], "bob")
    await reviews.submit(request["id"], "bob", {"verdict": "RED", "reason": "typo"})
    await refused(NOT_WAITING, reviews.unclaim(request["id"], "bob"))
    await refused(NOT_WAITING, reviews.claim(request["id"], "bob"))


async def test_actions_on_a_follower_reach_the_original() -> None:
    world = World()
    original = await world.waiting()
    follower = await world.waiting()
    reviews = world.reviews()
    claim = await reviews.claim(follower["id"], "alice")
    assert claim.request_id == original["id"]
    submitted = await reviews.submit(
        follower["id"], "alice", {"verdict": "GREEN", "approved": True}
    )
    assert submitted.request.id == original["id"] and submitted.followers == (follower["id"],)
    saved = request_json(world.saved(follower["id"]).data)
    assert (saved["status"], saved["reviewer"], saved["usage"]) == ("GREEN", "alice", None)
    assert saved["source"] == {
        "runId": original["runId"],
        "requestId": original["id"],
        "kind": "joined",
    }


# --- tools ---------------------------------------------------------------------------------


async def test_the_claimant_runs_a_registered_tool_and_nothing_is_recorded() -> None:
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    not_claimed = NOT_CLAIMED.format(id=request["id"])
    await refused(not_claimed, reviews.run_human_tool(request["id"], "alice", "show_doc"))
    await reviews.claim(request["id"], "alice")
    await refused(NOT_CLAIMANT, reviews.run_human_tool(request["id"], "bob", "show_doc"))
    unknown = UNKNOWN_TOOL_NAMED.format(tool="nope_doc", names="fail_doc, notes_doc, show_doc")
    await refused(unknown, reviews.run_human_tool(request["id"], "alice", "nope_doc"))
    assert world.runner.specs == []
    result = await reviews.run_human_tool(request["id"], "alice", "show")
    assert result.to_json() == {"content": [{"type": "text", "text": "Notes.\n"}], "isError": False}
    (spec,) = world.runner.specs
    assert spec.argv == ("/usr/bin/cat", "/repo/doc/notes.txt")
    saved = world.saved(request["id"])
    assert saved.status == "WAITING_HUMAN" and saved.data.tool_calls == []


async def test_a_failing_tool_is_an_error_result_not_a_verdict() -> None:
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    await reviews.claim(request["id"], "alice")
    world.runner.script = ProcessOutcome(exit_code=1)
    result = await reviews.run_human_tool(request["id"], "alice", "fail_doc")
    assert result.is_error
    assert world.saved(request["id"]).status == "WAITING_HUMAN"


async def test_changed_declarations_refuse_reconnection_and_run_nothing() -> None:
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    await reviews.claim(request["id"], "alice")
    world.doc["index.artf"] = DOC.replace('command = "cat"', 'command = "less"').encode()
    await refused(DEFINITION_CHANGED, reviews.run_human_tool(request["id"], "alice", "show_doc"))
    result = {"verdict": "GREEN", "approved": True}
    await refused(DEFINITION_CHANGED, reviews.submit(request["id"], "alice", result))
    world.doc["index.artf"] = DOC.replace("[evals.signoff", "[evals.gone").encode()
    await refused(EVAL_GONE, reviews.submit(request["id"], "alice", result))
    assert world.runner.specs == [] and world.saved(request["id"]).status == "WAITING_HUMAN"
    assert world.state.human_claim(request["id"]) is not None


async def test_tool_commands_resolve_command_tools_only() -> None:
    world = World()
    request = await world.waiting()
    commands = await world.reviews().tool_commands(request["id"])
    assert commands == {
        "fail_doc": {
            "repository": "/repo",
            "program": "/usr/bin/false",
            "argv": [],
            "cwd": "/repo/doc",
        },
        "show_doc": {
            "repository": "/repo",
            "program": "/usr/bin/cat",
            "argv": ["/repo/doc/notes.txt"],
            "cwd": "/repo/doc",
        },
    }
    assert world.state.human_claim(request["id"]) is None and world.runner.specs == []


async def test_a_tool_whose_command_line_cannot_resolve_reports_an_error() -> None:
    world = World()
    request = await world.waiting()
    del world.doc["notes.txt"]
    commands = await world.reviews().tool_commands(request["id"])
    assert "error" in commands["show_doc"] and "program" in commands["fail_doc"]


# --- rechecks ------------------------------------------------------------------------------


async def test_a_changed_file_settles_input_changed_before_a_tool_runs() -> None:
    world = World()
    original = await world.waiting()
    follower = await world.waiting()
    reviews = world.reviews()
    await reviews.claim(original["id"], "alice")
    world.doc["notes.txt"] = b"Changed.\n"
    error = await refused(
        FINGERPRINT_CHANGED, reviews.run_human_tool(original["id"], "alice", "show_doc")
    )
    assert error.settled and world.runner.specs == []
    for request_id in (original["id"], follower["id"]):
        saved = world.saved(request_id)
        assert (saved.status, saved.data.error_code) == ("ERROR", "INPUT_CHANGED")
    assert world.state.history_ids == [] and world.state.human_claim(original["id"]) is None


async def test_a_changed_file_settles_input_changed_instead_of_the_verdict() -> None:
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    await reviews.claim(request["id"], "alice")
    world.doc["notes.txt"] = b"Changed.\n"
    await refused(
        FINGERPRINT_CHANGED,
        reviews.submit(request["id"], "alice", {"verdict": "GREEN", "approved": True}),
    )
    saved = request_json(world.saved(request["id"]).data)
    assert (saved["status"], saved["result"], saved["errorCode"]) == (
        "ERROR",
        None,
        "INPUT_CHANGED",
    )


async def test_a_failed_recheck_settles_fingerprint_recheck_failed() -> None:
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    await reviews.claim(request["id"], "alice")
    world.doc["link"] = Symlink("notes.txt")
    error = await refused_any(
        reviews.submit(request["id"], "alice", {"verdict": "GREEN", "approved": True})
    )
    assert error.settled and "symbolic link" in error.message
    saved = request_json(world.saved(request["id"]).data)
    assert (saved["status"], saved["errorCode"]) == ("ERROR", "FINGERPRINT_RECHECK_FAILED")


async def refused_any(action: Any) -> HumanReviewError:
    with pytest.raises(HumanReviewError) as info:
        await action
    return info.value


async def test_requests_without_a_key_skip_the_fingerprint_recheck() -> None:
    world = World()
    await world.waiting()
    request = await world.waiting(force=True)  # forced: it has a key, and rechecks it
    unkeyed = await world.waiting("scratch/check")
    reviews = world.reviews()
    await reviews.claim(unkeyed["id"], "alice")
    world.scratch["new.txt"] = b"new"
    submitted = await reviews.submit(unkeyed["id"], "alice", {"verdict": "GREEN"})
    assert submitted.request.status == "GREEN" and not submitted.recorded
    await reviews.claim(request["id"], "alice")
    world.doc["notes.txt"] = b"Changed.\n"
    await refused(FINGERPRINT_CHANGED, reviews.run_human_tool(request["id"], "alice", "show_doc"))


async def test_a_cancelled_action_settles_nothing() -> None:
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    await reviews.claim(request["id"], "alice")
    token = Cancellation()
    token.cancel()
    result = {"verdict": "GREEN", "approved": True}
    await refused(CANCELLED, reviews.submit(request["id"], "alice", result, token))
    await refused(CANCELLED, reviews.run_human_tool(request["id"], "alice", "show_doc", token))
    assert world.saved(request["id"]).status == "WAITING_HUMAN" and world.runner.specs == []


# --- submission ----------------------------------------------------------------------------


async def test_submit_settles_records_and_releases_the_claim() -> None:
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    await reviews.claim(request["id"], "alice")
    submitted = await reviews.submit(request["id"], "alice", {"verdict": "GREEN", "approved": True})
    assert submitted.recorded and submitted.request.status == "GREEN"
    execution = world.state.executions[request["executionId"]]
    assert execution.status == "GREEN" and execution.key == request["key"]
    assert execution.data.reviewer == "alice" and execution.data.producer == PRODUCER
    assert execution.data.result == {"verdict": "GREEN", "approved": True}
    provenance = execution.data.provenance
    assert provenance is not None and provenance["requestId"] == request["id"]
    assert world.state.human_claim(request["id"]) is None
    await refused(
        NOT_WAITING, reviews.submit(request["id"], "alice", {"verdict": "RED", "reason": "x"})
    )
    (reused,) = await world.verify("doc/signoff")
    assert (reused["status"], reused["source"]["kind"]) == ("GREEN", "cache")


async def test_a_red_verdict_is_recorded_too() -> None:
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    await reviews.claim(request["id"], "alice")
    submitted = await reviews.submit(request["id"], "alice", {"verdict": "RED", "reason": "typo"})
    assert submitted.recorded and submitted.request.status == "RED"


async def test_a_forced_verdict_becomes_the_newest_record() -> None:
    world = World()
    await world.waiting()
    forced = await world.waiting(force=True)
    reviews = world.reviews()
    await reviews.claim(forced["id"], "alice")
    submitted = await reviews.submit(forced["id"], "alice", {"verdict": "RED", "reason": "again"})
    assert submitted.recorded
    latest = world.state.latest_record(forced["key"], touch=False)
    assert latest is not None and latest.id == forced["executionId"]


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ({"verdict": "GREEN", "approved": False}, '- instancePath "/approved": must equal true'),
        ({"verdict": "GREEN", "approved": True, "x": 1}, '- field "x" is not declared.'),
        ({"verdict": "BLUE"}, "schema_mismatch: verdict must be GREEN or RED"),
        ({"verdict": "RED"}, "must have the required properties"),
    ],
)
async def test_invalid_results_leave_the_request_waiting(result: Any, message: str) -> None:
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    await reviews.claim(request["id"], "alice")
    error = await refused_any(reviews.submit(request["id"], "alice", result))
    assert message in error.message and not error.settled
    assert world.saved(request["id"]).status == "WAITING_HUMAN"
    assert world.state.human_claim(request["id"]) is not None
    fixed = await reviews.submit(request["id"], "alice", {"verdict": "GREEN", "approved": True})
    assert fixed.request.status == "GREEN"


def sized_result(size: int) -> dict[str, Any]:
    """A GREEN result of ``doc/note`` whose compact JSON is exactly ``size`` bytes."""
    empty = len('{"verdict":"GREEN","note":""}')
    return {"verdict": "GREEN", "note": "n" * (size - empty)}


async def test_result_size_at_the_limit_and_one_past() -> None:
    world = World()
    request = await world.waiting("doc/note")
    reviews = world.reviews()
    await reviews.claim(request["id"], "alice")
    await refused(
        f"Human result exceeds {HUMAN_RESULT_MAX_BYTES} bytes.",
        reviews.submit(request["id"], "alice", sized_result(HUMAN_RESULT_MAX_BYTES + 1)),
    )
    assert world.saved(request["id"]).status == "WAITING_HUMAN"
    done = await reviews.submit(request["id"], "alice", sized_result(HUMAN_RESULT_MAX_BYTES))
    assert done.request.status == "GREEN"


async def test_only_the_claimant_submits() -> None:
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    result = {"verdict": "GREEN", "approved": True}
    not_claimed = NOT_CLAIMED.format(id=request["id"])
    await refused(not_claimed, reviews.submit(request["id"], "alice", result))
    await reviews.claim(request["id"], "alice")
    await refused(NOT_CLAIMANT, reviews.submit(request["id"], "bob", result))


# --- publishing ----------------------------------------------------------------------------


async def submit_published(world: World, store: FakeStore, warnings: list[str]) -> Any:
    request = await world.waiting()
    reviews = world.reviews()
    await reviews.claim(request["id"], "alice")
    result = {"verdict": "GREEN", "approved": True}
    return await reviews.submit_and_publish(request["id"], "alice", result, store, warnings.append)


async def test_a_recorded_verdict_is_published_with_its_reviewer() -> None:
    world, store = World(), FakeStore()
    warnings: list[str] = []
    submitted = await submit_published(world, store, warnings)
    ((key, record),) = store.published
    assert key == submitted.execution.key and record["reviewer"] == "alice"
    assert record["profile"] == {"kind": "human"} and warnings == []


async def test_without_the_human_scope_the_verdict_stays_local() -> None:
    world, store = World(), FakeStore(scopes=("read", "publish"))
    warnings: list[str] = []
    submitted = await submit_published(world, store, warnings)
    assert store.published == [] and submitted.request.status == "GREEN"
    assert warnings == ["This result stays local: remote token a lacks the human scope."]


@pytest.mark.parametrize("mode", [FailureMode.OPEN, FailureMode.CLOSED])
async def test_a_publishing_failure_keeps_the_local_verdict(mode: FailureMode) -> None:
    world = World()
    store = FakeStore(failure=RemoteFailure(mode, "The store said no."))
    with pytest.raises(HumanPublishError) as info:
        await submit_published(world, store, [])
    assert info.value.message.startswith(
        "The Human result is saved locally, but publishing it failed: The store said no"
    )
    (request,) = world.state.all_requests()
    assert request.status == "GREEN"


async def test_unrecorded_results_are_not_published() -> None:
    world, store = World(), FakeStore()
    request = await world.waiting("scratch/check")
    reviews = world.reviews()
    await reviews.claim(request["id"], "alice")
    await reviews.submit_and_publish(request["id"], "alice", {"verdict": "GREEN"}, store, print)
    assert store.published == []


async def test_the_claim_is_checked_again_right_before_the_tool_runs() -> None:
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    await reviews.claim(request["id"], "alice")
    load = reviews.ports.load

    def load_then_release(repo: str) -> Workspace:
        """Another process releases the claim while this one reconnects."""
        workspace = load(repo)
        world.state.unclaim_human(request["id"], "alice")
        return workspace

    object.__setattr__(reviews.ports, "load", load_then_release)
    not_claimed = NOT_CLAIMED.format(id=request["id"])
    await refused(not_claimed, reviews.run_human_tool(request["id"], "alice", "show_doc"))
    assert world.runner.specs == []


# --- views ---------------------------------------------------------------------------------


async def test_views_show_the_claim_execution_and_definition() -> None:
    world = World()
    original = await world.waiting()
    follower = await world.waiting()
    await world.reviews().claim(original["id"], "alice")
    views = RequestViews(world.state)
    shown: Any = views.view(world.saved(follower["id"]))
    assert shown["claim"]["requestId"] == original["id"]  # who reviews what it waits on
    assert shown["execution"]["id"] == original["executionId"]
    assert shown["definition"]["eval"]["qualifiedId"] == "doc/signoff"
    assert shown["definition"]["artifact"]["name"] == "doc"
    assert (
        list_line(shown)
        == f"{follower['id']}\t{follower['runId']}\tdoc/signoff\tWAITING_HUMAN\talice"
    )

    def listed(run_id: Any) -> list[Any]:
        return [view["id"] for page in views.pages(run_id, None, None) for view in page]

    assert listed(None) == [follower["id"], original["id"]]
    assert listed(original["runId"]) == [original["id"]]


async def test_a_run_without_saved_definitions_shows_none() -> None:
    world = World()
    request = await world.waiting()
    run = world.state.runs[request["runId"]]
    world.state.runs[run.id] = dataclasses.replace(
        run, data=run_from_json({k: v for k, v in run_json(run.data).items() if k != "definitions"})
    )
    shown = RequestViews(world.state).view(world.saved(request["id"]))
    assert shown["definition"] is None and shown["claim"] is None
    assert list_line(shown).endswith("\t-")
    signed: RequestView = {**shown, "reviewer": "bob"}
    assert list_line(signed).endswith("\tbob")  # who signed it off


async def test_declarations_that_no_longer_load_refuse_reconnection() -> None:
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    await reviews.claim(request["id"], "alice")
    world.doc["index.artf"] = b'name = "doc"\nunknown_key = 1\n'
    error = await refused_any(reviews.run_human_tool(request["id"], "alice", "show_doc"))
    assert error.message.startswith(DEFINITION_CHANGED + "\n") and "unknown_key" in error.message
    assert not error.settled and world.runner.specs == []
    assert world.saved(request["id"]).status == "WAITING_HUMAN"


async def test_a_settlement_between_the_reads_of_a_submit_is_not_waiting() -> None:
    """Two racing submits: the loser read the request and execution while they waited, then
    the winner's settlement released the claim before the loser read it. The loser must hear
    that the request is no longer waiting, not that it never held the claim (found by the
    hostile suite's racing submits: 1 round in 10 under load)."""
    world = World()
    request = await world.waiting()
    reviews = world.reviews()
    await reviews.claim(request["id"], "alice")
    stale_request = world.state.requests[request["id"]]
    stale_execution = world.state.executions[request["executionId"]]
    await reviews.submit(request["id"], "alice", {"verdict": "GREEN", "approved": True})
    fresh_resolve, fresh_execution = reviews.resolve, world.state.get_execution
    stale: dict[str, list[Any]] = {"request": [stale_request], "execution": [stale_execution]}

    def resolve(request_id: RequestId) -> Any:  # the loser's first read predates the settlement
        return stale["request"].pop() if stale["request"] else fresh_resolve(request_id)

    def get_execution(execution_id: ExecutionId) -> Any:
        return stale["execution"].pop() if stale["execution"] else fresh_execution(execution_id)

    reviews.resolve = resolve  # type: ignore[method-assign]
    world.state.get_execution = get_execution  # type: ignore[method-assign]
    await refused(
        NOT_WAITING, reviews.submit(request["id"], "alice", {"verdict": "RED", "reason": "x"})
    )
