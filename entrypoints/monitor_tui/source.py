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
from artifactize.kernel.document_codec import run_json
from artifactize.ports.documents import Request
from artifactize.ports.ids import RunId
from artifactize.ports.state import StateStore
from artifactize.ports.statuses import RequestStatus


class MonitorReadError(Exception):
    """A read of the state failed; the message says why."""


@dataclass(frozen=True)
class RunDocument:
    """One Run as read at once: the Run (its definitions included), its requests as typed
    documents (a request is converted to JSON only when its detail is shown), and who
    claimed each waiting Human request ("alice since …")."""

    run: dict[str, Any]
    requests: list[Request]
    claims: dict[str, str | None]


@dataclass(frozen=True)
class _Read:
    """The document last read, and the state's change mark it was read at."""

    run_id: str
    mark: object
    document: RunDocument | None


OpenState = Callable[[], StateStore | None]


class MonitorSource:
    """Runs of ``repo`` (``None``: every repository), newest first."""

    def __init__(self, open_state: OpenState, repo: str | None) -> None:
        self._open_state = open_state
        self._store: StateStore | None = None
        self.repo = repo
        self._last: _Read | None = None
        self._definitions: tuple[str, Any] | None = None  # the open Run's, read once

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
        """The Run, read again only when the state changed since the last read of it (the
        very same document otherwise: a 10,000-Artifact Run is 14 MB of definitions and
        14,000 requests). Its definitions never change once it is created: they are read
        with the first read of the Run, and not again while it stays open."""
        store = self._state()
        if store is None:
            return None

        def read() -> RunDocument | None:
            mark = store.change_mark()
            last = self._last
            if last is not None and last.run_id == run_id and last.mark == mark:
                return last.document
            document = self._document(store, run_id)
            self._last = _Read(run_id, mark, document)
            return document

        document: RunDocument | None = self._read(read)
        return document

    def _document(self, store: StateStore, run_id: str) -> RunDocument | None:
        known = self._definitions is not None and self._definitions[0] == run_id
        run = store.get_run(RunId(run_id), definitions=not known)
        if run is None:
            return None
        saved = run_json(run.data)
        if known:
            assert self._definitions is not None
            saved["definitions"] = self._definitions[1]
        else:
            self._definitions = (run_id, saved.get("definitions"))
        requests = [r.data for r in store.list_requests(RunId(run_id))]
        waiting = {str(r.id) for r in requests if r.status == RequestStatus.WAITING_HUMAN}
        claims: dict[str, str | None] = dict.fromkeys(waiting)
        if waiting:
            for request_id, claim in store.human_claims().items():
                if request_id in waiting:
                    claims[request_id] = f"{claim.reviewer} since {claim.claimed_at}"
        return RunDocument(saved, requests, claims)
