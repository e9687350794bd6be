"""What keeps ``artifactize web`` to the one person who started it: token, Host, Origin,
CSRF and a strict Content-Security-Policy, as one ASGI middleware in front of every route.

- The server prints ``http://127.0.0.1:PORT/?token=TOKEN`` once (as Jupyter does). The first
  visit with the token gets it as an HttpOnly, SameSite=Strict cookie and is redirected to
  the same page without it, so the token leaves the address bar and the history. Without
  the token (query or cookie), every request is 401 with a page saying where the URL is.
- Host must name the loopback address the server listens on (DNS rebinding), and an
  Origin, when the browser sends one, must be the server's own origin (403 otherwise).
- Every state change is a POST carrying the session's CSRF token (a hidden ``csrf`` field
  or an ``X-CSRF-Token`` header); a POST without it is 403 even from the right Origin.
  The CSRF token is an HMAC of the session token, so it is per session and never stored.
- Every response carries a Content-Security-Policy without ``'unsafe-inline'``,
  ``'unsafe-eval'`` or wildcards (script and style from the server only, ``object-src
  'none'``), ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: same-origin`` (with
  ``no-referrer`` a browser sends ``Origin: null`` on a form POST) and
  ``X-Frame-Options: DENY``. A raw image (SVG included) is served with a sandboxing policy
  of its own, so even opened directly it runs no script.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

TOKEN_BYTES = 32
TOKEN_PARAMETER = "token"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
COOKIE_PREFIX = "artifactize_web_"  # one cookie a port: cookies are not port-scoped
SAFE_METHODS = ("GET", "HEAD")
LOOPBACK_NAMES = ("127.0.0.1", "localhost")

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'; "
    "object-src 'none'"
)
RAW_CSP = "default-src 'none'; style-src 'self'; img-src 'self'; object-src 'none'; sandbox"
COMMON_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
)

NO_TOKEN_TITLE = "The address needs its token"
NO_TOKEN = (
    "This page needs the address `artifactize web` printed when it started, "
    "http://127.0.0.1:PORT/?token=…; open that address (it signs this browser in), "
    "or start `artifactize web` again."
)
BAD_HOST = "Host {host!r} is not this server's loopback address."
BAD_ORIGIN = "Origin {origin!r} is not this server's origin; the request was refused."
NO_CSRF = "The form lacks the CSRF token of this session; reload the page and try again."
NOT_ALLOWED = "Only GET, HEAD and POST are served."

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


@dataclass
class Guard:
    """The session's secrets and where it listens (``port`` is set once bound)."""

    token: str
    port: int = 0

    @property
    def cookie_name(self) -> str:
        return f"{COOKIE_PREFIX}{self.port}"

    @property
    def csrf(self) -> str:
        return hmac.new(self.token.encode(), b"csrf", hashlib.sha256).hexdigest()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?{urlencode({TOKEN_PARAMETER: self.token})}"

    def origins(self) -> tuple[str, ...]:
        return tuple(f"http://{name}:{self.port}" for name in LOOPBACK_NAMES)

    def hosts(self) -> tuple[str, ...]:
        return tuple(f"{name}:{self.port}" for name in LOOPBACK_NAMES)

    def matches(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def csrf_matches(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers") or []}


def _cookie(headers: dict[str, str], name: str) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # a malformed Cookie header is no cookie
        return None
    morsel = jar.get(name)
    return None if morsel is None else morsel.value


def _page(title: str, text: str) -> bytes:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title></head><body><main>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p></main></body></html>"
    ).encode()


async def _respond(
    send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"content-security-policy", PAGE_CSP.encode()),
        *COMMON_HEADERS,
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class GuardMiddleware:
    """Refuses what the Guard refuses; adds the security headers to every response."""

    def __init__(self, app: App, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        guard = self.guard
        headers = _headers(scope)
        host = headers.get("host", "")
        if host not in guard.hosts():
            await _respond(send, 403, _page("Refused", BAD_HOST.format(host=host)))
            return
        origin = headers.get("origin")
        if origin is not None and origin not in guard.origins():
            await _respond(send, 403, _page("Refused", BAD_ORIGIN.format(origin=origin)))
            return
        method = scope.get("method", "GET")
        if method not in (*SAFE_METHODS, "POST"):
            await _respond(send, 405, _page("Refused", NOT_ALLOWED))
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if guard.matches(query.get(TOKEN_PARAMETER)) and method in SAFE_METHODS:
            await self._sign_in(scope, query, send)
            return
        if not guard.matches(_cookie(headers, guard.cookie_name)):
            await _respond(send, 401, _page(NO_TOKEN_TITLE, NO_TOKEN))
            return
        if method == "POST" and not guard.csrf_matches(headers.get(CSRF_HEADER)):
            replay = await self._form_csrf(scope, receive, send)
            if replay is None:
                return
            receive = replay
        await self.app(scope, receive, self._secured(scope, send))

    async def _sign_in(self, scope: Scope, query: dict[str, str], send: Send) -> None:
        """The token's first visit: set the cookie, then the same page without the token."""
        rest = {k: v for k, v in query.items() if k != TOKEN_PARAMETER}
        target = scope.get("path", "/") + (f"?{urlencode(rest)}" if rest else "")
        cookie = f"{self.guard.cookie_name}={self.guard.token}; Path=/; HttpOnly; SameSite=Strict"
        await _respond(
            send,
            303,
            b"",
            [(b"location", target.encode()), (b"set-cookie", cookie.encode())],
        )

    async def _form_csrf(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Read the body (bounded by the app's own limit afterwards), check its ``csrf``
        field, and hand the app a receive that replays it; None once refused."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            body = message.get("body", b"")
            size += len(body)
            if size > FORM_MAX_BYTES:
                await _respond(send, 413, _page("Refused", FORM_TOO_LARGE))
                return None
            chunks.append(body)
            if not message.get("more_body"):
                break
        data = b"".join(chunks)
        given = _form_field(headers=_headers(scope), body=data, name=CSRF_FIELD)
        if not self.guard.csrf_matches(given):
            await _respond(send, 403, _page("Refused", NO_CSRF))
            return None
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": data, "more_body": False}

        return replay

    def _secured(self, scope: Scope, send: Send) -> Send:
        raw = scope.get("path", "").endswith("/raw")

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if k.lower() != b"content-security-policy"
                ]
                policy = RAW_CSP if raw else PAGE_CSP
                headers.append((b"content-security-policy", policy.encode()))
                headers.extend(COMMON_HEADERS)
                message = {**message, "headers": headers}
            await send(message)

        return secured


FORM_MAX_BYTES = 1024 * 1024  # a POSTed form body; a verdict itself is bounded at 256000
FORM_TOO_LARGE = f"The form is over {FORM_MAX_BYTES} bytes."


def _form_field(headers: dict[str, str], body: bytes, name: str) -> str | None:
    """The first ``name`` field of a urlencoded body (multipart is not accepted)."""
    kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return None
    for key, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
        if key == name:
            return value
    return None
