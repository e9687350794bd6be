"""Tool sessions inside a real Agent review: the hooks the seed ties to the review itself.

The review (domain ``AgentReview`` and ``Verify``) runs with real POSIX adapters, real
harness processes and a real SQLite state; only the model is scripted (``ScriptedBackend``),
since what is under test is what the review does around the Agent loop. The workspace and
harness are the ones of ``test_tool_sessions.py``, plus an Agent eval ``app/review``.

Each test ends (autouse ``no_leftovers``) with no child process, no harness process and no
session directory.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from artifactize.adapters.ids import SecretIds
from artifactize.adapters.jsonl_conversations import JsonlConversationStore
from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.adapters.posix.private_files import PosixPrivateFiles
from artifactize.adapters.posix.process_table import PsutilProcessTable
from artifactize.adapters.sqlite.state import SqliteStateStores
from artifactize.adapters.system_clock import SystemClock
from artifactize.domain.project.workspace import Workspace
from artifactize.domain.reviews.agent.review import AgentReview, ReviewPorts
from artifactize.domain.reviews.failures import TIMED_OUT, FailureCode
from artifactize.domain.reviews.reuse.keys import key_inputs
from artifactize.domain.reviews.run.context import VerifyPorts
from artifactize.domain.reviews.run.policy import VerifyOptions
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.domain.use_cases.followup import FollowUp
from artifactize.domain.use_cases.verify import Verify
from artifactize.kernel.document_codec import request_json
from artifactize.ports.conversations import ConversationNotFound
from artifactize.ports.ids import SessionId
from artifactize.ports.model import (
    FailureKind,
    ProviderFailure,
    TurnRequest,
    TurnResponse,
    UserText,
)
from artifactize.ports.state import ExecutionRecord, HeldWritten, RequestRecord, StateStore
from tests.fakes.model import (
    ScriptedBackend,
    ScriptedBackends,
    call_reply,
    text_reply,
    verdict_reply,
)
from tests.fakes.threads import THREADS
from tests.integration.test_tool_sessions import (  # noqa: F401  (no_leftovers is a fixture)
    ACT,
    ENDED,
    NOT_READY,
    Setup,
    no_leftovers,
    wait_until,
)
from tests.support.workspaces import toml_value as toml

pytestmark = pytest.mark.anyio

EVAL = "app/review"


class ReviewSetup(Setup):
    """The session workspace plus an Agent eval and a pinned start execution path."""

    timeout_ms: int = 20_000

    def declare(self) -> None:
        super().declare()
        (self.repo / "harness.cfg").write_text("harness configuration\n", encoding="utf-8")
        text = (self.repo / "index.artf").read_text(encoding="utf-8")
        text = text.replace(
            "[views.agent_sessions.app]\nstart = { ",
            '[views.agent_sessions.app]\nstart = { execution_paths = ["harness.cfg"], ',
        )
        profile = {"kind": "agent", "backend": "openai", "model": "m1"}
        evals = [
            "[evals.review]",
            'title = "The app works"',
            f"profile = {toml(profile)[:-2]}, timeout_ms = {self.timeout_ms} }}",
            'payload.instruction = "Review {app} with its tools."',
        ]
        (self.repo / "index.artf").write_text(text + "\n".join(evals) + "\n", encoding="utf-8")

    def workspace(self) -> Workspace:
        return ConfigService(PosixFilesystem()).load(str(self.repo))

    def review_ports(self, backend: ScriptedBackend | None, reload: Any = None) -> ReviewPorts:
        return ReviewPorts(
            clock=SystemClock(),
            backends=ScriptedBackends(backend),
            tools=self.tool_ports(),
            sessions=self.session_ports(),
            reload=reload or self.workspace,
            threads=THREADS,
        )

    def review(self, backend: ScriptedBackend, reload: Any = None) -> AgentReview:
        workspace = self.workspace()
        keys = key_inputs(workspace, EVAL, PosixFilesystem())
        output = self.root / "output"
        output.mkdir(exist_ok=True)
        return AgentReview(
            self.review_ports(backend, reload),
            workspace,
            workspace.find_eval(EVAL),
            keys,
            str(output),
        )


def act(call_id: str, **args: Any) -> TurnResponse:
    return call_reply((call_id, ACT, json.dumps(args)))


# --- the order: Agent loop, then stop, then revalidation and recheck, then commit ------------


async def test_stop_runs_after_the_loop_and_before_revalidation(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path)
    seen_at_reload: list[int] = []

    def reload() -> Workspace:
        seen_at_reload.append(len(setup.events("stop")))
        return setup.workspace()

    backend = ScriptedBackend([act("c1"), act("c2"), verdict_reply("GREEN")])
    outcome = await setup.review(backend, reload).run()
    assert outcome.status == "GREEN", outcome
    assert len(setup.events("start")) == 1  # two bound calls, one harness
    assert len(setup.events("call")) == 2
    assert seen_at_reload == [1]  # stop had run once when the inputs were revalidated
    assert setup.session_directories() == []


async def test_pins_include_the_session_start_and_stop_keys(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path)
    outcome = await setup.review(ScriptedBackend([verdict_reply("GREEN")])).run()
    assert outcome.status == "GREEN"
    digest = outcome.execution_paths["app_app.start"]["harness.cfg"]
    assert len(digest) == 64 and set(digest) <= set("0123456789abcdef")
    assert "app_app.stop" not in outcome.execution_paths  # stop declares no execution path
    # pinned at review start, although the session never started
    assert setup.events("start") == []


async def test_a_session_whose_tools_are_never_called_starts_nothing(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path)
    backend = ScriptedBackend(
        [call_reply(("c1", "read_app", json.dumps({"path": "harness.cfg"}))), verdict_reply("RED")]
    )
    outcome = await setup.review(backend).run()
    assert outcome.status == "RED"
    assert setup.events() == []
    assert not setup.parent.exists()  # not even a session directory was created


async def test_startup_counts_toward_the_review_deadline(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path, start=("--ready-delay=60",))
    setup.timeout_ms = 1500
    setup.declare()
    started = anyio.current_time()
    outcome = await setup.review(ScriptedBackend([act("c1")])).run()
    assert anyio.current_time() - started < 15
    assert (outcome.status, outcome.error_code, outcome.error) == (
        "ERROR",
        FailureCode.TIMEOUT.value,
        TIMED_OUT,
    )
    assert len(setup.events("start")) == 1
    assert outcome.trace.tool_calls[0].error == "Tool call did not complete."


async def test_a_provider_error_after_the_session_started_still_stops_it(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path)
    denied = ProviderFailure(FailureKind.AUTHENTICATION, "OpenAI returned HTTP 401: bad key")
    outcome = await setup.review(ScriptedBackend([act("c1"), denied])).run()
    assert (outcome.status, outcome.error_code) == ("ERROR", "AUTHENTICATION")
    assert len(setup.events("stop")) == 1


async def test_an_invalid_verdict_still_stops_the_session(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path)
    backend = ScriptedBackend([act("c1"), verdict_reply("BLUE"), verdict_reply("PURPLE")])
    outcome = await setup.review(backend).run()
    assert outcome.error_code == "INVALID_RESULT"
    assert len(setup.events("stop")) == 1


async def test_cancelling_the_review_cancels_calls_then_stops(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path)
    review = setup.review(ScriptedBackend([act("c1", sleep=30)]))
    async with anyio.create_task_group() as group:
        group.start_soon(review.run)
        await anyio.to_thread.run_sync(setup.wait_event, "call-sleeping")
        group.cancel_scope.cancel()
    (stop,) = setup.events("stop")
    assert stop["calls_alive"] == []  # the bound call was cancelled and awaited first
    outcome = review.cancelled_outcome()
    assert (outcome.error_code, outcome.error) == ("CANCELLED", "Agent review was cancelled.")
    assert "app_app.start" in outcome.execution_paths


async def test_start_exit_after_readiness_is_an_ordinary_tool_error(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path, start=("--exit-after=0.2",))

    async def after_exit(request: TurnRequest) -> TurnResponse:
        await anyio.to_thread.run_sync(setup.wait_event, "start")
        await anyio.sleep(1.0)  # the harness exits 0.2 s after readiness
        return act("c2")

    backend = ScriptedBackend([act("c1"), after_exit, verdict_reply("RED")])
    outcome = await setup.review(backend).run()
    assert outcome.status == "RED"
    second = outcome.trace.tool_calls[1]
    assert (second.is_error, second.error) == (True, ENDED)
    assert len(setup.events("start")) == 1  # no restart


async def test_a_cleanup_failure_replaces_the_verdict(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path)
    ports = setup.session_ports()
    real_remove = ports.store.remove
    failures: list[str] = []

    def failing_remove(directory: str) -> None:
        failures.append(directory)
        raise OSError(f"cannot remove {directory}")

    ports.store.remove = failing_remove  # type: ignore[method-assign]
    setup.session_ports = lambda: ports  # type: ignore[method-assign]
    outcome = await setup.review(ScriptedBackend([act("c1"), verdict_reply("GREEN")])).run()
    assert (outcome.status, outcome.error_code) == ("ERROR", "SESSION_CLEANUP_FAILED")
    assert outcome.result is None
    assert outcome.error is not None and outcome.error.startswith("Tool session cleanup failed:")
    (directory,) = failures
    real_remove(directory)  # what the next session's sweep would do


# --- commit order, reuse and joins through Verify with a real SQLite state -------------------


class RecordingStore:
    """The real store, noting how many stops had run when each execution was committed."""

    def __init__(self, store: StateStore, setup: Setup) -> None:
        self._store = store
        self._setup = setup
        self.commits: list[tuple[str, int]] = []

    def complete_execution(
        self,
        execution: ExecutionRecord,
        *,
        record: bool,
        request: RequestRecord | None = None,
        held: HeldWritten | None = None,
    ) -> bool:
        self.commits.append((execution.status, len(self._setup.events("stop"))))
        return self._store.complete_execution(execution, record=record, request=request, held=held)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def verify_ports(setup: ReviewSetup, backends: ScriptedBackends, store: Any) -> VerifyPorts:
    review = ReviewPorts(
        clock=SystemClock(),
        backends=backends,
        tools=setup.tool_ports(),
        sessions=setup.session_ports(),
        reload=setup.workspace,
        threads=THREADS,
    )

    def output_root(run_id: str) -> str:
        path = setup.root / "runs" / run_id
        path.mkdir(parents=True, exist_ok=True)
        return str(path)

    return VerifyPorts(
        review, store, PsutilProcessTable(), output_root, {"name": "t@h"}, SecretIds()
    )


async def verify_once(setup: ReviewSetup, backends: ScriptedBackends, store: Any) -> Any:
    workspace = setup.workspace()
    options = VerifyOptions(repo=str(setup.repo), state_dir=str(setup.root / "state"))
    service = Verify(verify_ports(setup, backends, store), workspace, options)
    refs = [workspace.find_eval(EVAL)]
    return await service.run(refs, service.prepare(refs))


async def test_commit_follows_stop_and_provenance_carries_the_pins(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path)
    state = SqliteStateStores().open(str(tmp_path / "state"), create=True)
    assert state is not None
    store = RecordingStore(state, setup)
    backends = ScriptedBackends(ScriptedBackend([act("c1"), verdict_reply("GREEN")]))
    result = await verify_once(setup, backends, store)
    (request,) = [request_json(r) for r in result.requests]
    assert request["status"] == "GREEN"
    assert store.commits == [("GREEN", 1)]
    pins = request["provenance"]["executionPaths"]
    assert set(pins) == {"app_app.start"}
    record = state.latest_record(request["key"], touch=False)
    assert record is not None
    assert record.data.provenance is not None
    assert record.data.provenance["executionPaths"] == pins


async def test_a_reused_result_starts_nothing(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path)
    state = SqliteStateStores().open(str(tmp_path / "state"), create=True)
    first = ScriptedBackends(ScriptedBackend([act("c1"), verdict_reply("GREEN")]))
    await verify_once(setup, first, state)
    starts = len(setup.events("start"))

    second = ScriptedBackends(ScriptedBackend([]))
    result = await verify_once(setup, second, state)
    (request,) = [request_json(r) for r in result.requests]
    assert (request["status"], request["source"]["kind"]) == ("GREEN", "cache")
    assert second.opened == 0  # no backend, so no Agent loop, tool or session
    assert len(setup.events("start")) == starts
    assert request["provenance"]["executionPaths"]["app_app.start"]  # pins travel with reuse


async def test_a_waited_on_result_starts_nothing(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path)
    state = SqliteStateStores().open(str(tmp_path / "state"), create=True)
    assert state is not None
    gate = anyio.Event()

    async def slow_verdict(request: TurnRequest) -> TurnResponse:
        await gate.wait()
        return verdict_reply("GREEN")

    owner = ScriptedBackends(ScriptedBackend([act("c1"), slow_verdict]))
    waiter = ScriptedBackends(ScriptedBackend([]))
    results: dict[str, Any] = {}

    async def run(name: str, backends: ScriptedBackends) -> None:
        results[name] = await verify_once(setup, backends, state)

    async with anyio.create_task_group() as group:
        group.start_soon(run, "owner", owner)
        await anyio.to_thread.run_sync(setup.wait_event, "call")
        group.start_soon(run, "waiter", waiter)
        await anyio.sleep(0.5)
        gate.set()
    (joined,) = [request_json(r) for r in results["waiter"].requests]
    assert (joined["status"], joined["source"]["kind"]) == ("GREEN", "joined")
    assert waiter.opened == 0
    assert len(setup.events("start")) == 1


# --- follow-ups (`session send`): fresh lazy sessions --------------------------------------


async def reviewed_session(setup: ReviewSetup, replies: list[Any]) -> tuple[str, Any]:
    """Run one verify with a saved conversation; the session ID and the conversation store."""
    conversations = JsonlConversationStore(
        str(setup.root / "state"), private_files=PosixPrivateFiles()
    )
    state = SqliteStateStores().open(str(setup.root / "state"), create=True)
    ports = dataclasses.replace(
        verify_ports(setup, ScriptedBackends(ScriptedBackend(replies)), state),
        conversations=conversations,
    )
    workspace = setup.workspace()
    options = VerifyOptions(repo=str(setup.repo), state_dir=str(setup.root / "state"))
    service = Verify(ports, workspace, options)
    refs = [workspace.find_eval(EVAL)]
    result = await service.run(refs, service.prepare(refs))
    (request,) = result.requests
    assert request.session_id, request
    return request.session_id, conversations


def follow_up(setup: ReviewSetup, backend: ScriptedBackend, conversations: Any) -> FollowUp:
    ports = setup.review_ports(backend)
    load = lambda repo: ConfigService(PosixFilesystem()).load(repo)  # noqa: E731
    return FollowUp(ports, conversations, load, str(setup.root / "output"))


async def test_a_follow_up_that_calls_no_bound_tool_starts_nothing(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path)
    session_id, conversations = await reviewed_session(setup, [act("c1"), verdict_reply("GREEN")])
    assert len(setup.events("start")) == 1
    backend = ScriptedBackend([text_reply("Because act reported two calls.")])
    result = await follow_up(setup, backend, conversations).send(
        SessionId(session_id), "Why GREEN?"
    )
    assert result.answer == "Because act reported two calls."
    assert len(setup.events("start")) == 1  # nothing new started
    assert setup.session_directories() == []
    (request,) = backend.requests
    assert isinstance(request.items[0], UserText)  # the saved conversation is replayed
    assert request.items[-1] == UserText("Why GREEN?")
    kinds = [e["kind"] for e in conversations.read(session_id)]
    assert kinds[-3:] == ["message", "attempt", "answer"] and "send" in kinds


async def test_a_follow_up_gets_its_own_fresh_session(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path)
    session_id, conversations = await reviewed_session(setup, [act("c1"), verdict_reply("GREEN")])
    backend = ScriptedBackend([act("c9"), text_reply("Checked again.")])
    result = await follow_up(setup, backend, conversations).send(
        SessionId(session_id), "Check again?"
    )
    assert result.answer == "Checked again."
    first, second = setup.events("start")
    assert first["pid"] != second["pid"]  # a fresh harness, not the review's
    assert len(setup.events("stop")) == 2  # and it was stopped when the follow-up ended
    assert setup.session_directories() == []


async def test_a_follow_up_of_an_unknown_session_is_refused(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path)
    conversations = JsonlConversationStore(
        str(tmp_path / "state"), private_files=PosixPrivateFiles()
    )
    with pytest.raises(ConversationNotFound):
        await follow_up(setup, ScriptedBackend([]), conversations).send(
            SessionId("abc123"), "Hello?"
        )
    assert setup.events() == []


async def test_exit_before_readiness_is_the_call_error_and_saved_as_one(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path, start=("--exit-before-ready",))
    session_id, conversations = await reviewed_session(
        setup, [act("c1"), act("c2"), verdict_reply("RED")]
    )
    events = conversations.read(session_id)
    assert {e["kind"] for e in events} <= {"review", "message", "attempt", "end"}
    tool_messages = [e for e in events if e.get("role") == "tool"]
    assert [(m["isError"], m["content"][0]["text"]) for m in tool_messages] == [
        (True, NOT_READY),
        (True, NOT_READY),  # the same startup error again, without a restart
    ]
    assert len(setup.events("start")) == 1
    assert events[-1]["status"] == "RED"  # not PREPARATION_FAILED: the review went on


async def test_a_review_that_fails_unexpectedly_still_stops_its_sessions(tmp_path: Path) -> None:
    setup = ReviewSetup(tmp_path)

    async def broken(request: TurnRequest) -> TurnResponse:
        raise RuntimeError("a bug in a backend")

    state = SqliteStateStores().open(str(tmp_path / "state"), create=True)
    backends = ScriptedBackends(ScriptedBackend([act("c1"), broken]))
    result = await verify_once(setup, backends, state)
    (request,) = [request_json(r) for r in result.requests]
    assert (request["status"], request["errorCode"]) == ("ERROR", "AGENT_ERROR")
    assert request["error"] == "The review failed unexpectedly: RuntimeError: a bug in a backend"
    assert len(setup.events("stop")) == 1
