"""The MCP server: the official SDK's low-level ``Server`` over a ``ServingRun``.

``tools/list`` lists the registry as it is (published names, interpolated descriptions,
input schemas); ``tools/call`` goes through ``ServingRun.call`` (the registry's ``call``,
audited and budgeted) and maps the result (``entrypoints.mcp.content``). The SDK checks no
arguments against the schemas: the registry does. Nothing a client sends makes a handler
raise: every failure is an ``isError`` result, so a bad request never ends the server.

A client connection is what the transport says it is: the stdio pipe (the whole server
run), or one MCP session of streamable HTTP (``Mcp-Session-Id``), whose end (DELETE, the
SDK's idle timeout, a crash) unwinds its ``exit_stack``; that hands the connection's tool
sessions to a cleanup task of the server, so a slow ``stop`` never races the SDK's bound on
the exit stack. A request without a session (the 2026-07-28 per-request protocol) uses the
server's own connection, which ends with the server.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, cast

import anyio
import mcp.types as mcp_types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

from artifactize.domain.use_cases.serving import ConnectionKey, ServingRun
from artifactize.entrypoints.mcp.content import call_tool_wire, error_wire
from artifactize.entrypoints.mcp.stdio import private_stdio

SERVER_NAME = "artifactize"
INTERNAL_FAILURE = "The tool call failed inside artifactize: {detail}"
UNKNOWN_PROMPT = "Unknown prompt: {name}"

_log = logging.getLogger(__name__)

Spawn = Callable[[Callable[[], Any]], object]


def _version() -> str:
    from artifactize.entrypoints.version import VERSION

    return VERSION


def _connection_of(ctx: ServerRequestContext[Any]) -> Any:
    """The SDK's per-client ``Connection`` of a request (2.3 keeps it on the session)."""
    return getattr(ctx.session, "_connection", None)


class McpServer:
    """One ``ServingRun`` behind the SDK's ``Server``; ``spawn`` runs connection cleanup in
    a task group of the server's (set by the transport before serving)."""

    def __init__(self, run: ServingRun) -> None:
        self.run = run
        self.spawn: Spawn | None = None
        self._tracked: set[int] = set()
        prompt = run.served.prompt
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=_version(),
            instructions=(
                "The declared, read-only Agent tools of an artifactize Artifact; every call "
                "is audited in the artifactize state."
            ),
            on_list_tools=self._list_tools,
            on_list_prompts=self._list_prompts if prompt is not None else None,
            on_get_prompt=self._get_prompt if prompt is not None else None,
        )
        # tools/call answers the wire form (``call_tool_wire``): the SDK's public handler
        # registration takes a plain result, and validates and shapes it as it would a model
        self.server.add_request_handler(
            "tools/call", mcp_types.CallToolRequestParams, self._call_tool
        )

    # tools -------------------------------------------------------------------------------
    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(
            tools=[
                mcp_types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=dict(tool.input_schema),
                )
                for tool in self.run.served.tools
            ]
        )

    def _connection_key(self, ctx: ServerRequestContext[Any]) -> ConnectionKey:
        connection = _connection_of(ctx)
        key = getattr(connection, "session_id", None)
        if not isinstance(key, str) or connection is None:
            return None
        if id(connection) not in self._tracked and self.spawn is not None:
            self._tracked.add(id(connection))
            spawn = self.spawn
            run = self.run
            tracked = self._tracked
            identity = id(connection)

            async def ended() -> None:
                tracked.discard(identity)
                spawn(lambda: run.end_connection(key))

            connection.exit_stack.push_async_callback(ended)
        return key

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams
    ) -> dict[str, Any]:
        try:
            key = self._connection_key(ctx)
            result = await self.run.call(params.name, params.arguments or {}, key)
            return call_tool_wire(result, ctx.protocol_version)
        except Exception as exc:  # keep every failure in-band: the server must not die
            _log.exception("tools/call %s failed", params.name)
            return error_wire(INTERNAL_FAILURE.format(detail=type(exc).__name__))

    # the review as a prompt --------------------------------------------------------------
    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListPromptsResult:
        prompt = self.run.served.prompt
        assert prompt is not None
        return mcp_types.ListPromptsResult(
            prompts=[
                mcp_types.Prompt(
                    name=prompt.name, title=prompt.title, description=prompt.description
                )
            ]
        )

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: mcp_types.GetPromptRequestParams
    ) -> mcp_types.GetPromptResult:
        from mcp.shared.exceptions import MCPError

        prompt = self.run.served.prompt
        assert prompt is not None
        if params.name != prompt.name:
            raise MCPError(
                code=mcp_types.INVALID_PARAMS, message=UNKNOWN_PROMPT.format(name=params.name)
            )
        return mcp_types.GetPromptResult(
            description=prompt.description,
            messages=[
                mcp_types.PromptMessage(
                    role="user", content=mcp_types.TextContent(type="text", text=prompt.text)
                )
            ],
        )


async def serve_stdio(run: ServingRun) -> None:
    """Serve until the client closes stdin (EOF) or the caller is cancelled (a signal);
    then stop every tool session and end the MCP session, shielded."""
    server = McpServer(run)
    try:
        async with anyio.create_task_group() as cleanup:
            server.spawn = lambda work: cleanup.start_soon(work)
            with private_stdio() as (wire_in, wire_out):
                # the completion of a call's audit entry is written once its answer is
                # (one commit fewer on the answer's path; the entry itself precedes the call)
                run.defer_completions = True
                wire_out.after_write = run.flush_completions
                stdin = cast("anyio.AsyncFile[str]", wire_in)
                stdout = cast("anyio.AsyncFile[str]", wire_out)
                async with stdio_server(stdin, stdout) as (read, write):
                    options = server.server.create_initialization_options()
                    await server.server.run(read, write, options)
    finally:
        with anyio.CancelScope(shield=True):
            await run.close()
