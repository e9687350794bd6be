"""The lifecycle calls one terminal review makes, and the claims it took (no urwid).

The reviewer works through the same ``HumanReviews`` operations as ``request …``, in this
process: reads are plain state queries, actions go through the lifecycle, and a submission
is published to the team store exactly as ``request submit`` publishes it.

Claim on first action: running a tool or submitting claims an unclaimed request first, and
the session remembers the claims it took, so quitting can offer to release the ones still
held (a claim taken elsewhere is never released on the way out).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from artifactize.domain.reviews.human.errors import HumanReviewError
from artifactize.domain.tools.cancellation import Cancellation
from artifactize.domain.tools.human.lines import LineSink
from artifactize.domain.tools.human.results import HumanToolResult
from artifactize.domain.use_cases.human_reviews import HumanReviews, Submitted
from artifactize.domain.use_cases.request_views import RequestViews
from artifactize.entrypoints.review_tui.waiting import (
    WAITING_HUMAN,
    WaitingRow,
    claimant,
    waiting_row,
)
from artifactize.ports.documents import RequestListed, RequestView
from artifactize.ports.ids import RequestId, RunId
from artifactize.ports.review_store import RemoteStore
from artifactize.ports.state import HumanClaim, RequestRecord, StateStore

VIEWS_KEPT = 8  # request views kept by the change mark: the pages a reviewer has open


class ReviewActions(Protocol):
    """What the reviewer's screens need from a review (``ReviewSession``; a fake in tests)."""

    reviewer: str
    warnings: list[str]

    def waiting(self) -> list[WaitingRow]: ...

    def view(self, request_id: str) -> Mapping[str, Any]: ...

    async def commands(self, request_id: str) -> dict[str, dict[str, Any]]: ...

    async def run_tool(
        self, request_id: str, tool: str, cancellation: Cancellation, on_line: LineSink
    ) -> HumanToolResult: ...

    async def release(self, request_id: str) -> HumanClaim: ...

    async def cancel(self, request_id: str, reason: str | None) -> tuple[str, ...]: ...

    async def submit(
        self, request_id: str, result: dict[str, Any], cancellation: Cancellation
    ) -> Submitted: ...

    def held(self) -> list[str]: ...

    async def release_all(self) -> list[tuple[str, str]]: ...


