"""A ``ToolResult`` as an MCP ``CallToolResult``: text, json and image blocks.

- a text block becomes text content;
- a json block becomes text content with its compact JSON, and, when it is the result's
  only block, also ``structuredContent`` (an object always; any other JSON value only on a
  protocol version that allows it, 2026-07-28 and later);
- an image block becomes image content (base64 data and MIME type);
- an error result (authored or system) sets ``isError`` with its one text block.

The server answers ``tools/call`` with the wire form (``call_tool_wire``: the result's
camelCase fields as plain JSON values), not a ``CallToolResult`` model: the SDK validates
and shapes every result against the protocol version's own model anyway (its per-version
sieve), so building and dumping a model first walked the whole answer twice more, a
quarter of the SDK's work on a 200-entry ``list`` (bench/README.md, "mcp"). Both forms come
from ``call_tool_wire``: ``call_tool_result`` is its model.
"""

from __future__ import annotations

from typing import Any

import mcp.types as mcp_types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from artifactize.domain.tools.results import ToolResult

# what a ``CallToolResult`` model dumps without being told: its ``resultType`` (required on
# the wire from 2026-07-28 on; the SDK drops it for older versions)
_DEFAULTS: dict[str, Any] = {
    "resultType": mcp_types.CallToolResult.model_fields["result_type"].default,
}


def _block(result: ToolResult, index: int) -> dict[str, str]:
    block = result.content[index]
    kind = block.get("type")
    if kind == "image":
        return {"type": "image", "data": str(block["data"]), "mimeType": str(block["mimeType"])}
    if kind == "json":  # the compact text the built-in made, when it kept it
        return {"type": "text", "text": result.data_json(index)}
    return {"type": "text", "text": str(block.get("text", ""))}


def call_tool_wire(result: ToolResult, protocol_version: str) -> dict[str, Any]:
    """The ``CallToolResult`` of ``result`` as the JSON object a ``tools/call`` answers."""
    wire: dict[str, Any] = {"content": [_block(result, i) for i in range(len(result.content))]}
    if not result.is_error and len(result.content) == 1 and result.content[0]["type"] == "json":
        data = result.content[0].get("data")
        if data is not None and (
            isinstance(data, dict) or protocol_version in MODERN_PROTOCOL_VERSIONS
        ):
            wire["structuredContent"] = data
    wire["isError"] = result.is_error
    wire.update(_DEFAULTS)
    return wire


def call_tool_result(result: ToolResult, protocol_version: str) -> mcp_types.CallToolResult:
    """``call_tool_wire`` as the SDK's model (what a client reads back)."""
    return mcp_types.CallToolResult.model_validate(call_tool_wire(result, protocol_version))


def error_wire(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True, **_DEFAULTS}
