"""The team review store HTTP API (Starlette) and the uvicorn server that runs it.

Routes (every answer is JSON; every error is ``{"error": "..."}``):

``GET /v1/health``                 no token → ``{"status": "ok"}`` within 1.5 s (503 when
                                   the database does not answer by then; ``HealthProbe``)
``GET /v1/whoami``                 any live token → ``{"principal", "scopes"}``
``POST /v1/lookup``                ``read`` → ``{"entries": [record, …]}``
``PUT /v1/entries/{key}``          ``publish`` (+ ``human`` for Human sign-offs) → 201/200;
                                   with ``artifactize-release-lease: HOLDER`` it then
                                   releases that holder's lease (``released``)
``POST /v1/entries``               the same for up to 500 records at once, all or none →
                                   ``{"created": [bool, …]}``
``PUT /v1/entries/{hash}/{fp}``    the 0.4 route → 410
``POST /v1/leases/{key}``          ``publish``, ``{"holder"}`` → the lease (``granted`` or not;
                                   granted to a ``read`` token: with ``latest``, the key's
                                   latest record or null)
``POST /v1/leases/{key}/release``  ``publish``, ``{"holder"}`` → ``{"released"}``
``GET /v1/leases``                 ``read`` → ``{"leases": [...], "leaseSeconds"}``
``PUT /v1/waiting/{requestId}``    ``publish``, an announcement → ``{"expiresAt", "waitingSeconds"}``
``DELETE /v1/waiting/{requestId}`` ``publish`` → ``{"withdrawn"}``
``GET /v1/waiting?repository=&after=&limit=``  ``read`` → ``{"requests": [...], "next"}``

Every request is logged as one JSON line (method, path, status, duration, principal name;
never a token, never a query string) through ``log``.

Only the ``Authorization: Bearer`` header authenticates: a token anywhere else (a query
string, a cookie) is ignored. Tokens are never logged: uvicorn's access log (which would
print query strings) is off. Authentication comes before the body is read, so an anonymous
client cannot make the server buffer 16 MiB. Storage calls run in worker threads.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Route

from artifactize.domain.reviews.remote.leases import LEASE_SECONDS_DEFAULT, parse_lease_request
from artifactize.domain.reviews.remote.server_admission import (
    HUMAN_KIND,
    REQUEST_BODY_MAX_BYTES,
    Refusal,
    StoreRequestError,
    check_publish_batch,
    check_record,
    is_reuse_key,
    parse_lookup_keys,
)
from artifactize.domain.reviews.remote.waiting_requests import (
    ANNOUNCEMENT_MAX_BYTES,
    WAITING_SECONDS,
    is_request_id,
    parse_announcement,
    parse_list_query,
)
from artifactize.entrypoints.lease_json import SERVER_ORDER, lease_json
from artifactize.entrypoints.listen_address import ListenAddress
from artifactize.kernel.bounded_json import JsonRefused, read_json
from artifactize.ports.review_store import RELEASE_LEASE_HEADER, Principal
from artifactize.ports.store_server_storage import (
    SCOPE_HUMAN,
    SCOPE_PUBLISH,
    SCOPE_READ,
    ReviewStoreDb,
    ReviewStoreDbError,
    StoreEntry,
    WaitingEntry,
)

GRACEFUL_STOP_SECONDS = 5  # open requests may finish; then they are cancelled
READY_POLL_SECONDS = 0.01
STATUS_FOR_REFUSAL = {Refusal.INVALID: 400, Refusal.GONE: 410, Refusal.TOO_LARGE: 413}
LEGACY_ROUTE_GONE = (
    "This route belongs to artifactize 0.4, which this store no longer serves. Upgrade artifactize."
)
HUMAN_SCOPE_REQUIRED = "Human sign-offs require the human scope."
BEARER_CHALLENGE = {"WWW-Authenticate": "Bearer"}


class ApiError(HTTPException):
    """An error answer; rendered as ``{"error": detail}``."""


def _error_response(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


async def _http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _error_response(exc.status_code, str(exc.detail), dict(exc.headers or {}))


async def _store_error(_request: Request, _exc: Exception) -> Response:
    # A 5xx: clients fail open (continue without the store) rather than stop.
    return _error_response(503, "The review store is unavailable; try again later.")


async def _server_error(_request: Request, _exc: Exception) -> Response:
    return _error_response(500, "Internal server error.")


def _refused(error: StoreRequestError) -> ApiError:
    return ApiError(STATUS_FOR_REFUSAL[error.kind], error.message)


async def _read_body(request: Request) -> bytes:
    """The request body, refused (413) past REQUEST_BODY_MAX_BYTES without buffering more."""
    too_large = ApiError(413, f"The request body exceeds {REQUEST_BODY_MAX_BYTES} bytes.")
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ApiError(400, "Content-Length must be a decimal number.")
        if int(declared) > REQUEST_BODY_MAX_BYTES:
            raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > REQUEST_BODY_MAX_BYTES:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _parse_json(body: bytes) -> Any:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, "The request body must be UTF-8 JSON.") from None
    try:
        return read_json(text)
    except JsonRefused as exc:
        raise ApiError(400, f"The request body is not valid JSON: {exc.reason}") from None


def _readable(stored: str) -> bool:
    try:
        read_json(stored)
    except JsonRefused:
        return False
    return True


def _path_value(request: Request, name: str, valid: Callable[[str], bool], refusal: str) -> str:
    """The path parameter ``name``, or 400 with ``refusal`` when ``valid`` refuses it."""
    value = str(request.path_params[name])
    if not valid(value):
        raise ApiError(400, refusal)
    return value


HEALTH_ANSWER_SECONDS = 1.5  # /v1/health answers within this (503 when the database did not)
HEALTH_POLL_SECONDS = 0.02
DATABASE_SILENT = "The review store's database did not answer within {seconds} s; try again later."


class HealthProbe:
    """At most one database ping in flight, in a daemon thread of its own.

    A frozen database (a stopped PostgreSQL, a disk that hangs) blocks a ping for as long
    as it stays frozen: a worker thread per request would pile up and keep the server from
    stopping. So ``/v1/health`` waits up to HEALTH_ANSWER_SECONDS for the one ping in flight
    (starting one when none is), and answers 503 when it has not ended; as soon as the
    database answers again the ping ends and the next health call starts a fresh one."""

    def __init__(self, ping: Callable[[], None]) -> None:
        self._ping = ping
        self._lock = threading.Lock()
        self._inflight: concurrent.futures.Future[None] | None = None

    def _start(self) -> concurrent.futures.Future[None]:
        with self._lock:
            if self._inflight is None or self._inflight.done():
                future: concurrent.futures.Future[None] = concurrent.futures.Future()

                def run() -> None:
                    try:
                        self._ping()
                    except BaseException as error:  # handed to the waiting request
                        future.set_exception(error)
                    else:
                        future.set_result(None)

                threading.Thread(target=run, name="store-health", daemon=True).start()
                self._inflight = future
            return self._inflight

    async def answered(self) -> bool:
        """Whether a ping ended within HEALTH_ANSWER_SECONDS (its error is raised)."""
        future = self._start()
        with anyio.move_on_after(HEALTH_ANSWER_SECONDS):
            while not future.done():
                await anyio.sleep(HEALTH_POLL_SECONDS)
        if not future.done():
            return False
        future.result()  # a database error: the store's 503
        return True


@dataclass(frozen=True)
class _Api:
    store: ReviewStoreDb
    now: Callable[[], str]
    lease_seconds: int
    probe: HealthProbe
    waiting_seconds: int = WAITING_SECONDS

    async def _principal(self, request: Request) -> Principal:
        header = request.headers.get("authorization")
        if header is None:
            raise ApiError(401, "Send a token: Authorization: Bearer <token>.", BEARER_CHALLENGE)
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise ApiError(
                401, "The Authorization header must be: Bearer <token>.", BEARER_CHALLENGE
            )
        principal = await anyio.to_thread.run_sync(self.store.authenticate, token)
        if principal is None:
            raise ApiError(401, "Unknown or revoked token.", BEARER_CHALLENGE)
        request.state.principal = principal.name  # for the request log line
        return principal

    async def _with_scope(self, request: Request, scope: str) -> Principal:
        principal = await self._principal(request)
        if scope not in principal.scopes:
            raise ApiError(403, f"This token lacks the {scope} scope.")
        return principal

    async def whoami(self, request: Request) -> Response:
        principal = await self._principal(request)
        return JSONResponse({"principal": principal.name, "scopes": list(principal.scopes)})

    async def lookup(self, request: Request) -> Response:
        await self._with_scope(request, SCOPE_READ)
        body = _parse_json(await _read_body(request))
        try:
            keys = parse_lookup_keys(body)
        except StoreRequestError as error:
            raise _refused(error) from None
        found = await anyio.to_thread.run_sync(self.store.lookup, keys)
        # Stored data is JSON this server wrote and is spliced in as it is, except a record
        # stored before PUT read bodies with the bounded reader: one with a non-finite number
        # (written out as ``Infinity``) or a duplicate key would poison every client's answer.
        content = '{"entries":[' + ",".join(filter(_readable, found)) + "]}"
        return Response(content.encode("utf-8"), media_type="application/json")

    async def put_entry(self, request: Request) -> Response:
        principal = await self._with_scope(request, SCOPE_PUBLISH)
        key = request.path_params["key"]
        if not is_reuse_key(key):
            raise ApiError(400, "The key in the path is not a reuse key (64 lowercase hex).")
        body = await _read_body(request)
        record = _parse_json(body)
        try:
            checked = check_record(key, record, len(body))
        except StoreRequestError as error:
            raise _refused(error) from None
        if checked.profile_kind == HUMAN_KIND and SCOPE_HUMAN not in principal.scopes:
            raise ApiError(403, HUMAN_SCOPE_REQUIRED)
        releasing = request.headers.get(RELEASE_LEASE_HEADER)
        if releasing is not None:
            try:
                releasing = parse_lease_request({"holder": releasing})
            except StoreRequestError as error:
                raise ApiError(400, f"{RELEASE_LEASE_HEADER}: {error.message}") from None
        stored = {**record, "publisher": principal.name, "publishedAt": self.now()}
        entry = StoreEntry(
            key=checked.key,
            execution_id=checked.execution_id,
            publisher=principal.name,
            completed_at=checked.completed_at,
            data=json.dumps(stored, ensure_ascii=False, separators=(",", ":")),
        )
        created = await anyio.to_thread.run_sync(self.store.put, entry)
        answer: dict[str, bool] = {"created": created}
        if releasing is not None:  # the holder is done with the key: its verdict is in
            answer["released"] = await anyio.to_thread.run_sync(
                self.store.release_lease, checked.key, releasing
            )
        return JSONResponse(answer, status_code=201 if created else 200)

    async def put_entries(self, request: Request) -> Response:
        """A batch of records, each checked as ``put_entry`` checks its one; stored all or
        none, in one transaction (``ReviewStoreDb.put_many``)."""
        principal = await self._with_scope(request, SCOPE_PUBLISH)
        try:
            batch = check_publish_batch(_parse_json(await _read_body(request)))
        except StoreRequestError as error:
            raise _refused(error) from None
        human = SCOPE_HUMAN in principal.scopes
        for index, item in enumerate(batch):
            if item.checked.profile_kind == HUMAN_KIND and not human:
                raise ApiError(403, f"entries[{index}]: {HUMAN_SCOPE_REQUIRED}")
        published = self.now()
        stored = [
            StoreEntry(
                key=item.checked.key,
                execution_id=item.checked.execution_id,
                publisher=principal.name,
                completed_at=item.checked.completed_at,
                data=json.dumps(
                    {**item.record, "publisher": principal.name, "publishedAt": published},
                    ensure_ascii=False,
                    separators=(",", ":"),
                ),
            )
            for item in batch
        ]
        created = await anyio.to_thread.run_sync(self.store.put_many, stored)
        return JSONResponse({"created": created})

    async def legacy_put(self, _request: Request) -> Response:
        raise ApiError(410, LEGACY_ROUTE_GONE)

    async def health(self, _request: Request) -> Response:
        if not await self.probe.answered():
            return _error_response(503, DATABASE_SILENT.format(seconds=HEALTH_ANSWER_SECONDS))
        return JSONResponse({"status": "ok"})

    def _lease_key(self, request: Request) -> str:
        refusal = "The key in the path is not a reuse key (64 lowercase hex)."
        return _path_value(request, "key", is_reuse_key, refusal)

    async def _lease_holder(self, request: Request) -> str:
        try:
            return parse_lease_request(_parse_json(await _read_body(request)))
        except StoreRequestError as error:
            raise _refused(error) from None

    async def acquire_lease(self, request: Request) -> Response:
        principal = await self._with_scope(request, SCOPE_PUBLISH)
        key = self._lease_key(request)
        holder = await self._lease_holder(request)
        answer = await anyio.to_thread.run_sync(
            self.store.acquire_lease, key, holder, principal.name, self.lease_seconds
        )
        body: dict[str, Any] = {
            "granted": answer.granted,
            **lease_json(answer.lease, SERVER_ORDER),
            "leaseSeconds": self.lease_seconds,
        }
        if answer.granted and SCOPE_READ in principal.scopes:
            # The holder's lookup of the key, answered with the grant: looked up after it,
            # so a verdict published before the previous holder released is in it.
            found = await anyio.to_thread.run_sync(self.store.lookup, [key])
            body["latest"] = json.loads(found[0]) if found else None
        return JSONResponse(body)

    async def release_lease(self, request: Request) -> Response:
        await self._with_scope(request, SCOPE_PUBLISH)
        key = self._lease_key(request)
        holder = await self._lease_holder(request)
        released = await anyio.to_thread.run_sync(self.store.release_lease, key, holder)
        return JSONResponse({"released": released})

    async def list_leases(self, request: Request) -> Response:
        await self._with_scope(request, SCOPE_READ)
        found = await anyio.to_thread.run_sync(self.store.list_leases)
        return JSONResponse(
            {
                "leases": [lease_json(lease, SERVER_ORDER) for lease in found],
                "leaseSeconds": self.lease_seconds,
            }
        )

    # --- waiting Human requests -----------------------------------------------------------

    def _request_id(self, request: Request) -> str:
        refusal = "The request ID in the path must be 1-200 of [A-Za-z0-9._:-]."
        return _path_value(request, "request_id", is_request_id, refusal)

    async def announce_waiting(self, request: Request) -> Response:
        principal = await self._with_scope(request, SCOPE_PUBLISH)
        request_id = self._request_id(request)
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > ANNOUNCEMENT_MAX_BYTES:
            raise ApiError(413, f"A waiting request is at most {ANNOUNCEMENT_MAX_BYTES} bytes.")
        body = await _read_body(request)
        try:
            checked = parse_announcement(request_id, _parse_json(body), len(body))
        except StoreRequestError as error:
            raise _refused(error) from None
        entry = WaitingEntry(
            request_id=request_id,
            repository=checked.repository,
            publisher=principal.name,
            created_at=checked.created_at,
            data=json.dumps(checked.document, ensure_ascii=False, separators=(",", ":")),
        )
        expires_at = await anyio.to_thread.run_sync(
            self.store.announce_waiting, entry, self.waiting_seconds
        )
        return JSONResponse({"expiresAt": expires_at, "waitingSeconds": self.waiting_seconds})

    async def withdraw_waiting(self, request: Request) -> Response:
        await self._with_scope(request, SCOPE_PUBLISH)
        request_id = self._request_id(request)
        withdrawn = await anyio.to_thread.run_sync(self.store.withdraw_waiting, request_id)
        return JSONResponse({"withdrawn": withdrawn})

    async def list_waiting(self, request: Request) -> Response:
        await self._with_scope(request, SCOPE_READ)
        try:
            query = parse_list_query(dict(request.query_params))
        except StoreRequestError as error:
            raise _refused(error) from None
        # One more than asked says whether another page follows.
        found = await anyio.to_thread.run_sync(
            self.store.list_waiting, query.repository, query.after, query.limit + 1
        )
        page = [
            {**read_json(entry.data), "publisher": entry.publisher, "expiresAt": entry.expires_at}
            for entry in found[: query.limit]
            if _readable(entry.data)
        ]
        more = len(found) > query.limit and found[: query.limit]
        return JSONResponse(
            {
                "requests": page,
                "next": found[query.limit - 1].request_id if more else None,
                "waitingSeconds": self.waiting_seconds,
            }
        )


class RequestLog:
    """ASGI middleware: one JSON line per HTTP request, written through ``log``.

    It records the method, the route's path template (``/v1/entries/{key}``: never the raw
    path or the query string, where a careless client might put a token; ``-`` for a path
    no route serves), the reuse key when the path holds one, the status, the duration and
    the principal's name once authenticated."""

    def __init__(
        self,
        app: Any,
        log: Callable[[str], None],
        clock: Callable[[], float],
        now: Callable[[], str],
    ) -> None:
        self.app = app
        self.log = log
        self.clock = clock
        self.now = now
        self.routes: list[Route] = list(getattr(app, "routes", []))

    def _route(self, scope: Any) -> str:
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return route.path
        return "-"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = self.clock()
        status = 500  # what the client gets when the app fails before answering

        async def record_status(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, record_status)
        finally:
            state = scope.get("state") or {}
            key = (scope.get("path_params") or {}).get("key")
            line = {
                "time": self.now(),
                "method": scope["method"],
                "path": self._route(scope),
                "key": key if is_reuse_key(key) else None,
                "status": status,
                "durationMs": round((self.clock() - started) * 1000, 3),
                "principal": state.get("principal"),
            }
            self.log(json.dumps(line, ensure_ascii=False, separators=(",", ":")))


