"""Dead owners settle: what every reader of the state does first.

A ``verify`` killed with SIGKILL leaves its Run RUNNING and its scratch folder under
``<state>/runs/``. The state store settles such Runs (ERROR / OWNER_DIED, with their
requests, in one transaction each) when their recorded owner — that very process, pid and
start time, never a reused pid — is gone; then the scratch folders of Runs that ended that
way are removed (no-follow). ``run list``, ``run show`` (also each poll of ``--wait``),
``status``, ``verify`` and the request commands all open the state through
``Services.open_state``, which calls this.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Any, cast

from artifactize.entrypoints.bootstrap import RUNS_FOLDER
from artifactize.entrypoints.container import Container
from artifactize.ports.sessions import ProcessIdentity
from artifactize.ports.state import RequestRecord, RunRecord, StateError, StateStore
from artifactize.ports.statuses import ErrorCode, ReviewStatus


def settle_dead_runs(
    store: StateStore, container: Container, state_dir: str
) -> tuple[tuple[str, ...], frozenset[tuple[int, float]]]:
    """Settle the Runs of dead owners, then sweep their scratch folders: the IDs settled,
    and the dead owners whose Runs could not be written (a full, read-only or busy state:
    the next reader settles them; this one shows them settled, ``DeadOwnersView``)."""
    table = container.process_table()
    dead: set[tuple[int, float]] = set()

    def owner_alive(pid: int, start_time: float) -> bool:
        alive = bool(table.is_alive(ProcessIdentity(pid, start_time)))
        if not alive:
            dead.add((pid, start_time))
        return alive

    try:
        settled = store.settle_dead_runs(owner_alive)
    except StateError:
        return (), frozenset(dead)
    sweep_dead_run_folders(store, container, state_dir)
    return settled, frozenset()


class DeadOwnersView:
    """A state whose dead owners' Runs could not be settled (the write failed), read as if
    they were: such a RUNNING Run, and its requests still QUEUED or RUNNING, read ERROR /
    OWNER_DIED, as the next reader that can write will save them. Everything else is the
    store itself."""

    def __init__(self, store: StateStore, dead: frozenset[tuple[int, float]]) -> None:
        self._store = store
        self._dead = dead

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _died(self, run: RunRecord | None) -> bool:
        if run is None or run.status != ReviewStatus.RUNNING:
            return False
        owner: dict[str, Any] = dict(run.data.get("owner") or {})
        return (owner.get("pid"), owner.get("startTime")) in self._dead

    def _run(self, run: RunRecord) -> RunRecord:
        if not self._died(run):
            return run
        data = {**run.data, **_DIED, "error": RUN_OWNER_DIED}
        return dataclasses.replace(run, status=ReviewStatus.ERROR, data=cast(Any, data))

    def _request(self, request: RequestRecord) -> RequestRecord:
        if request.status not in _OPEN or not self._died(self._store.get_run(request.run_id)):
            return request
        data = {**request.data, **_DIED, "error": RUN_OWNER_DIED}
        return dataclasses.replace(request, status=ReviewStatus.ERROR, data=cast(Any, data))

    def get_run(self, run_id: str) -> RunRecord | None:
        run = self._store.get_run(run_id)
        return None if run is None else self._run(run)

    def list_runs(self, repo: str | None, limit: int, offset: int) -> list[RunRecord]:
        return [self._run(run) for run in self._store.list_runs(repo, limit, offset)]

    def list_requests(self, run_id: str) -> list[RequestRecord]:
        return [self._request(request) for request in self._store.list_requests(run_id)]

    def get_request(self, request_id: str) -> RequestRecord | None:
        request = self._store.get_request(request_id)
        return None if request is None else self._request(request)


RUN_OWNER_DIED = "Run owner died."
_DIED = {"status": ReviewStatus.ERROR, "errorCode": ErrorCode.OWNER_DIED}
_OPEN = (ReviewStatus.QUEUED, ReviewStatus.RUNNING)


def sweep_dead_run_folders(store: StateStore, container: Container, state_dir: str) -> None:
    """Remove ``<state>/runs/RUN`` of every Run that ended OWNER_DIED (its owner cannot)."""
    try:
        folders = list((Path(state_dir) / RUNS_FOLDER).iterdir())
    except OSError:
        return
    scratch = container.scratch()
    for folder in folders:
        run = store.get_run(folder.name)
        if run is None or run.data.get("errorCode") != ErrorCode.OWNER_DIED:
            continue
        with contextlib.suppress(OSError):
            scratch.remove_tree(str(folder))
