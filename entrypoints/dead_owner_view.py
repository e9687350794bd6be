"""A state read as if its dead owners' Runs were settled, when settling them could not be
written (a full, read-only or busy state): ``status`` and ``run list`` then never show a
Run RUNNING whose owner has exited, and the next reader that can write saves the same
settlement (issue 26)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from artifactize.kernel.document_codec import request_changed, run_changed
from artifactize.kernel.transitions import request_moves, run_moves
from artifactize.ports.ids import RequestId, RunId
from artifactize.ports.state import RequestLine, RequestRecord, RunHead, RunRecord, StateStore
from artifactize.ports.statuses import ErrorCode, RequestStatus, RunStatus


class DeadOwnersView:
    """A state whose dead owners' Runs could not be settled (the write failed), read as if
    they were: such a RUNNING Run, and its requests still QUEUED or RUNNING, read ERROR /
    OWNER_DIED, as the next reader that can write will save them. Everything else is the
    store itself."""

    def __init__(
        self,
        store: StateStore,
        dead: frozenset[tuple[int, float]],
        settled_at: str | None = None,
    ) -> None:
        self._store = store
        self._dead = dead
        # When the death was noticed: the Run's ``completedAt``, as a writer's settlement
        # records it (None: left unset), so its duration stops growing.
        self._settled_at = settled_at
        self._run_died: dict[RunId, bool] = {}  # an open request's Run, read once per Run

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _died(self, run: RunRecord | None) -> bool:
        if run is None or run.status != RunStatus.RUNNING:
            return False
        owner = run.data.owner
        return owner is not None and (owner.get("pid"), owner.get("startTime")) in self._dead

    def _run(self, run: RunRecord) -> RunRecord:
        if not self._died(run):
            return run
        status = run_moves(run.status, RunStatus.ERROR)
        data = run_changed(
            run.data, status=status, error_code=ErrorCode.OWNER_DIED, error=RUN_OWNER_DIED
        )
        if self._settled_at is not None and data.completed_at is None:
            data = run_changed(data, completed_at=self._settled_at)
        return dataclasses.replace(run, status=status, data=data)

    def _request(self, request: RequestRecord) -> RequestRecord:
        if request.status not in OPEN_STATUSES or not self._of_dead_run(request.run_id):
            return request
        status = request_moves(request.status, RequestStatus.ERROR)
        data = request_changed(
            request.data, status=status, error_code=ErrorCode.OWNER_DIED, error=RUN_OWNER_DIED
        )
        return dataclasses.replace(request, status=status, data=data)

    def _of_dead_run(self, run_id: RunId) -> bool:
        """Whether the Run is a dead owner's, its head read once (not its 14 MB of
        definitions once per open request: a dead 10,000-Artifact Run has 14,000)."""
        died = self._run_died.get(run_id)
        if died is None:
            died = self._run_died[run_id] = self._died(
                self._store.get_run(run_id, definitions=False)
            )
        return died

    def get_run(self, run_id: RunId, *, definitions: bool = True) -> RunRecord | None:
        run = self._store.get_run(run_id, definitions=definitions)
        return None if run is None else self._run(run)

    def run_head(self, run_id: RunId) -> RunHead | None:
        head: RunHead | None = self._store.run_head(run_id)
        return None if head is None else self._head(head)

    def list_run_heads(self, repo: str | None, limit: int, offset: int) -> list[RunHead]:
        return [self._head(head) for head in self._store.list_run_heads(repo, limit, offset)]

    def _head(self, head: RunHead) -> RunHead:
        if head.status != RunStatus.RUNNING:
            return head
        run = self.get_run(head.id, definitions=False)  # a dead owner's reads as ERROR
        return head if run is None else dataclasses.replace(head, status=run.status)

    def list_runs(self, repo: str | None, limit: int, offset: int) -> list[RunRecord]:
        return [self._run(run) for run in self._store.list_runs(repo, limit, offset)]

    def list_requests(self, run_id: RunId) -> list[RequestRecord]:
        return [self._request(request) for request in self._store.list_requests(run_id)]

    def iter_requests(self, status: str | None = None) -> Iterator[RequestRecord]:
        """A dead owner's open requests read ERROR, so they are filtered after that."""
        read = map(self._request, self._store.iter_requests())
        return read if status is None else (r for r in read if r.status == status)

    def iter_request_lines(
        self, run_id: RunId | None = None, status: str | None = None
    ) -> Iterator[RequestLine]:
        """A dead owner's open requests read ERROR, so they are filtered after that."""
        for line in self._store.iter_request_lines(run_id):
            if line.status in OPEN_STATUSES and self._of_dead_run(line.run_id):
                line = dataclasses.replace(
                    line, status=request_moves(line.status, RequestStatus.ERROR)
                )
            if status is None or line.status == status:
                yield line

    def get_request(self, request_id: RequestId) -> RequestRecord | None:
        request = self._store.get_request(request_id)
        return None if request is None else self._request(request)


RUN_OWNER_DIED = "Run owner died."
OPEN_STATUSES = (RequestStatus.QUEUED, RequestStatus.RUNNING)  # what a dead owner left open
