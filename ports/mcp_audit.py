"""MCP audit port: each ``artifactize mcp`` server run and every tool call it served.

A server run is an *MCP session*: what it served (scope, repository, pins), its budget, when
it started and ended. Each call is an ordered entry written before the call runs (tool,
argument size, start) and completed after it (``isError``, duration, a bounded result
summary). An entry that was never completed keeps ``completedAt`` null: the call did not
finish (the server was killed while it ran). The store lives beside the state's other
tables, in the same file; nothing here is a verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class McpSessionRecord:
    """One server run. ``data`` is its full camelCase document (``scope``, ``pins`` …)."""

    id: str
    repo: str
    started_at: str
    ended_at: str | None
    data: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            **dict(self.data),
            "id": self.id,
            "repo": self.repo,
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
        }


@dataclass(frozen=True)
class McpCallRecord:
    """One audited call, in the order the server admitted it (``ordinal`` from 1)."""

    session_id: str
    ordinal: int
    tool: str
    argument_bytes: int
    started_at: str
    completed_at: str | None = None
    is_error: bool | None = None
    duration_ms: int | None = None
    summary: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "ordinal": self.ordinal,
            "tool": self.tool,
            "argumentBytes": self.argument_bytes,
            "startedAt": self.started_at,
            "completedAt": self.completed_at,
            "isError": self.is_error,
            "durationMs": self.duration_ms,
            "summary": self.summary,
        }


@dataclass(frozen=True)
class McpCallOutcome:
    """What completes an audit entry."""

    completed_at: str
    is_error: bool
    duration_ms: int
    summary: str


class McpAuditStore(Protocol):
    """Every method is one short transaction; ``StateError`` (``ports.state``) on failure."""

    def start_session(self, session: McpSessionRecord) -> None: ...

    def end_session(self, session_id: str, ended_at: str, data: Mapping[str, Any]) -> None:
        """Set the end time and replace the document (it may have gained problems)."""
        ...

    def start_call(self, call: McpCallRecord) -> None:
        """Insert the entry of a call that is about to run (its ordinal is unique)."""
        ...

    def finish_call(self, session_id: str, ordinal: int, outcome: McpCallOutcome) -> None: ...

    def sessions(self, limit: int) -> list[tuple[McpSessionRecord, int]]:
        """The newest ``limit`` sessions, newest first, each with its call count."""
        ...

    def session(self, session_id: str) -> McpSessionRecord | None: ...

    def calls(self, session_id: str) -> list[McpCallRecord]:
        """The session's entries in ordinal order."""
        ...

    def close(self) -> None: ...


class McpAuditStores(Protocol):
    def open(self, state_dir: str, *, create: bool) -> McpAuditStore | None:
        """The audit of the state in ``state_dir``; ``None`` when there is no state and
        ``create`` is false (readers never create one)."""
        ...
