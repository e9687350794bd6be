"""A small fake of the team review store API on 127.0.0.1 (stdlib ``ThreadingHTTPServer``).

Routes, as the real store serves them:

- ``GET /v1/whoami`` → ``{"principal", "scopes"}``
- ``POST /v1/lookup`` ``{"keys": [...]}`` (at most 1000) → ``{"entries": [latest record…]}``
- ``PUT /v1/entries/{key}`` → 201 ``{"created": true}`` / 200 ``{"created": false}``
- ``PUT /v1/waiting/{requestId}`` (an announcement) → ``{"expiresAt", "waitingSeconds"}``;
  ``DELETE /v1/waiting/{requestId}`` → ``{"withdrawn"}``;
  ``GET /v1/waiting?repository=&after=&limit=`` → ``{"requests", "next", "waitingSeconds"}``
  (byte order of request ID, pages of at most 500; announcements never expire here).
  ``tests/integration/test_waiting_requests_contract.py`` checks these against the real
  store on SQLite and PostgreSQL.

Bearer tokens map to ``(principal, scopes)``; a missing or unknown token is 401, a missing
scope 403 (errors are ``{"error": "..."}``). The fake sets ``publisher`` and
``publishedAt`` on stored records. For failure tests, ``script`` queues canned answers
(status + body or raw bytes, a delay, or a dropped connection) that are served before the
routes. Every request is recorded.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import pytest

LOOKUP_KEYS_MAX = 1000
PUBLISHED_AT = "2026-03-04T05:06:07.123456789Z"
EXPIRES_AT = "2999-01-01T00:00:00.000000000Z"
WAITING_SECONDS = 90
WAITING_LIMIT_MAX = 500
WAITING_LIMIT_DEFAULT = 100
SHUTDOWN_POLL_SECONDS = 0.01  # how soon a test's fake stops


@dataclass(frozen=True)
class Canned:
    status: int = 200
    body: Any = None
    raw: bytes | None = None
    delay: float = 0.0
    action: Literal["respond", "disconnect"] = "respond"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: Mapping[str, str]
    body: Any


class FakeReviewStore:
    def __init__(self, tokens: Mapping[str, tuple[str, tuple[str, ...]]] | None = None) -> None:
        self.tokens = dict(tokens or {"tok-a": ("alice", ("read", "publish", "human"))})
        self.entries: dict[str, list[dict[str, Any]]] = {}
        self.waiting: dict[str, dict[str, Any]] = {}  # request ID -> announcement as stored
        self.canned: list[Canned] = []
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False  # a delayed answer must not hold up the test
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(SHUTDOWN_POLL_SECONDS,), daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def script(self, *answers: Canned) -> None:
        with self._lock:
            self.canned.extend(answers)

    def __enter__(self) -> FakeReviewStore:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- the routes -------------------------------------------------------------------------

    def route(self, method: str, path: str, token: str | None, body: Any) -> tuple[int, Any]:
        who = self.tokens.get(token or "")
        if who is None:
            return 401, {"error": "Missing or unknown token."}
        name, scopes = who
        if method == "GET" and path == "/v1/whoami":
            return 200, {"principal": name, "scopes": list(scopes)}
        if method == "POST" and path == "/v1/lookup":
            if "read" not in scopes:
                return 403, {"error": "This token lacks the read scope."}
            keys = body.get("keys") if isinstance(body, dict) else None
            if not isinstance(keys, list) or len(keys) > LOOKUP_KEYS_MAX:
                return 400, {"error": f"keys must be a list of at most {LOOKUP_KEYS_MAX}."}
            found = [self.entries[k][-1] for k in keys if k in self.entries]
            return 200, {"entries": found}
        if method == "PUT" and path.startswith("/v1/entries/"):
            if "publish" not in scopes:
                return 403, {"error": "This token lacks the publish scope."}
            if body.get("profile", {}).get("kind") == "human" and "human" not in scopes:
                return 403, {"error": "Human sign-offs require the human scope."}
            key = path.rsplit("/", 1)[1]
            records = self.entries.setdefault(key, [])
            if any(r["executionId"] == body["executionId"] for r in records):
                return 200, {"created": False}
            records.append({**body, "publisher": name, "publishedAt": PUBLISHED_AT})
            return 201, {"created": True}
        if path.split("?", 1)[0] == "/v1/waiting" or path.startswith("/v1/waiting/"):
            return self._waiting(method, path, name, scopes, body)
        return 404, {"error": "Not found."}

    def _waiting(
        self, method: str, path: str, name: str, scopes: tuple[str, ...], body: Any
    ) -> tuple[int, Any]:
        route, _, query = path.partition("?")
        if method == "GET" and route == "/v1/waiting":
            if "read" not in scopes:
                return 403, {"error": "This token lacks the read scope."}
            params = dict(urllib.parse.parse_qsl(query))
            raw = params.get("limit", str(WAITING_LIMIT_DEFAULT))
            if not raw.isdigit() or not 1 <= int(raw) <= WAITING_LIMIT_MAX:
                return 400, {
                    "error": f"limit must be a whole number from 1 to {WAITING_LIMIT_MAX}."
                }
            limit, after = int(raw), params.get("after")
            found = [
                self.waiting[request_id]
                for request_id in sorted(self.waiting, key=lambda text: text.encode())
                if (after is None or request_id.encode() > after.encode())
                and params.get("repository") in (None, self.waiting[request_id]["repository"])
            ]
            page = found[:limit]
            more = len(found) > limit
            cursor = page[-1]["requestId"] if more else None
            return 200, {"requests": page, "next": cursor, "waitingSeconds": WAITING_SECONDS}
        if "publish" not in scopes:
            return 403, {"error": "This token lacks the publish scope."}
        request_id = route.removeprefix("/v1/waiting/")
        if method == "PUT":
            if not isinstance(body, dict) or body.get("requestId") != request_id:
                return 400, {"error": "requestId must equal the request ID in the path."}
            self.waiting[request_id] = {**body, "publisher": name, "expiresAt": EXPIRES_AT}
            return 200, {"expiresAt": EXPIRES_AT, "waitingSeconds": WAITING_SECONDS}
        if method == "DELETE":
            return 200, {"withdrawn": self.waiting.pop(request_id, None) is not None}
        return 405, {"error": "Method not allowed."}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                headers = {k.lower(): v for k, v in self.headers.items()}
                with fake._lock:
                    fake.seen.append(Seen(self.command, self.path, headers, body))
                    canned = fake.canned.pop(0) if fake.canned else None
                if canned is None:
                    auth = headers.get("authorization", "")
                    token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
                    with fake._lock:
                        status, answer = fake.route(self.command, self.path, token, body)
                    self._send(status, json.dumps(answer).encode(), {})
                    return
                time.sleep(canned.delay)
                if canned.action == "disconnect":
                    self.close_connection = True
                    return
                payload = canned.raw if canned.raw is not None else json.dumps(canned.body).encode()
                self._send(canned.status, payload, canned.headers)

            def _send(self, status: int, payload: bytes, headers: Mapping[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_PUT = do_DELETE = _serve

        return Handler


@pytest.fixture
def fake_store() -> Iterator[FakeReviewStore]:
    with FakeReviewStore() as fake:
        yield fake
