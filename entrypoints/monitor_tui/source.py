"""What the monitor reads, through a read-only state connection.

The monitor writes nothing and runs no owner code: it opens the state with ``read_only``
(SQLite ``mode=ro`` and ``query_only``), needs no repository, and when a read fails the
caller keeps what it showed last. A state that does not exist yet is no Runs, and is
looked for again on the next refresh (the first ``verify`` creates it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from artifactize.entrypoints.monitor_tui.views import RunRow
from artifactize.kernel.document_codec import request_json, run_json
from artifactize.ports.ids import RequestId, RunId
from artifactize.ports.state import StateStore


class MonitorReadError(Exception):
    """A read of the state failed; the message says why."""


@dataclass(frozen=True)
class RunDocument:
    run: dict[str, Any]
    requests: list[dict[str, Any]]


OpenState = Callable[[], StateStore | None]


class MonitorSource:
    """Runs of ``repo`` (``None``: every repository), newest first."""

    def __init__(self, open_state: OpenState, repo: str | None) -> None:
        self._open_state = open_state
        self._store: StateStore | None = None
        self.repo = repo

    def _state(self) -> StateStore | None:
        if self._store is None:
            self._store = self._read(self._open_state)
        return self._store

    def _read(self, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except Exception as error:  # any failed read is shown, never raised into the screen
            self._store = None  # reopen on the next read
            raise MonitorReadError(str(error) or type(error).__name__) from None

    def runs(self, limit: int) -> list[RunRow]:
        store = self._state()
        if store is None:
            return []

        def read() -> list[RunRow]:
            runs = store.list_runs(self.repo, limit, 0)
            counts = store.status_counts([run.id for run in runs])  # no request decoded
            return [
                RunRow(
                    run_id=run.id,
                    repo=run.repo,
                    status=run.status,
                    counts=counts.get(run.id, {}),
                    created_at=run.data.created_at or None,
                )
                for run in runs
            ]

        rows: list[RunRow] = self._read(read)
        return rows

    def run(self, run_id: str) -> RunDocument | None:
        store = self._state()
        if store is None:
            return None

        def read() -> RunDocument | None:
            run = store.get_run(RunId(run_id))
            if run is None:
                return None
            requests = [request_json(r.data) for r in store.list_requests(RunId(run_id))]
            return RunDocument(run_json(run.data), requests)

        document: RunDocument | None = self._read(read)
        return document

    def claimant(self, request_id: str) -> str | None:
        store = self._state()
        if store is None:
            return None
        claim = self._read(lambda: store.human_claim(RequestId(request_id)))
        return None if claim is None else f"{claim.reviewer} since {claim.claimed_at}"
