"""The team store's waiting Human requests for the browser inbox.

A ``verify --wait`` on another machine announces the Human requests it waits for to the
team review store (``domain/reviews/remote/waiting_requests.py``). The inbox lists them
beside this machine's, marked with where they wait. The store is asked in the background
every TEAM_REFRESH_SECONDS (and once, bounded, when the first page is served), never while
a page renders: a store that is slow or down costs a page nothing but a one-line notice,
and the local requests are always listed.

These requests are read-only here: the lifecycle settles requests in *local* state, and
their Run, its claim and its Human tools live on the machine that asked. The request page
says where to act instead (docs/web.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from artifactize.domain.reviews.remote.waiting_requests import (
    PublishedRequest,
    read_listing,
    repository_name,
)
from artifactize.ports.review_store import FailureMode, RemoteFailure, RemoteStore

TEAM_REFRESH_SECONDS = 5.0  # how often the inbox asks the store again
TEAM_ANSWER_SECONDS = 3.0  # a whole listing (every page) gets this long, then the notice
TEAM_PAGE_SIZE = 100  # announcements asked for per page
TEAM_REQUESTS_MAX = 1000  # at most this many announced requests are listed
UNREACHABLE = "{reason}; showing this machine's requests only."
SLOW = "The team store did not answer within {seconds:g} s; showing this machine's requests only."
REFUSED = "The team store refused the listing: {reason}; showing this machine's requests only."
OLD_STORE = "The team store lists no waiting requests (it predates them)."
TRUNCATED = "The team store has more waiting requests than the {limit} listed here."
INVALID = "Ignored {count} invalid waiting request(s) from the team store."


@dataclass
class TeamInbox:
    """The latest listing of the team store's waiting requests (empty without a store)."""

    store: RemoteStore | None
    repo: str | None  # this repository's path; None: every repository (``--all``)
    clock: Callable[[], float]  # monotonic seconds
    requests: list[PublishedRequest] = field(default_factory=list)
    notice: str | None = None
    fetched_at: float | None = None
    fetches: int = 0  # listings asked for, for tests
    _lock: anyio.Lock = field(default_factory=anyio.Lock)

    @property
    def repository(self) -> str | None:
        return None if self.repo is None else repository_name(self.repo)

    @property
    def configured(self) -> bool:
        return self.store is not None

    async def refresh(self) -> None:
        """Ask the store for every page, within TEAM_ANSWER_SECONDS; on any failure keep
        no team requests and say why in ``notice``."""
        async with self._lock:
            await self._refresh()

    async def _refresh(self) -> None:
        if self.store is None:
            return
        found: list[PublishedRequest] = []
        notes: list[str] = []
        invalid = 0
        with anyio.move_on_after(TEAM_ANSWER_SECONDS) as deadline:
            try:
                found, invalid, notes = await self._listing(self.store)
            except RemoteFailure as failure:
                found = []
                template = UNREACHABLE if failure.mode is FailureMode.OPEN else REFUSED
                notes = [template.format(reason=failure.message.rstrip("."))]
        if deadline.cancelled_caught:
            found, notes = [], [SLOW.format(seconds=TEAM_ANSWER_SECONDS)]
        if invalid:
            notes.append(INVALID.format(count=invalid))
        self.requests = found
        self.notice = " ".join(notes) or None
        self.fetched_at = self.clock()
        self.fetches += 1

    async def _listing(self, store: RemoteStore) -> tuple[list[PublishedRequest], int, list[str]]:
        found: list[PublishedRequest] = []
        invalid = 0
        after: str | None = None
        while True:
            page = await store.list_waiting(self.repository, after, TEAM_PAGE_SIZE)
            if page is None:
                return [], 0, [OLD_STORE]
            for item in page.requests:
                checked = read_listing(item)
                if isinstance(checked, str):
                    invalid += 1
                else:
                    found.append(checked)
            if page.next is None or page.next == after:
                return found[:TEAM_REQUESTS_MAX], invalid, []
            if len(found) >= TEAM_REQUESTS_MAX:
                notice = TRUNCATED.format(limit=TEAM_REQUESTS_MAX)
                return found[:TEAM_REQUESTS_MAX], invalid, [notice]
            after = page.next

    async def current(self) -> None:
        """Refresh unless the listing is fresh (the first page served waits for it; a
        listing under way is waited for, not asked again)."""
        async with self._lock:
            if self.fetched_at is None or self.clock() - self.fetched_at >= TEAM_REFRESH_SECONDS:
                await self._refresh()

    async def follow(self, stopping: anyio.Event) -> None:
        """Keep the listing fresh until the server stops (the server's task group)."""
        if self.store is None:
            return
        while not stopping.is_set():
            await self.current()
            with anyio.move_on_after(TEAM_REFRESH_SECONDS):
                await stopping.wait()

    def find(self, request_id: str) -> PublishedRequest | None:
        return next((r for r in self.requests if r.request_id == request_id), None)


def team_view(request: PublishedRequest) -> dict[str, Any]:
    """A request view-like mapping of an announced request, for the inbox table."""
    claim = (
        {"reviewer": request.reviewer, "claimedAt": request.claimed_at}
        if request.reviewer is not None
        else None
    )
    return {
        "id": request.request_id,
        "runId": request.run_id,
        "evalId": request.eval_id,
        "title": request.title,
        "createdAt": request.created_at,
        "claim": claim,
        "team": {
            "machine": request.machine,
            "publisher": request.publisher,
            "repository": request.repository,
        },
    }
