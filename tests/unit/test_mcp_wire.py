"""The served answer's shortcuts give the very bytes of the long way round.

- ``tools/call`` answers the wire form (``call_tool_wire``), not a ``CallToolResult``
  model: after the SDK's per-version sieve (``serialize_server_result``, which every answer
  goes through) it is the dump of the model the server built before, for every block kind,
  on both protocol eras;
- ``list`` encodes its page once and assembles the result's compact JSON from it: the kept
  text is ``compact_json`` of the result's data, whatever the names, mounts and pages.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp.types as mcp_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_types.methods import serialize_server_result
from mcp_types.version import (
    LATEST_HANDSHAKE_VERSION,
    LATEST_MODERN_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)

from artifactize.adapters.ry_regex import RyRegexEngine
from artifactize.domain.text import compact_json, merged_json_objects
from artifactize.domain.tools.registry import AgentToolRegistry, ToolPorts
from artifactize.domain.tools.results import ToolResult, bounded_json_result
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.entrypoints.mcp.content import call_tool_result, call_tool_wire, error_wire
from tests.fakes.filesystem import MemoryFilesystem, Special, Symlink
from tests.fakes.processes import FakeProcessRunner
from tests.fakes.threads import THREADS

VERSIONS = [LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION]


def model_mapping(result: ToolResult, protocol_version: str) -> mcp_types.CallToolResult:
    """The mapping the server answered with before: pydantic content models."""
    content: list[Any] = []
    for index, block in enumerate(result.content):
        if block["type"] == "image":
            content.append(
                mcp_types.ImageContent(
                    type="image", data=str(block["data"]), mime_type=str(block["mimeType"])
                )
            )
        elif block["type"] == "json":
            content.append(mcp_types.TextContent(type="text", text=result.data_json(index)))
        else:
            content.append(mcp_types.TextContent(type="text", text=str(block.get("text", ""))))
    structured: Any = None
    if not result.is_error and len(result.content) == 1 and result.content[0]["type"] == "json":
        data = result.content[0].get("data")
        if isinstance(data, dict) or protocol_version in MODERN_PROTOCOL_VERSIONS:
            structured = data
    return mcp_types.CallToolResult(
        content=content, structured_content=structured, is_error=result.is_error
    )


def on_the_wire(answer: Any, protocol_version: str) -> dict[str, Any]:
    """What the SDK sends for a handler's answer (model or mapping)."""
    if isinstance(answer, mcp_types.CallToolResult):
        answer = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
    return serialize_server_result("tools/call", protocol_version, answer)


RESULTS = [
    ToolResult.text("plain words"),
    ToolResult.json({"answer": 42, "nested": {"gone": None, "list": [1, None, "界"]}}),
    ToolResult.json([1, 2, 3]),
    ToolResult.json(None),
    ToolResult.json("just a string"),
    bounded_json_result({"path": "a", "nextOffset": None, "entries": []}),
    ToolResult(({"type": "image", "data": "aGk=", "mimeType": "image/png"},)),
    ToolResult(
        (
            {"type": "text", "text": "first"},
            {"type": "json", "data": {"a": [1]}},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        )
    ),
    ToolResult.error("Tool call refused."),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("result", RESULTS, ids=lambda r: str(r.content[0]["type"]))
def test_the_wire_form_sends_what_the_model_sent(result: ToolResult, version: str) -> None:
    wire = call_tool_wire(result, version)
    assert on_the_wire(wire, version) == on_the_wire(model_mapping(result, version), version)
    assert call_tool_result(result, version) == model_mapping(result, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_an_internal_failure_is_an_error_on_the_wire(version: str) -> None:
    expected = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="broke")], is_error=True
    )
    assert on_the_wire(error_wire("broke"), version) == on_the_wire(expected, version)


objects = st.dictionaries(
    st.text(max_size=8), st.one_of(st.none(), st.integers(), st.text(max_size=8)), max_size=4
)


@settings(max_examples=200, deadline=None)
@given(first=objects, second=objects, third=objects)
def test_merged_objects_are_the_compact_json_of_the_merged_dict(
    first: dict[str, Any], second: dict[str, Any], third: dict[str, Any]
) -> None:
    second = {k: v for k, v in second.items() if k not in first}
    third = {k: v for k, v in third.items() if k not in first and k not in second}
    merged = merged_json_objects(compact_json(first), compact_json(second), compact_json(third))
    assert merged == compact_json({**first, **second, **third})


LISTED = b"""name = "docs"
mounts = { impl = "lib" }
[views.agent_tools]
list = { builtin = "list" }
[evals.review]
title = "Review"
profile = { kind = "agent", backend = "openai", model = "m1" }
payload.instruction = "Review {docs} and {impl}."
"""
LIB = b'name = "lib"\n'
ONE_FILE = b"""name = "single"
[views.agent_tools]
list = { builtin = "list" }
"""


def listing_registry() -> AgentToolRegistry:
    many = {f"entry-{n:03d}.txt": b"x" for n in range(230)}
    tree: dict[str, Any] = {
        "docs": {
            "index.artf": LISTED,
            'quote"back\\slash\ttab.md': b"q",
            "été-界-😀.md": b"u",
            "folder": {"inner.txt": b"i"},
            "link": Symlink("folder"),
            "fifo": Special(),
            "many": many,
            "single.md": b"s",
            "single.md.artf": ONE_FILE,
        },
        "lib": {"index.artf": LIB, "code.py": b"pass\n"},
    }
    filesystem = MemoryFilesystem({"/repo": tree})
    ports = ToolPorts(
        filesystem, RyRegexEngine(), FakeProcessRunner(), {"PATH": "/usr/bin"}, threads=THREADS
    )
    workspace = ConfigService(filesystem).load("/repo")
    return AgentToolRegistry.for_eval(workspace, "docs/review", ports)


@pytest.mark.parametrize(
    "args",
    [
        {"path": ""},
        {"path": "folder"},
        {"path": "impl"},
        {"path": "many"},
        {"path": "many", "offset": 150, "limit": 50},
        {"path": "many", "offset": 229},
        {"path": "many", "offset": 500},
    ],
)
def test_a_list_result_keeps_the_compact_json_of_its_data(args: dict[str, Any]) -> None:
    registry = listing_registry()
    result = anyio.run(registry.call, "list_docs", args)
    assert not result.is_error, result.content
    (block,) = result.content
    assert result.data_texts == (compact_json(block["data"]),)
