"""Streamable HTTP for ``artifactize mcp --http``: loopback only, behind a bearer token.

The server binds the loopback address it was given (port 0: any free port), generates a
token (``secrets.token_urlsafe``, TOKEN_BYTES of randomness), prints the URL and the token
once, and answers every request without ``Authorization: Bearer <token>`` with 401 before
the MCP SDK sees it (compared in constant time). Host and Origin headers must name
loopback (the SDK's DNS-rebinding check); bodies over the SDK's limit get 413.

An MCP session (``Mcp-Session-Id``) is one client connection: its tool sessions end when
the client deletes it, after the SDK's idle timeout (SESSION_IDLE_SECONDS), or when the
server stops.
"""

from __future__ import annotations

import secrets
import socket
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from artifactize.domain.use_cases.serving import ServingRun
from artifactize.entrypoints.mcp.server import McpServer
from artifactize.entrypoints.store_server import StoreServer

TOKEN_BYTES = 32
MCP_PATH = "/mcp"
SESSION_IDLE_SECONDS = 30 * 60
UNAUTHORIZED_BODY = b'{"error":"A valid bearer token is required (Authorization: Bearer TOKEN)."}'
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]

Announce = Callable[[str, str, str], None]


class BearerGate:
    """ASGI middleware: an HTTP request passes only with the exact bearer token."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode("ascii")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = b""
            for name, value in scope.get("headers", []):
                if name == b"authorization":
                    given = value
                    break
            if not secrets.compare_digest(given, self._expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="artifactize mcp"'),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": UNAUTHORIZED_BODY})
                return
        await self.app(scope, receive, send)


async def serve_http(run: ServingRun, sock: socket.socket, announce: Announce) -> None:
    """Serve on the bound loopback socket ``sock`` until cancelled (SIGINT/SIGTERM); then every connection's tool sessions stop
    and the MCP session ends, shielded."""
    server = McpServer(run)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    manager = StreamableHTTPSessionManager(
        app=server.server,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=LOOPBACK_HOSTS,
            allowed_origins=LOOPBACK_ORIGINS,
        ),
        session_idle_timeout=SESSION_IDLE_SECONDS,
    )
    app = Starlette(
        routes=[Route(MCP_PATH, endpoint=StreamableHTTPASGIApp(manager))],
        middleware=[Middleware(BearerGate, token=token)],
    )
    http = StoreServer(app, sock)

    def ready(started: StoreServer) -> None:
        announce(f"{started.url}{MCP_PATH}", token, run.session_id)

    try:
        async with anyio.create_task_group() as cleanup:
            server.spawn = lambda work: cleanup.start_soon(work)
            async with manager.run():
                await http.serve(ready)
    finally:
        with anyio.CancelScope(shield=True):
            await run.close()
