"""The browser reviewer's routes: the inbox, a request, its viewers, and the monitor.

Every action goes through the terminal reviewer's ``ReviewSession`` (the same lifecycle
calls as ``request claim|unclaim|cancel|submit|tool`` and ``review``, the same settlement,
the same publication to the team store), and the monitor reads through the terminal
monitor's ``MonitorSource``. Only what a browser needs differs: HTML, a form, and the
live parts as server-sent events (``live``).

Unlike the terminal reviewer, nothing claims on the first action: a person claims with
``Claim``, and a tool or a submission without this reviewer's claim is refused (409).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import parse_qsl

import anyio
from anyio.abc import TaskGroup
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from artifactize.domain.reviews.human.errors import HumanPublishError, HumanReviewError
from artifactize.domain.reviews.human.viewing import ScopeViewer, since_last_verdict
from artifactize.domain.tools.cancellation import Cancellation
from artifactize.domain.tools.images import ImageError, detect_image_mime
from artifactize.entrypoints.monitor_tui.source import (
    KEPT_RUNS,
    MonitorReadError,
    MonitorSource,
    RunDocument,
)
from artifactize.entrypoints.review_tui.session import ReviewSession
from artifactize.entrypoints.review_tui.tool_list import recorded_tools
from artifactize.entrypoints.review_tui.waiting import claimant, read_only_reason
from artifactize.entrypoints.web import pages, verdict_form
from artifactize.entrypoints.web.live import ToolRuns, fragment_events
from artifactize.entrypoints.web.security import (
    FORM_MAX_BYTES,
    FORM_TOO_LARGE,
    Guard,
    GuardMiddleware,
)
from artifactize.entrypoints.web.team import TeamInbox, team_view
from artifactize.ports.ids import RequestId, RunId
from artifactize.ports.state import StateError
from artifactize.ports.statuses import RequestStatus

MONITOR_RUNS_MAX = 100  # Runs the monitor lists
STOP_POLL_SECONDS = 0.1
MARKDOWN_SUFFIXES = (".md", ".markdown")
SVG_SUFFIX = ".svg"
SVG_MIME = "image/svg+xml"
STATIC_FILES = {"web.js": "text/javascript", "web.css": "text/css"}
CLAIMED = "You claimed {request}."
RELEASED = "Released your claim on {request}."
CANCELLED = "Cancelled {request}."
SUBMITTED = "Submitted {status} for {eval}."
TOOL_STARTED = "{tool} started."
STOPPED = "Stopping {count} running tool(s)."
NOTHING_RUNS = "No tool of this request is running."
ALREADY_RUNNING = "{tool} is already running."
UNKNOWN_TOOL = "This request has no Human tool {tool}."
CLAIM_FIRST = "Claim the request first: only its claimant runs tools and submits."
NOT_AN_IMAGE = "Only an image (PNG, JPEG, WebP or SVG) is served raw."
NO_SUCH_RUN = "No Run {run}."
NO_PATH = "Give the file as ?path=."
STATE_UNREADABLE = "The state could not be read or written: {reason}"
UNKNOWN_COUNT = "?"
NOT_ANNOUNCED = "The team store lists no waiting request {request} (it settled or its wait ended)."


@dataclass
class WebContext:
    """What the routes act on; built by the composition root (``entrypoints/cli/web.py``)."""

    session: ReviewSession
    viewer: ScopeViewer
    monitor: MonitorSource
    guard: Guard
    runs: ToolRuns
    now: Callable[[], datetime]
    should_stop: Callable[[], bool] = lambda: False  # the server was asked to stop
    stopping: anyio.Event = field(default_factory=anyio.Event)
    tasks: TaskGroup | None = None
    team: TeamInbox | None = None  # the team store's waiting requests (None: no store)

    @property
    def reviewer(self) -> str:
        return self.session.reviewer


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status)


async def _form(request: Request) -> dict[str, str] | None:
    """A urlencoded body of at most FORM_MAX_BYTES (None when over)."""
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > FORM_MAX_BYTES:
            return None
    return dict(parse_qsl(data.decode("utf-8", "replace"), keep_blank_values=True))


_FormHandler = Callable[["Routes", Request, str, dict[str, str]], Awaitable[Response]]


def _with_form(handler: _FormHandler) -> Callable[[Routes, Request], Awaitable[Response]]:
    """A POST on one request: ``handler`` gets its ID and its form (413 when the form is
    over FORM_MAX_BYTES; the handler is not called)."""

    @functools.wraps(handler)
    async def handle(routes: Routes, request: Request) -> Response:
        form = await _form(request)
        if form is None:
            return routes._problem("Refused", FORM_TOO_LARGE, 413)
        return await handler(routes, request, request.path_params["request_id"], form)

    return handle


class Routes:
    def __init__(self, context: WebContext) -> None:
        self.c = context
        # A Run page's last read, its tree's HTML and its header's.
        self._trees: dict[str, tuple[RunDocument, str, str | None]] = {}
        self._team_cache: tuple[int, list[Mapping[str, Any]]] = (-1, [])

    # --- helpers ----------------------------------------------------------------------

    def _waiting_views(self) -> list[Mapping[str, Any]]:
        """This machine's waiting requests, then the team store's that are not also here
        (a request this machine announced is listed once, as this machine's)."""
        session = self.c.session
        local: list[Mapping[str, Any]] = [*session.waiting_views()]
        return local + self._team_views()

    def _team_views(self) -> list[Mapping[str, Any]]:
        """The team store's requests not in local state, worked out once per listing (a
        live inbox renders ten times a second; another machine's request never becomes
        local)."""
        team = self.c.team
        if team is None:
            return []
        if self._team_cache[0] != team.fetches:
            store = self.c.session.store
            views: list[Mapping[str, Any]] = [
                team_view(published)
                for published in team.requests
                if store.get_request(RequestId(published.request_id)) is None
            ]
            self._team_cache = (team.fetches, views)
        return self._team_cache[1]

    def _notice(self) -> str | None:
        return None if self.c.team is None else self.c.team.notice

    def _page(self, title: str, body: str, status: int = 200) -> HTMLResponse:
        try:
            count: int | str = len(self.c.session.waiting()) + len(self._team_views())
        except StateError:
            count = UNKNOWN_COUNT  # the page says why; the title cannot count
        return _html(pages.page(title, count, body, self.c.reviewer), status)

    def _problem(self, title: str, message: str, status: int) -> HTMLResponse:
        return self._page(title, f"<h1>{pages.esc(title)}</h1>{pages.alert([message])}", status)

    # --- inbox ------------------------------------------------------------------------

    async def inbox(self, request: Request) -> Response:
        filters = dict(request.query_params)
        if self.c.team is not None:
            await self.c.team.current()  # bounded: TEAM_ANSWER_SECONDS
        return self._page("Inbox", pages.inbox(filters, self._inbox_table(filters)))

    async def inbox_events(self, request: Request) -> Response:
        filters = dict(request.query_params)
        return self._events(lambda: self._inbox_table(filters))

    def _inbox_table(self, filters: Mapping[str, str]) -> str:
        views = self._waiting_views()
        return pages.inbox_table(views, self.c.reviewer, self.c.now(), filters, self._notice())

    async def team_request(self, request: Request) -> Response:
        """An announced request of another machine: read-only, with where to act."""
        request_id = request.path_params["request_id"]
        team = self.c.team
        found = None if team is None else team.find(request_id)
        if found is None:
            return self._problem("Unknown request", NOT_ANNOUNCED.format(request=request_id), 404)
        return self._page(found.eval_id, pages.team_request(team_view(found), self.c.now()))

    # --- a request --------------------------------------------------------------------

    async def request_page(
        self,
        request: Request,
        messages: list[str] | None = None,
        status: int = 200,
        choices: dict[str, verdict_form.VerdictChoice] | None = None,
        chosen: str | None = None,
    ) -> Response:
        request_id = request.path_params["request_id"]
        session = self.c.session
        try:
            view = session.view(request_id)
        except HumanReviewError as exc:
            return self._problem("Unknown request", exc.message, 404)
        notes = list(messages or [])
        commands: dict[str, dict[str, Any]] = {}
        files_html = ""
        waiting = view.get("status") == RequestStatus.WAITING_HUMAN
        record = session.reviews.resolve(RequestId(request_id))
        try:
            if waiting:
                commands = await session.commands(request_id)
            listing = await self.c.viewer.listing(record)
            files_html = pages.files_list(str(view.get("id")), listing.files, listing.truncated)
        except HumanReviewError as exc:
            notes.append(exc.message)
            if waiting:
                notes.append("Cancel request ends it without a verdict.")
        if choices is None:
            choices = verdict_form.choices(view)
        body = pages.request_page(
            view,
            self.c.reviewer,
            self.c.now(),
            recorded_tools(view),
            commands,
            self.c.runs.live(str(view.get("id"))).current(),
            choices,
            chosen,
            notes,
            files_html,
            pages.changed_list(str(view.get("id")), since_last_verdict(session.store, record)),
            self.c.guard.csrf,
            self._run_status(view),
        )
        return self._page(str(view.get("evalId")), body, status)

    def _run_status(self, view: Mapping[str, Any]) -> str | None:
        head = self.c.session.store.run_head(RunId(str(view.get("runId"))))
        return None if head is None else head.status

    async def state_events(self, request: Request) -> Response:
        request_id = request.path_params["request_id"]

        def render() -> str:
            try:
                view = self.c.session.view(request_id)
            except (HumanReviewError, StateError) as exc:
                return pages.alert([str(exc)])
            return pages.status_section(view, self.c.reviewer, self.c.now(), self._run_status(view))

        return self._events(render)

    async def log_events(self, request: Request) -> Response:
        try:
            request_id = self.c.session.reviews.resolve(
                RequestId(request.path_params["request_id"])
            ).id
        except HumanReviewError as exc:
            return self._problem("Unknown request", exc.message, 404)
        live = self.c.runs.live(request_id)
        return self._events(lambda: pages.tool_log(live.current()))

    def _events(self, render: Callable[[], str]) -> Response:
        return StreamingResponse(
            fragment_events(render, self.c.stopping),
            media_type="text/event-stream",
            headers={"x-accel-buffering": "no"},
        )

    async def _lifecycle(
        self,
        request: Request,
        request_id: str,
        form: dict[str, str],
        act: Callable[[str, dict[str, str]], Awaitable[object]],
    ) -> Response:
        """One lifecycle action, then the request page again (its message on a refusal)."""
        try:
            await act(request_id, form)
        except HumanReviewError as exc:
            return await self.request_page(request, [exc.message], 409)
        return RedirectResponse(pages.request_url(request_id), 303)

    @_with_form
    async def claim(self, request: Request, request_id: str, form: dict[str, str]) -> Response:
        return await self._lifecycle(
            request, request_id, form, lambda ref, _: self.c.session.ensure_claim(ref)
        )

    @_with_form
    async def unclaim(self, request: Request, request_id: str, form: dict[str, str]) -> Response:
        return await self._lifecycle(
            request, request_id, form, lambda ref, _: self.c.session.release(ref)
        )

    @_with_form
    async def cancel(self, request: Request, request_id: str, form: dict[str, str]) -> Response:
        def cancel(ref: str, form: dict[str, str]) -> Awaitable[object]:
            reason = form.get("reason", "").strip() or None
            return self.c.session.cancel(ref, reason)

        return await self._lifecycle(request, request_id, form, cancel)

    @_with_form
    async def tool(self, request: Request, request_id: str, form: dict[str, str]) -> Response:
        scripted = "x-csrf-token" in request.headers  # the page's script: no reload
        try:
            view = self.c.session.view(request_id)
        except HumanReviewError as exc:
            return self._refuse(request, scripted, exc.message, 404)
        name = form.get("tool", "")
        tool = next((t for t in recorded_tools(view) if t.name == name), None)
        if tool is None:
            return await self._refused_tool(request, scripted, UNKNOWN_TOOL.format(tool=name), 404)
        reason = read_only_reason(view, self.c.reviewer)
        if reason is None and claimant(view) != self.c.reviewer:
            reason = CLAIM_FIRST
        original = str(view.get("id"))
        live = self.c.runs.live(original)
        if reason is None and tool.name in live.running:
            reason = ALREADY_RUNNING.format(tool=tool.name)
        if reason is not None:
            return await self._refused_tool(request, scripted, reason, 409)
        tasks = self.c.tasks
        assert tasks is not None, "the server's task group starts with the app"
        live.running.add(tool.name)  # until the task itself takes over
        tasks.start_soon(self.c.runs.run, original, tool)
        if scripted:
            return Response(TOOL_STARTED.format(tool=tool.name), 202, media_type="text/plain")
        return RedirectResponse(pages.request_url(request_id), 303)

    @_with_form
    async def stop(self, request: Request, request_id: str, form: dict[str, str]) -> Response:
        """Stop this request's running tools (a tool that never ends); claims stay."""
        try:
            original = self.c.session.reviews.resolve(RequestId(request_id)).id
        except HumanReviewError as exc:
            return self._refuse(request, True, exc.message, 404)
        count = self.c.runs.stop(original)
        text = STOPPED.format(count=count) if count else NOTHING_RUNS
        if "x-csrf-token" in request.headers:
            return Response(text, 200, media_type="text/plain")
        return RedirectResponse(pages.request_url(request_id), 303)

    def _refuse(self, request: Request, scripted: bool, message: str, status: int) -> Response:
        if scripted:
            return Response(message, status, media_type="text/plain")
        return self._problem("Refused", message, status)

    async def _refused_tool(
        self, request: Request, scripted: bool, message: str, status: int
    ) -> Response:
        if scripted:
            return Response(message, status, media_type="text/plain")
        return await self.request_page(request, [message], status)

    @_with_form
    async def submit(self, request: Request, request_id: str, form: dict[str, str]) -> Response:
        try:
            view = self.c.session.view(request_id)
        except HumanReviewError as exc:
            return self._problem("Unknown request", exc.message, 404)
        choices = verdict_form.choices(view)
        chosen = form.get("verdict")
        if chosen not in choices:
            return await self.request_page(
                request, [verdict_form.CHOOSE_VERDICT], 422, choices, None
            )
        for choice in choices.values():
            verdict_form.fill(choice, form)
        choice = choices[chosen]
        result = verdict_form.result(choice)
        if result is None:
            return await self.request_page(request, [], 422, choices, chosen)
        if claimant(view) != self.c.reviewer:
            reason = read_only_reason(view, self.c.reviewer) or CLAIM_FIRST
            return await self.request_page(request, [reason], 409, choices, chosen)
        try:
            submitted = await self.c.session.submit(request_id, result, Cancellation())
        except HumanPublishError as exc:
            return await self.request_page(request, [exc.message], 502)
        except HumanReviewError as exc:
            if exc.settled:
                return await self.request_page(request, [exc.message], 409)
            general = verdict_form.place_errors(choice, exc.message)
            return await self.request_page(request, general, 422, choices, chosen)
        done = SUBMITTED.format(status=submitted.request.status, eval=submitted.request.eval_id)
        return await self.request_page(request, [done, *self.c.session.warnings], 200)

    # --- viewers ----------------------------------------------------------------------

    async def _file(self, request: Request) -> tuple[Any, str, bytes] | Response:
        request_id = request.path_params["request_id"]
        path = request.query_params.get("path")
        if not path:
            return self._problem("Refused", NO_PATH, 400)
        try:
            record = self.c.session.reviews.resolve(RequestId(request_id))
            data = await self.c.viewer.read(record, path)
        except HumanReviewError as exc:
            return self._problem("Cannot view the file", exc.message, 404)
        return record, path, data

    async def view(self, request: Request) -> Response:
        found = await self._file(request)
        if isinstance(found, Response):
            return found
        record, path, data = found
        suffix = PurePosixPath(path).suffix.lower()
        as_text = request.query_params.get("as") == "text"
        if not as_text and (suffix == SVG_SUFFIX or _image_mime(data) is not None):
            kind, body = "image", pages.image_viewer(record.id, path)
        else:
            text = data.decode("utf-8", "replace")
            if not as_text and suffix in MARKDOWN_SUFFIXES:
                kind, body = "markdown", f'<div class="markdown">{pages.markdown(text)}</div>'
            else:
                kind, body = "text", pages.text_viewer(text)
        page = pages.viewer_page(record.id, record.eval_id, path, body, kind)
        return self._page(path, page)

    async def raw(self, request: Request) -> Response:
        """An image's bytes for an ``<img>``; anything else is refused, so no HTML of the
        repository is ever served from this origin. The security middleware gives this
        route a sandboxing policy."""
        found = await self._file(request)
        if isinstance(found, Response):
            return found
        _, path, data = found
        mime = _image_mime(data)
        if mime is None and PurePosixPath(path).suffix.lower() == SVG_SUFFIX:
            mime = SVG_MIME
        if mime is None:
            return self._problem("Refused", NOT_AN_IMAGE, 415)
        return Response(data, media_type=mime)

    # --- monitor ----------------------------------------------------------------------

    async def monitor(self, request: Request) -> Response:
        body = f'<h1>Runs</h1><div data-live="/monitor/events">{self._runs()}</div>'
        return self._page("Monitor", body)

    def _runs(self) -> str:
        try:
            rows = self.c.monitor.runs(MONITOR_RUNS_MAX)
        except MonitorReadError as exc:
            return pages.alert([STATE_UNREADABLE.format(reason=exc)])
        return pages.runs_table(rows, self.c.now())

    async def monitor_events(self, request: Request) -> Response:
        return self._events(self._runs)

    def _run(self, run_id: str) -> str | None:
        try:
            document = self.c.monitor.run(run_id)
        except MonitorReadError as exc:
            return pages.alert([STATE_UNREADABLE.format(reason=exc)])
        if document is None:
            return None
        kept = self._trees.get(run_id)
        if kept is None or kept[0] is not document:  # a new read: its tree once
            kept = (document, pages.run_tree(document.run, document.requests), None)
        _same, tree, header = kept
        if header is None or not document.run.get("completedAt"):  # a header may move with time
            header = pages.run_header_html(document.run, document.requests, self.c.now())
        # Each Run page a live view polls, ten times a second, as the source keeps its reads.
        self._trees.pop(run_id, None)
        self._trees[run_id] = (document, tree, header)
        while len(self._trees) > KEPT_RUNS:
            del self._trees[next(iter(self._trees))]
        return pages.run_page_body(header, tree)

    async def run_page(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        tree = self._run(run_id)
        if tree is None:
            return self._problem("Unknown Run", NO_SUCH_RUN.format(run=run_id), 404)
        live = f"/monitor/run/{pages.esc(run_id)}/events"
        body = f'<h1>Run {pages.esc(run_id)}</h1><div data-live="{live}">{tree}</div>'
        return self._page(f"Run {run_id}", body)

    async def run_events(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        return self._events(lambda: self._run(run_id) or "")

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC_FILES:
            return Response("Not found", 404, media_type="text/plain")
        data = resources.files("artifactize.entrypoints.web").joinpath("static", name)
        return Response(data.read_bytes(), media_type=STATIC_FILES[name])


def _image_mime(data: bytes) -> str | None:
    try:
        return detect_image_mime(data)
    except ImageError:
        return None


def build_app(context: WebContext) -> Starlette:
    routes = Routes(context)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            context.tasks = tasks
            tasks.start_soon(_watch_stop, context)
            if context.team is not None:
                tasks.start_soon(context.team.follow, context.stopping)
            try:
                yield
            finally:
                context.stopping.set()
                context.runs.cancel_all()
                tasks.cancel_scope.cancel()

    async def state_failed(request: Request, exc: Exception) -> Response:
        """A state read or write that failed (a locked or broken database): said on a page,
        never a traceback; nothing was half-settled (each state call is one transaction)."""
        return routes._problem("The state failed", STATE_UNREADABLE.format(reason=exc), 503)

    request_id = "/request/{request_id}"
    return Starlette(
        routes=[
            Route("/", routes.inbox),
            Route("/inbox/events", routes.inbox_events),
            Route("/team/{request_id}", routes.team_request),
            Route(request_id, routes.request_page),
            Route(f"{request_id}/state", routes.state_events),
            Route(f"{request_id}/log", routes.log_events),
            Route(f"{request_id}/view", routes.view),
            Route(f"{request_id}/raw", routes.raw),
            Route(f"{request_id}/claim", routes.claim, methods=["POST"]),
            Route(f"{request_id}/unclaim", routes.unclaim, methods=["POST"]),
            Route(f"{request_id}/cancel", routes.cancel, methods=["POST"]),
            Route(f"{request_id}/tool", routes.tool, methods=["POST"]),
            Route(f"{request_id}/submit", routes.submit, methods=["POST"]),
            Route(f"{request_id}/stop", routes.stop, methods=["POST"]),
            Route("/monitor", routes.monitor),
            Route("/monitor/events", routes.monitor_events),
            Route("/monitor/run/{run_id}", routes.run_page),
            Route("/monitor/run/{run_id}/events", routes.run_events),
            Route("/static/{name}", routes.static),
        ],
        middleware=[Middleware(GuardMiddleware, guard=context.guard)],
        exception_handlers={StateError: state_failed},
        lifespan=lifespan,
    )


async def _watch_stop(context: WebContext) -> None:
    """End the live streams as soon as the server is asked to stop (before it waits for
    its open connections to finish). Meanwhile file every queued Tool log line, so a
    launched program that keeps printing while no page watches holds no more than its
    log's bound."""
    while not context.should_stop():
        await anyio.sleep(STOP_POLL_SECONDS)
        for live in list(context.runs.logs.values()):
            live.current()
    context.stopping.set()
    context.runs.cancel_all()
