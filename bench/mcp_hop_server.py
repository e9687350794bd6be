"""The hop server of ``bench/mcp.py``: the MCP transport and protocol, and nothing else.

It serves the benchmarked tools over stdio exactly as ``artifactize mcp`` does — the
official SDK's low-level ``Server``, our ``private_stdio`` wire (``entrypoints.mcp.stdio``),
the SDK's ``stdio_server`` on top, the same switch interval — and answers every
``tools/call`` of a tool with a fixed ``CallToolResult`` given at start: the very result
the real server returned for the benchmarked call (same bytes on the wire). No registry, no audit, no content mapping. A
``tools/call`` round trip through it is the *hop*: what any tool served by this SDK over
these pipes costs, whatever the tool does.

    python bench/mcp_hop_server.py SPEC.json   # {"tools": [Tool], "results": {name: CallToolResult}}
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, cast

# Run as a script, this file's folder comes first on sys.path and ``bench/mcp.py`` would
# shadow the ``mcp`` SDK: drop the folder, and put the repository root there instead.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import anyio
import mcp.types as mcp_types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

from artifactize.entrypoints.cli.mcp import SERVER_SWITCH_INTERVAL_SECONDS
from artifactize.entrypoints.mcp.stdio import private_stdio


async def serve(spec_path: str) -> None:
    data = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    tools = [mcp_types.Tool.model_validate(tool) for tool in data["tools"]]
    results = {
        name: mcp_types.CallToolResult.model_validate(result)
        for name, result in data["results"].items()
    }

    async def list_tools(
        ctx: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        return results[params.name]

    server: Server[Any] = Server("hop", on_list_tools=list_tools, on_call_tool=call_tool)
    with private_stdio() as (wire_in, wire_out):
        stdin = cast("anyio.AsyncFile[str]", wire_in)
        stdout = cast("anyio.AsyncFile[str]", wire_out)
        async with stdio_server(stdin, stdout) as (read, write):
            await server.run(read, write, server.create_initialization_options())


def main() -> None:
    sys.setswitchinterval(SERVER_SWITCH_INTERVAL_SECONDS)
    anyio.run(serve, sys.argv[1])


if __name__ == "__main__":
    main()
