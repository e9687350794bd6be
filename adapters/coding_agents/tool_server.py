"""The eval's tools served to a coding agent: MCP over streamable HTTP, in this process.

The agent is a separate program; its tool calls must still run in this process, through the
registry the review holds (pinned paths, lazy tool sessions, budgets, the audit). So each
agent run gets a server of its own: the official MCP SDK's low-level ``Server`` in stateless
JSON mode, behind uvicorn on an ephemeral port of 127.0.0.1, answering only requests that
carry its bearer token (TOKEN_BYTES of randomness, compared in constant time) and whose
Host and Origin name loopback (the SDK's DNS-rebinding check). The token reaches the agent
in a 0600 file, never on its command line. The server lives exactly as long as the run.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp.types as mcp_types
import uvicorn
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Route

from artifactize.ports.coding_agents import ToolAnswer
from artifactize.ports.model import ToolSpec

SERVER_NAME = "artifactize"
TOKEN_BYTES = 32
MCP_PATH = "/mcp"
READY_POLL_SECONDS = 0.01
STOP_SECONDS = 2
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*"]
TOOL_FAILED = "The tool call failed inside artifactize: {detail}"

ToolCall = Callable[[str, Mapping[str, Any]], Awaitable[ToolAnswer]]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServedTools:
    url: str
    token: str


class _Gate:
    """ASGI middleware: only the exact bearer token passes; anything else gets 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode("ascii")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers", [])).get(b"authorization", b"")
            if not secrets.compare_digest(given, self.expected):
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)


class _QuietServer(uvicorn.Server):
    """uvicorn without signal handlers of its own: the review's cancellation stops it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _content(block: Mapping[str, Any]) -> mcp_types.TextContent | mcp_types.ImageContent:
    kind = block.get("type")
    if kind == "image":
        return mcp_types.ImageContent(
            type="image", data=str(block["data"]), mime_type=str(block["mimeType"])
        )
    if kind == "json":
        import json

        text = json.dumps(block.get("data"), ensure_ascii=False, separators=(",", ":"))
        return mcp_types.TextContent(type="text", text=text)
    return mcp_types.TextContent(type="text", text=str(block.get("text", "")))


def _server(tools: tuple[ToolSpec, ...], call: ToolCall) -> Server[Any]:
    listed = [
        mcp_types.Tool(name=t.name, description=t.description, input_schema=dict(t.input_schema))
        for t in tools
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        try:
            answer = await call(params.name, dict(params.arguments or {}))
        except Exception as exc:  # in-band: the agent gets an error, the server stays up
            _log.exception("tools/call %s failed", params.name)
            text = TOOL_FAILED.format(detail=type(exc).__name__)
            return mcp_types.CallToolResult(
                content=[mcp_types.TextContent(type="text", text=text)], is_error=True
            )
        return mcp_types.CallToolResult(
            content=[_content(block) for block in answer.content], is_error=answer.is_error
        )

    return Server(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)


@contextlib.asynccontextmanager
async def served_tools(tools: tuple[ToolSpec, ...], call: ToolCall) -> AsyncIterator[ServedTools]:
    """``tools`` at ``http://127.0.0.1:PORT/mcp`` until the block ends."""
    manager = StreamableHTTPSessionManager(
        app=_server(tools, call),
        json_response=True,
        stateless=True,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=LOOPBACK_HOSTS,
            allowed_origins=LOOPBACK_ORIGINS,
        ),
    )
    token = secrets.token_urlsafe(TOKEN_BYTES)
    app = Starlette(routes=[Route(MCP_PATH, endpoint=StreamableHTTPASGIApp(manager))])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            _Gate(app, token),
            lifespan="off",
            access_log=False,
            log_config=None,
            log_level="warning",
            ws="none",
            http="h11",
            timeout_graceful_shutdown=STOP_SECONDS,
        )
        server = _QuietServer(config)
        stopped = anyio.Event()

        async def serve() -> None:
            try:
                await server.serve([sock])
            finally:
                stopped.set()

        async with manager.run(), anyio.create_task_group() as group:
            group.start_soon(serve)
            while not server.started:
                await anyio.sleep(READY_POLL_SECONDS)
            try:
                yield ServedTools(f"http://127.0.0.1:{port}{MCP_PATH}", token)
            finally:
                # uvicorn's own shutdown first: it stops watching the socket before it is
                # closed below. Cancelled instead, the loop would go on watching a closed
                # descriptor, and the next one given its number (a process's pidfd) would
                # never wake its waiter.
                server.should_exit = True
                with anyio.move_on_after(STOP_SECONDS + 1, shield=True):
                    await stopped.wait()
                group.cancel_scope.cancel()
    finally:
        sock.close()