def create_app(
    store: ReviewStoreDb,
    *,
    now: Callable[[], str],
    lease_seconds: int = LEASE_SECONDS_DEFAULT,
    log: Callable[[str], None] | None = None,
    waiting_seconds: int = WAITING_SECONDS,
) -> Any:
    """The ASGI app over ``store``; ``now`` stamps ``publishedAt`` (the server's clock);
    ``lease_seconds`` is how long a lease lives unrenewed; ``log`` receives one JSON line per
    request (None: no request log); ``waiting_seconds`` is how long an announced waiting
    request lives unrenewed."""
    api = _Api(store, now, lease_seconds, HealthProbe(store.ping), waiting_seconds)
    routes = [
        Route("/v1/health", api.health, methods=["GET"]),
        Route("/v1/leases", api.list_leases, methods=["GET"]),
        Route("/v1/leases/{key}", api.acquire_lease, methods=["POST"]),
        Route("/v1/leases/{key}/release", api.release_lease, methods=["POST"]),
        Route("/v1/whoami", api.whoami, methods=["GET"]),
        Route("/v1/lookup", api.lookup, methods=["POST"]),
        Route("/v1/entries", api.put_entries, methods=["POST"]),
        Route("/v1/entries/{key}", api.put_entry, methods=["PUT"]),
        Route("/v1/entries/{hash}/{fp}", api.legacy_put, methods=["PUT"]),
        Route("/v1/waiting", api.list_waiting, methods=["GET"]),
        Route("/v1/waiting/{request_id}", api.announce_waiting, methods=["PUT"]),
        Route("/v1/waiting/{request_id}", api.withdraw_waiting, methods=["DELETE"]),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        HTTPException: _http_error,
        ReviewStoreDbError: _store_error,
        Exception: _server_error,
    }
    app = Starlette(routes=routes, exception_handlers=handlers)
    if log is None:
        return app
    return RequestLog(app, log, time.monotonic, now)


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handlers: it would re-raise SIGINT/SIGTERM after a
    graceful stop (turning Ctrl-C into a traceback); ``serve_until_signal`` stops it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class StoreServer:
    """One uvicorn server on an already bound socket. ``stop()`` may be called from any
    thread; ``serve`` then finishes open requests (up to GRACEFUL_STOP_SECONDS)."""

    def __init__(self, app: Any, sock: socket.socket) -> None:
        self._sock = sock
        host, port = sock.getsockname()[:2]
        self.address = ListenAddress(host, port)
        config = uvicorn.Config(
            app,
            lifespan="off",
            access_log=False,
            log_config=None,
            log_level="warning",
            ws="none",
            http="h11",
            timeout_graceful_shutdown=GRACEFUL_STOP_SECONDS,
        )
        self._server = _QuietServer(config)

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def stop(self) -> None:
        self._server.should_exit = True

    async def serve(self, on_ready: Callable[[StoreServer], None] | None = None) -> None:
        """Serve until ``stop()``; ``on_ready`` runs once the server accepts requests."""
        async with anyio.create_task_group() as group:

            async def announce() -> None:
                while not self._server.started:
                    await anyio.sleep(READY_POLL_SECONDS)
                if on_ready is not None:
                    on_ready(self)

            group.start_soon(announce)
            try:
                await self._server.serve(sockets=[self._sock])
            finally:
                self._sock.close()
                group.cancel_scope.cancel()


async def serve_until_signal(
    server: StoreServer, on_ready: Callable[[StoreServer], None] | None = None
) -> None:
    """Serve until SIGINT or SIGTERM, then stop gracefully (main thread only)."""
    from artifactize.entrypoints.signals import watch_interrupts

    async with anyio.create_task_group() as group:
        group.start_soon(watch_interrupts, server.stop)  # Ctrl-C/Ctrl-Break on Windows
        await server.serve(on_ready)
        group.cancel_scope.cancel()
