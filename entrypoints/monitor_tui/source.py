"""What the monitor reads, through a read-only state connection.

The monitor writes nothing and runs no owner code: it opens the state with ``read_only``
(SQLite ``mode=ro`` and ``query_only``), needs no repository, and when a read fails the
caller keeps what it showed last. A state that does not exist yet is no Runs, and is
looked for again on the next refresh (the first ``verify`` creates it).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, cast

from artifactize.entrypoints.dead_owner_view import OPEN_STATUSES, DeadOwnersView
from artifactize.entrypoints.monitor_tui.views import RunRow
from artifactize.kernel.document_codec import run_json
from artifactize.ports.documents import Request
from artifactize.ports.ids import RunId
from artifactize.ports.state import StateStore
from artifactize.ports.statuses import RequestStatus, RunStatus


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
    """A Run's document last read, and the state's change mark it was read at."""

    mark: object
    document: RunDocument | None
    dead: frozenset[tuple[int, float]] = frozenset()  # the dead owners it was read with


OpenState = Callable[[], StateStore | None]
# Whether a Run's owner (pid, start time) still runs: the process table's answer.
OwnerAlive = Callable[[int, float], bool]
Owner = tuple[int, float]
KEPT_RUNS = 4  # Runs whose last read is kept: the monitor shows one, a web server's pages a few


def _keep(kept: OrderedDict[str, Any], run_id: str, value: Any) -> None:
    """Keep ``value`` as the newest of at most ``KEPT_RUNS``."""
    kept[run_id] = value
    kept.move_to_end(run_id)
    while len(kept) > KEPT_RUNS:
        kept.popitem(last=False)


class MonitorSource:
    """Runs of ``repo`` (``None``: every repository), newest first."""

    def __init__(
        self,
        open_state: OpenState,
        repo: str | None,
        owner_alive: OwnerAlive | None = None,
        now: Callable[[], str] | None = None,
    ) -> None:
        self._open_state = open_state
        self._store: StateStore | None = None
        self.repo = repo
        # A RUNNING Run whose owner has died reads as the next writer will settle it
        # (``DeadOwnersView``): the monitor cannot write, and a process that dies commits
        # nothing, so no change mark would ever show it. Owners are read once per Run.
        self._owner_alive = owner_alive
        self._owners: dict[str, Owner | None] = {}
        self._now = now  # when a death is first noticed: the Run's completedAt (None: unset)
        self._noticed: str | None = None
        # The last read of each of the few Runs shown (the monitor's one, a web server's
        # pages), newest last, and their definitions, read once each.
        self._reads: OrderedDict[str, _Read] = OrderedDict()
        self._definitions: OrderedDict[str, Any] = OrderedDict()
        self._rows: tuple[object, int, list[RunRow]] | None = None  # the Run list last read

    def _state(self) -> StateStore | None:
        if self._store is None:
            self._reads.clear()  # another store's change marks compare to none of these
            self._rows = None
            self._store = self._read(self._open_state)
        return self._store

    def _owner(self, store: StateStore, run_id: str) -> Owner | None:
        if run_id not in self._owners:
            run = store.get_run(RunId(run_id), definitions=False)
            owner = run.data.owner if run is not None else None
            self._owners[run_id] = None if owner is None else (owner["pid"], owner["startTime"])
        return self._owners[run_id]

    def _dead(self, store: StateStore, running: Iterable[str]) -> frozenset[Owner]:
        """The owners of the ``running`` Runs that no longer run."""
        alive = self._owner_alive
        if alive is None:
            return frozenset()
        owners = (self._owner(store, run_id) for run_id in running)
        dead = frozenset(o for o in owners if o is not None and not alive(*o))
        if dead and self._noticed is None and self._now is not None:
            self._noticed = self._now()
        return dead

    @staticmethod
    def _settled(row: RunRow) -> RunRow:
        """A dead owner's Run as ``DeadOwnersView`` reads it: ERROR, its queued and running
        requests counted ERROR."""
        counts = dict(row.counts)
        ended = sum(counts.pop(status, 0) for status in OPEN_STATUSES)
        if ended:
            counts[RequestStatus.ERROR] = counts.get(RequestStatus.ERROR, 0) + ended
        return replace(row, status=RunStatus.ERROR, counts=counts)

    def _through(self, store: StateStore, dead: frozenset[Owner]) -> StateStore:
        return store if not dead else cast(StateStore, DeadOwnersView(store, dead, self._noticed))

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
            mark = store.change_mark()
            if self._rows is not None and self._rows[:2] == (mark, limit):
                rows = self._rows[2]
            else:
                runs = store.list_run_heads(self.repo, limit, 0)  # no Run decoded
                counts = store.status_counts([run.id for run in runs])  # no request decoded
                rows = [
                    RunRow(
                        run_id=run.id,
                        repo=run.repo,
                        status=run.status,
                        counts=counts.get(run.id, {}),
                        created_at=run.created_at,
                    )
                    for run in runs
                ]
                self._rows = (mark, limit, rows)
            running = [row.run_id for row in rows if row.status == RunStatus.RUNNING]
            dead = self._dead(store, running)
            return (
                [
                    self._settled(row) if self._owners.get(row.run_id) in dead else row
                    for row in rows
                ]
                if dead
                else rows
            )

        listed: list[RunRow] = self._read(read)
        return listed

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
            last = self._reads.get(run_id)
            dead = frozenset[Owner]() if last is None else last.dead  # a dead owner stays so
            if not dead and last is not None and _running(last.document):
                dead = self._dead(store, [run_id])
            if last is not None and (last.mark, last.dead) == (mark, dead):
                self._reads.move_to_end(run_id)
                return last.document
            document = self._document(self._through(store, dead), run_id)
            if not dead and _running(document):  # its owner may have died since it was read
                dead = self._dead(store, [run_id])
                if dead:
                    document = self._document(self._through(store, dead), run_id)
            _keep(self._reads, run_id, _Read(mark, document, dead))
            return document

        document: RunDocument | None = self._read(read)
        return document

    def _document(self, store: StateStore, run_id: str) -> RunDocument | None:
        known = run_id in self._definitions
        run = store.get_run(RunId(run_id), definitions=not known)
        if run is None:
            self._definitions.pop(run_id, None)
            return None
        saved = run_json(run.data)
        if known:
            saved["definitions"] = self._definitions[run_id]
            self._definitions.move_to_end(run_id)
        else:
            _keep(self._definitions, run_id, saved.get("definitions"))
        requests = [r.data for r in store.list_requests(RunId(run_id))]
        waiting = {str(r.id) for r in requests if r.status == RequestStatus.WAITING_HUMAN}
        claims: dict[str, str | None] = dict.fromkeys(waiting)
        if waiting:
            for request_id, claim in store.human_claims().items():
                if request_id in waiting:
                    claims[request_id] = f"{claim.reviewer} since {claim.claimed_at}"
        return RunDocument(saved, requests, claims)


def _running(document: RunDocument | None) -> bool:
    return document is not None and document.run.get("status") == RunStatus.RUNNING
