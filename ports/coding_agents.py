"""Coding-agent port: a whole Agent review run by a coding agent's CLI (Claude Code, Codex).

An API backend (``ports.model``) translates one turn and the domain's loop owns the
conversation. A coding agent runs its own loop, so this port hands it the whole task: the
system preamble, the prompt and the eval's tools. The adapter serves those tools to the
agent (an MCP server of its own on loopback) and sends every call back through
``AgentHost.call_tool``, where the domain runs the registry, counts the budget and records
the call; the agent's built-in tools (shell, files, web, sub-agents) are switched off by the
agent's own configuration, and an agent that still offers one is refused. The adapter
reports the model and usage as they arrive (``AgentHost.model_reported``/``usage``), so the
domain can stop it when a budget runs out: cancelling ``run`` stops the agent's process
group.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from artifactize.ports.model import ToolSpec

CLAUDE_CODE_BACKEND = "claude-code"
CODEX_BACKEND = "codex"
CODING_AGENT_BACKENDS = (CLAUDE_CODE_BACKEND, CODEX_BACKEND)


class AgentProblem(enum.StrEnum):
    """Why a coding agent could not be used, or how its run went wrong."""

    UNAVAILABLE = "UNAVAILABLE"  # not installed, too old, not signed in, not confinable
    FAILED = "FAILED"  # crashed, wrote what is not its protocol, reported an error


class CodingAgentError(Exception):
    """The agent cannot run (``UNAVAILABLE``) or its run failed (``FAILED``). ``message`` is
    one line that says what to do; it never holds a key."""

    def __init__(self, problem: AgentProblem, message: str) -> None:
        super().__init__(message)
        self.problem = problem
        self.message = message


@dataclass(frozen=True)
class AgentTask:
    """What the agent is asked to do. ``resume`` continues the agent's own saved session
    (the format repair, a follow-up); ``base_url`` is the profile's endpoint."""

    backend: str
    model: str
    instructions: str
    prompt: str
    tools: tuple[ToolSpec, ...]
    timeout_ms: int
    base_url: str | None = None
    reasoning: str | None = None
    resume: str | None = None
    output_schema: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ToolAnswer:
    """A tool call's result as content blocks (``ports.model.ToolOutput``'s shapes)."""

    content: tuple[Mapping[str, Any], ...]
    is_error: bool


class AgentHost(Protocol):
    """The domain's side of a run: it runs the tools and watches the budgets."""

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolAnswer: ...

    def model_reported(self, model: str) -> None:
        """The model the agent says served a turn."""
        ...

    def usage(self, usage: Mapping[str, int]) -> None:
        """One model request's counters (``ports.model.TurnResponse.usage`` keys)."""
        ...


@dataclass(frozen=True)
class AgentAnswer:
    """How the agent ended: its final text, its session (to resume), the model it reported,
    its own usage totals (empty when it reported none) and its raw events (saved)."""

    text: str
    session_id: str | None
    reported_model: str | None
    usage: Mapping[str, int] = field(default_factory=dict)
    events: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class AgentInstall:
    """``models``/``doctor``: is the CLI there, which version, is it signed in?"""

    backend: str
    program: str | None
    version: str | None
    signed_in: bool | None  # None: could not tell
    detail: str  # one line: what to do when not ready, else how it signs in
    source: str = "PATH"  # PATH or the variable that named the program

    @property
    def ready(self) -> bool:
        return self.program is not None and self.version is not None and self.signed_in is True

    def to_json(self) -> dict[str, Any]:
        """The install as ``models --json`` and ``doctor --json`` show it."""
        return {
            "program": self.program,
            "programSource": self.source,
            "version": self.version,
            "signedIn": self.signed_in,
            "detail": self.detail,
            "ready": self.ready,
        }


@dataclass(frozen=True)
class AgentModel:
    """One model as the agent lists it: the name ``--model`` takes (a profile's ``model``),
    the agent's display name, and what it resolves to when the agent says (an alias)."""

    id: str
    name: str | None = None
    resolves_to: str | None = None


@dataclass(frozen=True)
class AgentModels:
    """``models claude-code|codex``: the install, and the models the agent lists, or
    ``note`` saying why it listed none."""

    install: AgentInstall
    models: tuple[AgentModel, ...] = ()
    note: str | None = None


class CodingAgents(Protocol):
    async def run(self, task: AgentTask, host: AgentHost) -> AgentAnswer:
        """Run the agent to its answer. Raises CodingAgentError; cancelling stops the
        agent's process group before returning."""
        ...

    async def install(self, backend: str) -> AgentInstall:
        """What ``doctor`` and ``models`` say about ``backend``."""
        ...

    async def models(self, backend: str) -> AgentModels:
        """The agent's install and the models it lists (asked of the agent itself; nothing
        is sent to a model)."""
        ...
