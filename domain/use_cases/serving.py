"""Serving an Agent eval's tools to an outside agent client (``artifactize mcp``).

What is served is exactly what the eval's review would see: the registry of its admitted
scope (or, with an Artifact, that Artifact's Agent tools with its children's scope), pinned
when the server starts, with the same argument admission, limits and normalization, since
every call goes through ``AgentToolRegistry.call`` unchanged. Human tools are never served.

A server run is one *MCP session* in the state: its scope, repository and pins, its start
and its end. Each call is written as an ordered audit entry before it runs and completed
with ``isError``, its duration and a result summary of at most AUDIT_SUMMARY_MAX_CHARS
characters after it; a call past the budget (``--max-tool-calls``) is audited too, and
refused with an error result.

The ``read`` and ``list`` built-ins start on the event loop and move to a worker thread only
past a 1 ms budget (``InlineFirst``): the thread's two wake-ups cost half of a short served
read.

The audit is written inline, one short transaction each (as the state is everywhere): a
hop to a worker thread cost more than the write itself (bench/mcp.py). The entry of a call
is always written before the call runs. Its completion is written right after the call
too, unless the transport sets ``defer_completions`` (stdio does): then a call that
finished (not one that was cancelled) keeps its completion pending until the transport has
written the answer to the client and calls ``flush_completions``, so the answer does not
wait for a second commit; ``close`` flushes whatever is still pending before it ends the
session. A server killed between an answer and its flush leaves that entry without its
completion, as a kill during the call would. Tool sessions are
lazy per client connection, as in a review: a connection's set starts
nothing until a bound tool is called, and is stopped and cleaned up when the connection
ends (``end_connection``) or the server stops (``close``), whichever comes first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from artifactize.domain.declarations.model import AgentProfile, HumanProfile
from artifactize.domain.project.workspace import EvalRef, UnknownName, Workspace
from artifactize.domain.reviews.agent.prompt import build_prompt
from artifactize.domain.text import compact_json_size
from artifactize.domain.tools.cancellation import CANCELLED_MESSAGE, InlineFirst
from artifactize.domain.tools.pinning import PinningError, pin_execution_paths
from artifactize.domain.tools.registry import (
    AgentToolRegistry,
    RegistryError,
    ToolDefinition,
    ToolPorts,
)
from artifactize.domain.tools.results import ToolResult
from artifactize.domain.tools.sessions import SessionPorts, ToolSessions
from artifactize.kernel.timestamps import timestamp
from artifactize.ports.clock import Clock
from artifactize.ports.ids import IdSource
from artifactize.ports.mcp_audit import (
    McpAuditStore,
    McpCallOutcome,
    McpCallRecord,
    McpSessionRecord,
)
from artifactize.ports.state import StateError
from artifactize.ports.statuses import ErrorCode

MAX_TOOL_CALLS_MIN = 1
SESSION_ID_CHARS = 12
_SESSION_ID_ALPHABET = "0123456789abcdef"
SESSION_ID_PREFIX = "mcp-"
PROMPT_PREFIX = "review_"

NOT_AN_AGENT_EVAL = (
    "{eval_id} is a {kind} eval; artifactize mcp serves the tools of an Agent eval only."
)
BUDGET_TOO_SMALL = "--max-tool-calls must be at least {minimum}, got {value}."
CHOOSE_ONE = "Give exactly one of --eval ARTIFACT/EVAL and --artifact ARTIFACT."
BUDGET_SPENT = (
    "Tool call refused: this MCP server's budget of {limit} tool calls (--max-tool-calls) is spent."
)
AUDIT_FAILED = "Tool call refused: its audit entry could not be written ({detail})."
UNFINISHED_CALL = "Tool call did not complete."


class ServeRefused(Exception):
    """The server cannot start (exit 2); ``code`` is PREPARATION_FAILED for pins."""

    def __init__(self, message: str, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True)
class ServeSelection:
    eval_id: str | None = None
    artifact: str | None = None
    max_tool_calls: int | None = None  # None: the eval's maxToolCalls, else no limit


@dataclass(frozen=True)
class ServedPrompt:
    """The review as an MCP prompt: one user message, recorded nowhere as a verdict."""

    name: str
    title: str
    description: str
    text: str


@dataclass(frozen=True)
class ServedScope:
    """What a server serves, fixed when it starts."""

    workspace: Workspace
    registry: AgentToolRegistry
    eval_id: str | None
    artifact: str | None
    pins: Mapping[str, Mapping[str, str]]
    max_tool_calls: int | None
    prompt: ServedPrompt | None

    @property
    def tools(self) -> list[ToolDefinition]:
        return self.registry.list()

    def to_json(self) -> dict[str, Any]:
        return {
            "evalId": self.eval_id,
            "artifactId": self.artifact,
            "scope": list(self.registry.scope),
            "tools": [tool.name for tool in self.tools],
            "pins": {tool: dict(paths) for tool, paths in self.pins.items()},
            "maxToolCalls": self.max_tool_calls,
            "prompt": self.prompt.name if self.prompt else None,
        }


def prompt_name(eval_ref: EvalRef) -> str:
    return f"{PROMPT_PREFIX}{eval_ref.artifact.name}_{eval_ref.eval.id}"


def prepare_scope(workspace: Workspace, selection: ServeSelection, ports: ToolPorts) -> ServedScope:
    """The registry, pins and prompt to serve; raises ``ServeRefused`` before anything is
    served. Pins are taken here, as at review start: a path that cannot be pinned refuses
    the start with the message a review records under PREPARATION_FAILED."""
    if (selection.eval_id is None) == (selection.artifact is None):
        raise ServeRefused(CHOOSE_ONE)
    limit = selection.max_tool_calls
    if limit is not None and limit < MAX_TOOL_CALLS_MIN:
        raise ServeRefused(BUDGET_TOO_SMALL.format(minimum=MAX_TOOL_CALLS_MIN, value=limit))
    prompt: ServedPrompt | None = None
    try:
        if selection.eval_id is not None:
            eval_ref = workspace.find_eval(selection.eval_id)
            profile = eval_ref.eval.profile
            if not isinstance(profile, AgentProfile):
                kind = "Human" if isinstance(profile, HumanProfile) else "runtime"
                raise ServeRefused(NOT_AN_AGENT_EVAL.format(eval_id=selection.eval_id, kind=kind))
            registry = AgentToolRegistry.for_eval(workspace, selection.eval_id, ports)
            if limit is None:
                limit = profile.max_tool_calls
            prompt = _prompt(workspace, eval_ref, registry)
        else:
            assert selection.artifact is not None
            registry = AgentToolRegistry.for_artifact(workspace, selection.artifact, ports)
    except (UnknownName, RegistryError) as exc:
        raise ServeRefused(str(exc)) from None
    try:
        pins = pin_execution_paths(workspace, ports.filesystem, registry.scope)
    except PinningError as exc:
        raise ServeRefused(str(exc), ErrorCode.PREPARATION_FAILED) from None
    return ServedScope(
        workspace, registry, selection.eval_id, selection.artifact, pins, limit, prompt
    )


def _prompt(workspace: Workspace, eval_ref: EvalRef, registry: AgentToolRegistry) -> ServedPrompt:
    built = build_prompt(workspace, eval_ref, registry.list(), registry.scope)
    return ServedPrompt(
        name=prompt_name(eval_ref),
        title=eval_ref.eval.title,
        description=(
            f"Review {eval_ref.qualified_id} ({eval_ref.eval.title}) with its declared tools; "
            "answer with one JSON object matching the GREEN or RED schema. "
            "Nothing is recorded as a verdict."
        ),
        text=f"{built.instructions}\n\n{built.user_text}",
    )


@dataclass(frozen=True)
class ServingPorts:
    audit: McpAuditStore
    sessions: SessionPorts
    clock: Clock
    ids: IdSource


ConnectionKey = str | None  # None: the server's own connection (stdio, per-request HTTP)


@dataclass
class _Connection:
    sessions: ToolSessions
    registry: AgentToolRegistry


@dataclass
class ServingRun:
    """One server run: the audit session, the budget, the tool sessions of each connection.

    ``await start()``, then ``call`` for every tools/call, ``end_connection`` when a client
    connection ends, and ``close()`` (shielded) when the server stops."""

    served: ServedScope
    ports: ServingPorts
    repo: str
    output_root: str | None = None
    transport: str = "stdio"
    session_id: str = ""
    calls_started: int = 0
    problems: list[str] = field(default_factory=list)
    defer_completions: bool = False
    _connections: dict[ConnectionKey, _Connection] = field(default_factory=dict)
    _pending: list[tuple[int, ToolResult, McpCallOutcome]] = field(default_factory=list)
    _closed: bool = False

    def new_session_id(self) -> str:
        return SESSION_ID_PREFIX + self.ports.ids.choose(_SESSION_ID_ALPHABET, SESSION_ID_CHARS)

    def _document(self) -> dict[str, Any]:
        data = {**self.served.to_json(), "transport": self.transport}
        if self.problems:
            data["problems"] = list(self.problems)
        return data

    def _now(self) -> str:
        return timestamp(self.ports.clock.now())

    async def start(self) -> None:
        """Record the MCP session; raises ``ServeRefused`` when the state cannot take it."""
        if not self.session_id:
            self.session_id = self.new_session_id()
        record = McpSessionRecord(self.session_id, self.repo, self._now(), None, self._document())
        try:
            self.ports.audit.start_session(record)
        except StateError as exc:
            raise ServeRefused(str(exc)) from None

    def _connection(self, key: ConnectionKey) -> _Connection:
        found = self._connections.get(key)
        if found is None:
            sessions = self.served.registry.sessions(self.ports.sessions)
            registry = self.served.registry.with_sessions(sessions)
            inline = InlineFirst(self.ports.clock.monotonic, threads=registry.ports.threads)
            found = _Connection(sessions, registry.with_inline_first(inline))
            self._connections[key] = found
        return found

    async def call(self, name: str, arguments: Any, connection: ConnectionKey = None) -> ToolResult:
        """One audited tools/call. Never raises for a tool failure; a cancelled call is
        audited as such before the cancellation goes on."""
        limit = self.served.max_tool_calls
        self.calls_started += 1
        ordinal = self.calls_started
        admitted = limit is None or ordinal <= limit
        started = self.ports.clock.monotonic()
        entry = McpCallRecord(
            self.session_id, ordinal, name, compact_json_size(arguments), self._now()
        )
        try:
            self.ports.audit.start_call(entry)
        except StateError as exc:
            return ToolResult.error(AUDIT_FAILED.format(detail=exc))
        result: ToolResult | None = None
        cancelled = False
        try:
            if not admitted:
                result = ToolResult.error(BUDGET_SPENT.format(limit=limit))
            elif self._closed:
                result = ToolResult.error(CANCELLED_MESSAGE)
            else:
                registry = self._connection(connection).registry
                result = await registry.call(name, arguments, self.output_root)
        except anyio.get_cancelled_exc_class():
            result = ToolResult.error(CANCELLED_MESSAGE)
            cancelled = True
            raise
        finally:
            finished = result if result is not None else ToolResult.error(UNFINISHED_CALL)
            elapsed = self.ports.clock.monotonic() - started
            # the summary is made when the completion is written (``_complete``)
            outcome = McpCallOutcome(
                self._now(), finished.is_error, round(elapsed * 1000), summary=""
            )
            if self.defer_completions and not cancelled and result is not None:
                self._pending.append((ordinal, finished, outcome))
            else:
                self._complete(ordinal, finished, outcome)
        return finished

    def _complete(self, ordinal: int, result: ToolResult, outcome: McpCallOutcome) -> None:
        summarized = replace(outcome, summary=result.audit_summary())
        try:
            self.ports.audit.finish_call(self.session_id, ordinal, summarized)
        except StateError as exc:
            self.problems.append(f"audit entry {ordinal} not completed: {exc}")

    def flush_completions(self) -> None:
        """Write the pending completions, oldest first (the transport calls it once it has
        written an answer; ``close`` calls it too). Never raises: a failure is a problem of
        the run, reported when it ends."""
        pending, self._pending = self._pending, []
        for ordinal, result, outcome in pending:
            try:
                self._complete(ordinal, result, outcome)
            except Exception as exc:  # the writer of the wire must never die of it
                self.problems.append(f"audit entry {ordinal} not completed: {exc}")

    async def end_connection(self, key: ConnectionKey) -> None:
        """A client connection ended: stop and clean up its tool sessions (shielded)."""
        found = self._connections.pop(key, None)
        if found is None:
            return
        with anyio.CancelScope(shield=True):
            self.problems.extend(await found.sessions.close())

    async def close(self) -> list[str]:
        """The server stops: every connection's sessions, then the end of the MCP session.
        Shielded; returns the problems (cleanup failures, audit failures)."""
        self._closed = True
        with anyio.CancelScope(shield=True):
            self.flush_completions()
            for key in list(self._connections):
                await self.end_connection(key)
            try:
                self.ports.audit.end_session(self.session_id, self._now(), self._document())
            except StateError as exc:
                self.problems.append(f"MCP session end not recorded: {exc}")
        return list(self.problems)
