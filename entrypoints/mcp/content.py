"""A ``ToolResult`` as an MCP ``CallToolResult``: text, json and image blocks.

- a text block becomes text content;
- a json block becomes text content with its compact JSON, and, when it is the result's
  only block, also ``structuredContent`` (an object always; any other JSON value only on a
  protocol version that allows it, 2026-07-28 and later);
- an image block becomes image content (base64 data and MIME type);
- an error result (authored or system) sets ``isError`` with its one text block.
"""

from __future__ import annotations

from typing import Any

import mcp.types as mcp_types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from artifactize.domain.tools.results import ToolResult


def _block(result: ToolResult, index: int) -> mcp_types.TextContent | mcp_types.ImageContent:
    block = result.content[index]
    kind = block.get("type")
    if kind == "image":
        return mcp_types.ImageContent(
            type="image", data=str(block["data"]), mime_type=str(block["mimeType"])
        )
    if kind == "json":  # the compact text the built-in made, when it kept it
        return mcp_types.TextContent(type="text", text=result.data_json(index))
    return mcp_types.TextContent(type="text", text=str(block.get("text", "")))


def call_tool_result(result: ToolResult, protocol_version: str) -> mcp_types.CallToolResult:
    content: list[Any] = [_block(result, index) for index in range(len(result.content))]
    structured: Any = None
    if not result.is_error and len(result.content) == 1 and result.content[0]["type"] == "json":
        data = result.content[0].get("data")
        if isinstance(data, dict) or protocol_version in MODERN_PROTOCOL_VERSIONS:
            structured = data
    return mcp_types.CallToolResult(
        content=content, structured_content=structured, is_error=result.is_error
    )


def error_result(message: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=message)], is_error=True
    )
