"""An in-memory ``McpAuditStore``: sessions and call entries in dicts, with failure switches."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from artifactize.ports.mcp_audit import McpCallOutcome, McpCallRecord, McpSessionRecord
from artifactize.ports.state import StateError


@dataclass
class MemoryMcpAudit:
    records: dict[str, McpSessionRecord] = field(default_factory=dict)
    entries: dict[tuple[str, int], McpCallRecord] = field(default_factory=dict)
    fail_start_call: bool = False
    closed: bool = False

    def start_session(self, session: McpSessionRecord) -> None:
        self.records[session.id] = session

    def end_session(self, session_id: str, ended_at: str, data: Mapping[str, Any]) -> None:
        self.records[session_id] = replace(self.records[session_id], ended_at=ended_at, data=data)

    def start_call(self, call: McpCallRecord) -> None:
        if self.fail_start_call:
            raise StateError("database is locked")
        key = (call.session_id, call.ordinal)
        assert key not in self.entries, "ordinals are unique"
        self.entries[key] = call

    def finish_call(self, session_id: str, ordinal: int, outcome: McpCallOutcome) -> None:
        self.entries[(session_id, ordinal)] = replace(
            self.entries[(session_id, ordinal)],
            completed_at=outcome.completed_at,
            is_error=outcome.is_error,
            duration_ms=outcome.duration_ms,
            summary=outcome.summary,
        )

    def sessions(self, limit: int) -> list[tuple[McpSessionRecord, int]]:
        newest = sorted(self.records.values(), key=lambda r: r.started_at, reverse=True)
        return [(r, len(self.calls(r.id))) for r in newest[:limit]]

    def session(self, session_id: str) -> McpSessionRecord | None:
        return self.records.get(session_id)

    def calls(self, session_id: str) -> list[McpCallRecord]:
        return sorted(
            (c for (sid, _), c in self.entries.items() if sid == session_id),
            key=lambda c: c.ordinal,
        )

    def close(self) -> None:
        self.closed = True
