"""``ToolResult``: 1-32 blocks, error results, the normalized form, the built-in result cap."""

from __future__ import annotations

from typing import Any

import pytest

from artifactize.domain.text import compact_json, compact_json_size
from artifactize.domain.tools.results import (
    BLANK_ERROR_TEXT,
    BUILTIN_RESULT_MAX_BYTES,
    CONTENT_BLOCKS_MAX,
    ToolError,
    ToolResult,
    bounded_json_result,
)

TEXT = {"type": "text", "text": "ok"}
CAP_MESSAGE = "Built-in result exceeds 512 KiB; narrow the path or range."


def blocks(count: int) -> tuple[dict[str, Any], ...]:
    return tuple({"type": "text", "text": f"block {i}"} for i in range(count))


# Block count


def test_limits() -> None:
    assert (CONTENT_BLOCKS_MAX, BUILTIN_RESULT_MAX_BYTES) == (32, 524288)
    assert BLANK_ERROR_TEXT == "Tool failed."


@pytest.mark.parametrize("count", [1, 2, 31, 32])
def test_one_to_32_blocks(count: int) -> None:
    result = ToolResult(blocks(count))
    assert len(result.to_json()["content"]) == count


@pytest.mark.parametrize("count", [0, 33, 100])
def test_zero_or_more_than_32_blocks_are_refused(count: int) -> None:
    with pytest.raises(ValueError, match="1-32"):
        ToolResult(blocks(count))


# Error results


def test_an_error_is_exactly_one_nonblank_text_block() -> None:
    result = ToolResult((TEXT,), is_error=True)
    assert result.is_error and result.error_text == "ok"


@pytest.mark.parametrize(
    "content",
    [
        blocks(2),
        ({"type": "json", "data": {"text": "ok"}},),
        ({"type": "image", "mimeType": "image/png", "data": "AA=="},),
        ({"type": "text", "text": ""},),
        ({"type": "text", "text": " \n\t"},),
        ({"type": "text"},),
    ],
    ids=["two-texts", "json", "image", "empty", "blank", "no-text"],
)
def test_malformed_errors_are_refused(content: tuple[dict[str, Any], ...]) -> None:
    with pytest.raises(ValueError, match="one nonblank text block"):
        ToolResult(content, is_error=True)


@pytest.mark.parametrize("message", ["", " ", "\n\t \r\n"])
def test_a_blank_error_message_becomes_tool_failed(message: str) -> None:
    result = ToolResult.error(message)
    assert result.to_json() == {
        "content": [{"type": "text", "text": "Tool failed."}],
        "isError": True,
    }


def test_an_error_message_is_kept_verbatim() -> None:
    result = ToolResult.error("  Choose a smaller range.\n")
    assert result.to_json() == {
        "content": [{"type": "text", "text": "  Choose a smaller range.\n"}],
        "isError": True,
    }


# Normalized form


def test_is_error_appears_only_when_true() -> None:
    assert ToolResult.text("ok").to_json() == {"content": [TEXT]}
    assert ToolResult(blocks(32)).to_json().keys() == {"content"}
    assert ToolResult.json({"a": 1}).to_json() == {"content": [{"type": "json", "data": {"a": 1}}]}
    assert ToolResult.error("bad").to_json()["isError"] is True
    assert ToolResult.text("ok").error_text is None


def test_success_may_hold_empty_or_blank_text() -> None:
    assert ToolResult.text("").to_json() == {"content": [{"type": "text", "text": ""}]}
    assert not ToolResult.text(" ").is_error


def test_the_normalized_form_is_a_copy() -> None:
    result = ToolResult.text("ok")
    payload = result.to_json()
    payload["content"][0]["text"] = "changed"
    payload["content"].append(TEXT)
    assert result.to_json() == {"content": [TEXT]}


def test_tool_error_carries_its_message() -> None:
    error = ToolError("Narrow the path.")
    assert (error.message, str(error)) == ("Narrow the path.", "Narrow the path.")


# The 512 KiB built-in result cap


def data_of_size(size: int, filler: str = "x") -> dict[str, Any]:
    overhead = compact_json_size({"k": ""})
    unit = compact_json_size(filler) - 2
    count, rest = divmod(size - overhead, unit)
    data = {"k": filler * count + "x" * rest}
    assert compact_json_size(data) == size
    return data


@pytest.mark.parametrize("filler", ["x", "界", "\x01"])
def test_builtin_result_of_exactly_512_kib_is_returned(filler: str) -> None:
    data = data_of_size(BUILTIN_RESULT_MAX_BYTES, filler)
    result = bounded_json_result(data)
    assert result.to_json() == {"content": [{"type": "json", "data": data}]}


@pytest.mark.parametrize("filler", ["x", "界", "\x01"])
def test_builtin_result_one_byte_over_512_kib_is_an_error(filler: str) -> None:
    with pytest.raises(ToolError) as caught:
        bounded_json_result(data_of_size(BUILTIN_RESULT_MAX_BYTES + 1, filler))
    assert caught.value.message == CAP_MESSAGE


# The kept compact text of a json block


MIXED = (
    {"type": "text", "text": 'a "quoted" é'},
    {"type": "json", "data": {"n": [1, None, "界"]}},
    {"type": "image", "mimeType": "image/png", "data": "AA=="},
)


@pytest.mark.parametrize(
    "result",
    [
        bounded_json_result({"lines": [{"number": 1, "text": "é\n"}], "x": '\x01"'}),
        ToolResult.json([1, 2]),
        ToolResult.text("ok"),
        ToolResult.error("bad"),
        ToolResult(MIXED),
        ToolResult(MIXED, data_texts=(None, '{"n":[1,null,"界"]}', None)),
    ],
    ids=["built-in", "json", "text", "error", "mixed", "mixed-kept"],
)
def test_the_compact_forms_are_those_of_the_normalized_form(result: ToolResult) -> None:
    assert result.compact_json() == compact_json(result.to_json())
    for index, block in enumerate(result.content):
        if block["type"] == "json":
            assert result.data_json(index) == compact_json(block["data"])


def test_a_builtin_result_keeps_the_text_it_measured() -> None:
    data = {"k": "v"}
    result = bounded_json_result(data)
    assert result.data_texts == (compact_json(data),)
    assert result == ToolResult.json(data)  # the kept text is not part of the value
