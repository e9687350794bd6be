"""State store port: Runs and their requests, saved as camelCase JSON documents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class RunRecord:
    """A saved Run: indexed columns plus the full JSON document."""

    id: str
    repo: str
    status: str
    data: Mapping[str, Any]


@dataclass(frozen=True)
class RequestRecord:
    """One eval of a Run: indexed columns plus the full JSON document."""

    id: str
    run_id: str
    eval_id: str
    ordinal: int
    status: str
    data: Mapping[str, Any]


class StateStore(Protocol):
    def save_run(self, run: RunRecord, requests: Sequence[RequestRecord]) -> None:
        """Create or replace a Run and its requests in one transaction."""
        ...

    def get_run(self, run_id: str) -> RunRecord | None: ...

    def list_runs(self, repo: str | None, limit: int, offset: int) -> list[RunRecord]:
        """Runs newest first, for one canonical repo or (``None``) every repo."""
        ...

    def list_requests(self, run_id: str) -> list[RequestRecord]: ...