@dataclass
class ReviewSession:
    """One review: the state, the lifecycle, who reviews, and which repositories it lists
    (``repo`` None: every repository)."""

    store: StateStore
    reviews: HumanReviews
    reviewer: str
    remote: RemoteStore | None
    repo: str | None
    now: Callable[[], datetime]
    taken: list[str] = field(default_factory=list)  # request IDs claimed by this session
    warnings: list[str] = field(default_factory=list)  # what publishing had to say
    # The waiting list last read, and the state's change mark it was read at: a web page
    # counts it on every poll (ten a second), where reading it took ~1 s with 909 waiting.
    _listed: tuple[object, list[tuple[RequestListed, str]]] | None = field(default=None, repr=False)
    # The views last read (request ID -> the change mark and the view), oldest first.
    _views: dict[str, tuple[object, RequestView]] = field(default_factory=dict, repr=False)

    # --- reads ----------------------------------------------------------------------------

    def waiting(self) -> list[WaitingRow]:
        """The waiting requests of the listed repositories, newest Run first. A follower is
        listed as the request it waits on (that is the one a reviewer claims and settles)."""
        now = self.now()
        return [
            waiting_row(view, repo, self.reviewer, now) for view, repo in self._waiting_listed()
        ]

    def waiting_views(self) -> list[RequestListed]:
        """What a list of the waiting requests shows of each (``waiting``'s requests): the
        saved request and its claim."""
        return [view for view, _repo in self._waiting_listed()]

    def _waiting_listed(self) -> list[tuple[RequestListed, str]]:
        """Each waiting request to list (a follower as its original) with its repository.
        Read through the index of the active requests, each Run's repository from its row
        (a live inbox asks ten times a second: every request of every Run decoded, and each
        Run whole twice per waiting request, took minutes at 10,000 Artifacts), and read
        again only when the state changed since."""
        mark = self.store.change_mark()
        if self._listed is not None and self._listed[0] == mark:
            return self._listed[1]
        repos: dict[RunId, str] = {}
        here = [
            request
            for request in self.store.all_requests(WAITING_HUMAN)
            if self.repo is None or self._repo_of(request, repos) == self.repo
        ]
        seen: set[str] = set()
        chosen: list[tuple[RequestRecord, str]] = []
        for original in self.reviews.originals(here):
            if original.id in seen or original.status != WAITING_HUMAN:
                continue
            seen.add(original.id)
            chosen.append((original, self._repo_of(original, repos)))
        views = RequestViews(self.store).listed([original for original, _repo in chosen])
        listed = [(view, repo) for view, (_original, repo) in zip(views, chosen, strict=True)]
        self._listed = (mark, listed)
        return listed

    def _repo_of(self, request: RequestRecord, known: dict[RunId, str]) -> str:
        if request.run_id not in known:
            head = self.store.run_head(request.run_id)
            if head is None:
                definition: Mapping[str, Any] = request.data.human_definition or {}
                return str(definition.get("repo", ""))
            known[request.run_id] = head.repo
        return known[request.run_id]

    def view(self, request_id: str) -> RequestView:
        """The request view (``request show``) of the request a reviewer acts on: for a
        follower, the original. Raises HumanReviewError for an unknown ID. Read again only
        when the state changed since (a request's page asks ten times a second; a view
        took ~0.17 s at 10,000 Artifacts)."""
        mark = self.store.change_mark()
        kept = self._views.get(request_id)
        if kept is not None and kept[0] == mark:
            return kept[1]
        view = RequestViews(self.store).view(self.reviews.resolve(RequestId(request_id)))
        self._views.pop(request_id, None)
        self._views[request_id] = (mark, view)
        while len(self._views) > VIEWS_KEPT:
            del self._views[next(iter(self._views))]
        return view

    async def commands(self, request_id: str) -> dict[str, dict[str, Any]]:
        """The resolved command lines of the request's command tools (nothing runs)."""
        return await self.reviews.tool_commands(RequestId(request_id))

    # --- actions --------------------------------------------------------------------------

    async def ensure_claim(self, request_id: str) -> bool:
        """Claim the request for this reviewer unless they hold it; True if it was taken now."""
        view = self.view(request_id)
        if claimant(view) == self.reviewer:
            return False
        claim = await self.reviews.claim(RequestId(request_id), self.reviewer)
        if claim.request_id not in self.taken:
            self.taken.append(claim.request_id)
        return True

    async def run_tool(
        self, request_id: str, tool: str, cancellation: Cancellation, on_line: LineSink
    ) -> HumanToolResult:
        await self.ensure_claim(request_id)
        return await self.reviews.run_human_tool(
            RequestId(request_id), self.reviewer, tool, cancellation, on_line
        )

    async def release(self, request_id: str) -> HumanClaim:
        claim = await self.reviews.unclaim(RequestId(request_id), self.reviewer)
        self._forget(claim.request_id)
        return claim

    async def cancel(self, request_id: str, reason: str | None) -> tuple[str, ...]:
        """``request cancel`` as this reviewer; the claim (if this session took it) ends."""
        original = self.reviews.resolve(RequestId(request_id)).id
        ended = await self.reviews.cancel(RequestId(request_id), self.reviewer, reason)
        self._forget(original)
        return ended

    async def submit(
        self, request_id: str, result: dict[str, Any], cancellation: Cancellation
    ) -> Submitted:
        """Claim if needed, submit, publish. A request that settled (a verdict, or an ERROR
        from a recheck; also when publishing failed after the local settle) is no longer a
        claim this session holds."""
        await self.ensure_claim(request_id)
        original = self.reviews.resolve(RequestId(request_id)).id
        try:
            return await self.reviews.submit_and_publish(
                RequestId(request_id),
                self.reviewer,
                result,
                self.remote,
                self.warnings.append,
                cancellation,
            )
        finally:
            if self.store.human_claim(original) is None:  # settled: the claim went with it
                self._forget(original)

    def held(self) -> list[str]:
        """The claims this session took that this reviewer still holds on waiting requests."""
        held: list[str] = []
        for request_id in self.taken:
            claim = self.store.human_claim(RequestId(request_id))
            request = self.store.get_request(RequestId(request_id))
            if claim is None or claim.reviewer != self.reviewer:
                continue
            if request is not None and request.status == WAITING_HUMAN:
                held.append(request_id)
        return held

    async def release_all(self) -> list[tuple[str, str]]:
        """Release every held claim; the ``(request, message)`` of each that failed."""
        failures: list[tuple[str, str]] = []
        for request_id in self.held():
            try:
                await self.release(request_id)
            except HumanReviewError as exc:
                failures.append((request_id, exc.message))
        return failures

    def _forget(self, request_id: str) -> None:
        if request_id in self.taken:
            self.taken.remove(request_id)

    async def aclose(self) -> None:
        if self.remote is not None:
            await self.remote.aclose()
