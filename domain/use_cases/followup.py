"""``session send``: a follow-up question to a finished Agent review.

The saved conversation is replayed to the same backend and model with the eval's tools as
the workspace declares them now. Tool sessions are fresh and lazy: they start on the first
bound call of this follow-up and are stopped and cleaned up when it ends, so a follow-up
that calls no bound tool starts nothing. The answer is free text, not a verdict: nothing
about the review's result, reuse or Run changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio

from artifactize.domain.declarations.model import AgentProfile
from artifactize.domain.project.workspace import UnknownName, Workspace
from artifactize.domain.reviews.agent.coding import CodingAgentLoop
from artifactize.domain.reviews.agent.conversations import (
    ConversationError,
    item_event,
    load_conversation,
)
from artifactize.domain.reviews.agent.loop import AgentLoop, LoopSettings
from artifactize.domain.reviews.agent.review import ReviewPorts, converse_then_close
from artifactize.domain.reviews.failures import AgentFailure, FailureCode
from artifactize.domain.reviews.timestamps import timestamp
from artifactize.domain.reviews.verdicts import VerdictValidator
from artifactize.domain.tools.registry import AgentToolRegistry
from artifactize.ports.callbacks import WorkspaceLoader
from artifactize.ports.coding_agents import CODING_AGENT_BACKENDS
from artifactize.ports.conversations import ConversationStore
from artifactize.ports.documents import ToolCallDocument
from artifactize.ports.ids import SessionId
from artifactize.ports.model import BackendUnavailable, ModelBackend, ToolSpec
from artifactize.ports.statuses import ErrorCode

FOLLOW_UP_MAX_CHARS = 64 * 1024
NOT_FINISHED = "The Agent review of this session has not finished; follow up once it has."


@dataclass
class FollowUpResult:
    answer: str | None
    error: str | None
    error_code: ErrorCode | None
    tool_calls: list[ToolCallDocument]


class FollowUp:
    def __init__(
        self,
        ports: ReviewPorts,
        conversations: ConversationStore,
        load_workspace: WorkspaceLoader[Workspace],
        output_root: str | None,
    ) -> None:
        self.ports = ports
        self.conversations = conversations
        self.load_workspace = load_workspace  # repo path -> Workspace
        self.output_root = output_root

    async def send(self, session_id: SessionId, message: str) -> FollowUpResult:
        if not message.strip():
            raise ConversationError("The follow-up message is empty.")
        if len(message) > FOLLOW_UP_MAX_CHARS:
            raise ConversationError(
                f"The follow-up message exceeds {FOLLOW_UP_MAX_CHARS} characters."
            )
        with self.conversations.locked(session_id):
            saved = load_conversation(self.conversations.read(session_id))
            if not saved.finished:
                raise ConversationError(NOT_FINISHED)
            header = saved.header
            workspace: Workspace = await self.ports.threads.run(
                self.load_workspace, str(header["repoPath"])
            )
            try:
                found = workspace.find_eval(str(header["evalId"]))
            except UnknownName:
                raise ConversationError(
                    f"The eval {header['evalId']} no longer exists; it cannot be followed up."
                ) from None
            profile = found.eval.profile
            if not isinstance(profile, AgentProfile):
                raise ConversationError(f"The eval {header['evalId']} is no longer an Agent eval.")
            now = timestamp(self.ports.clock.now())
            events: list[dict[str, Any]] = [{"kind": "send", "at": now, "text": message}]
            result = await self._converse(
                workspace, found.qualified_id, profile, header, saved.items, message, events
            )
            self.conversations.append(session_id, events)
            return result

    async def _converse(
        self,
        workspace: Workspace,
        qualified_id: str,
        profile: AgentProfile,
        header: Any,
        history: Any,
        message: str,
        events: list[dict[str, Any]],
    ) -> FollowUpResult:
        backend: ModelBackend | None = None
        agents = self.ports.coding_agents
        if profile.backend in CODING_AGENT_BACKENDS:
            if agents is None:
                message = f"The {profile.backend} backend is not available in this build."
                return self._failed(events, FailureCode.AGENT_UNAVAILABLE, message, [])
        else:
            try:
                backend = self.ports.backends.open(profile.backend, profile.base_url)
            except BackendUnavailable as exc:
                return self._failed(events, FailureCode.PREPARATION_FAILED, str(exc), [])
        registry = AgentToolRegistry.for_eval(workspace, qualified_id, self.ports.tools)
        sessions = registry.sessions(self.ports.sessions)
        bound = registry.with_sessions(sessions)
        tools = tuple(ToolSpec(d.name, d.description, d.input_schema) for d in registry.list())

        async def call_tool(name: str, arguments: Any) -> Any:
            return await bound.call(name, arguments, self.output_root)

        settings = LoopSettings(
            str(header.get("model") or profile.model),
            profile.reasoning,
            profile.max_tool_calls,
            profile.max_tokens,
        )
        validator = VerdictValidator(None, None)
        loop: AgentLoop | CodingAgentLoop
        if backend is None:
            assert agents is not None
            loop = CodingAgentLoop(
                agents,
                profile.backend,
                profile.base_url,
                profile.timeout_ms,
                call_tool,
                validator,
                settings,
            )
        else:
            loop = AgentLoop(backend, call_tool, validator, settings)
        answer: str | None = None
        failure: AgentFailure | None = None
        work = loop.answer(str(header["instructions"]), history, message, tools)
        try:
            answer = await converse_then_close(work, profile.timeout_ms, sessions)
        except AgentFailure as exc:
            failure = exc
        finally:
            with anyio.CancelScope(shield=True):
                if backend is not None:
                    await backend.aclose()
                now = timestamp(self.ports.clock.now())
                events.extend(item_event(i, now) for i in loop.trace.items[len(history) + 1 :])
                events.extend(
                    {"kind": "attempt", "at": now, **a.to_json()} for a in loop.trace.attempts
                )
        calls = [c.to_json() for c in loop.trace.tool_calls]
        if failure is not None:
            return self._failed(events, failure.code, failure.message, calls)
        events.append({"kind": "answer", "at": now, "text": answer})
        return FollowUpResult(answer, None, None, calls)

    def _failed(
        self,
        events: list[dict[str, Any]],
        code: FailureCode,
        message: str,
        calls: list[ToolCallDocument],
    ) -> FollowUpResult:
        now = timestamp(self.ports.clock.now())
        events.append(
            {"kind": "answer", "at": now, "text": None, "error": message, "errorCode": code}
        )
        return FollowUpResult(None, message, code, calls)
