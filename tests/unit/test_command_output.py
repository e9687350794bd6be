"""Normalizing json-protocol stdout into a ``ToolResult`` (tools.md §7.3, §7.4, §9).

Every limit is checked at its boundary and one past it. Image files are read through a fake
reader that records what was asked, so the tests also show when nothing is read at all.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from artifactize.domain.text import compact_json, compact_json_size
from artifactize.domain.tools.commands import json_output as command_output
from artifactize.domain.tools.commands.json_output import (
    EXECUTION_FAILED,
    INVALID_OUTPUT,
    JSON_BLOCK_MAX_BYTES,
    RESULT_MAX_BYTES,
    InvalidOutput,
    normalize_json_output,
    output_path_components,
    parse_result_object,
)
from artifactize.domain.tools.commands.text_output import TEXT_BLOCK_MAX_BYTES
from artifactize.domain.tools.images import IMAGE_MAX_BYTES, SIZE_REFUSED, ImageError
from artifactize.domain.tools.results import CONTENT_BLOCKS_MAX, ToolResult
from tests.support.images import PNG1, b64
from tests.support.images import png_chunk as _chunk
from tests.support.processes import nothing_left_behind as nothing_left_behind_in

OUT = "/private/run/output-x1"


@pytest.fixture(scope="module", autouse=True)
def nothing_left_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with nothing_left_behind_in(tmp_path_factory):
        yield


PNG1_B64 = b64(PNG1)


class Reader:
    """A fake output-directory reader: serves ``files`` and records every request."""

    def __init__(self, files: dict[tuple[str, ...], bytes] | None = None) -> None:
        self.files = files or {}
        self.requests: list[tuple[str, ...]] = []

    def __call__(self, components: tuple[str, ...]) -> bytes:
        self.requests.append(components)
        if components not in self.files:
            raise InvalidOutput("no such file")
        return self.files[components]


def normalize(value: Any, reader: Reader | None = None) -> ToolResult:
    raw = value if isinstance(value, bytes) else compact_json(value).encode("utf-8")
    return normalize_json_output(raw, OUT, reader or Reader())


def invalid(value: Any, reader: Reader | None = None) -> None:
    with pytest.raises(InvalidOutput):
        normalize(value, reader)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def test_constants() -> None:
    assert TEXT_BLOCK_MAX_BYTES == 64 * 1024
    assert JSON_BLOCK_MAX_BYTES == 512 * 1024
    assert RESULT_MAX_BYTES == 8 * 1024 * 1024
    assert CONTENT_BLOCKS_MAX == 32
    assert INVALID_OUTPUT == "Agent tool returned invalid output."
    assert EXECUTION_FAILED == "Agent tool execution failed."


# --- the document ---------------------------------------------------------------------------


def test_one_object_with_trailing_whitespace() -> None:
    result = normalize(b' {"content":[{"type":"text","text":"ok"}]} \r\n\t')
    assert result.to_json() == {"content": [text("ok")]}


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"   ",
        b"null",
        b"[]",
        b'"text"',
        b"42",
        b'{"content":[{"type":"text","text":"ok"}]} {}',
        b'{"content":[{"type":"text","text":"ok"}]}x',
        b'{"content":[{"type":"text","text":"ok"}]}\n{"content":[]}',
        b'{"content":[{"type":"text","text":"ok"}]',
        b'{"content":[{"type":"json","data":NaN}]}',
        b'{"content":[{"type":"json","data":Infinity}]}',
        b'{"content":[{"type":"json","data":-Infinity}]}',
        b'{"content":[{"type":"text","text":"\xff"}]}',
        b"\xef\xbb\xbf" + b'{"content":[{"type":"text","text":"ok"}]}',
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=[
        "empty",
        "blank",
        "null",
        "array",
        "string",
        "number",
        "second-value",
        "garbage",
        "two-objects",
        "truncated",
        "nan",
        "infinity",
        "minus-infinity",
        "invalid-utf8",
        "bom",
        "deep-nesting",
    ],
)
def test_not_exactly_one_json_object(raw: bytes) -> None:
    with pytest.raises(InvalidOutput):
        parse_result_object(raw)
    invalid(raw)


# --- the result object ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        {"content": [text("ok")], "observation": {"kind": "content"}},
        {"content": [text("ok")], "meta": None},
        {"isError": False},
        {},
        {"content": {"0": text("ok")}},
        {"content": "ok"},
        {"content": None},
    ],
    ids=["observation", "meta", "no-content", "empty", "content-object", "content-string", "null"],
)
def test_result_object_is_closed(value: dict[str, Any]) -> None:
    invalid(value)


@pytest.mark.parametrize("flag", ["true", 1, 0, None, [], {}])
def test_is_error_must_be_boolean(flag: Any) -> None:
    invalid({"content": [text("x")], "isError": flag})


def test_explicit_is_error_false_is_accepted_and_omitted() -> None:
    result = normalize({"isError": False, "content": [text("ok")]})
    assert not result.is_error
    assert result.to_json() == {"content": [text("ok")]}


@pytest.mark.parametrize("count", [0, 1, CONTENT_BLOCKS_MAX, CONTENT_BLOCKS_MAX + 1])
def test_one_to_32_blocks(count: int) -> None:
    value = {"content": [text(str(i)) for i in range(count)]}
    if 1 <= count <= CONTENT_BLOCKS_MAX:
        assert normalize(value).to_json() == value
    else:
        invalid(value)


# --- blocks -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "block",
    [
        {"type": "text", "text": "ok", "extra": 1},
        {"type": "text"},
        {"type": "text", "text": 42},
        {"type": "text", "text": None},
        {"text": "ok"},
        {"type": "json", "data": {}, "extra": 1},
        {"type": "json"},
        {"type": "markdown", "text": "ok"},
        {"type": "launch", "launched": True},
        {"type": None},
        "ok",
        ["text", "ok"],
        None,
    ],
    ids=[
        "text-extra",
        "text-missing",
        "text-number",
        "text-null",
        "no-type",
        "json-extra",
        "json-missing",
        "unknown-type",
        "launch",
        "null-type",
        "string",
        "array",
        "null",
    ],
)
def test_blocks_are_closed(block: Any) -> None:
    invalid({"content": [block]})


def test_a_bad_block_anywhere_invalidates_the_result() -> None:
    invalid({"content": [text("ok")] * 5 + [{"type": "text", "text": "x", "extra": 1}]})


def test_text_block_limit_counts_utf8_bytes() -> None:
    assert normalize({"content": [text("x" * TEXT_BLOCK_MAX_BYTES)]}).content[0]["text"] == (
        "x" * TEXT_BLOCK_MAX_BYTES
    )
    invalid({"content": [text("x" * (TEXT_BLOCK_MAX_BYTES + 1))]})
    # 21845 three-byte characters are 65535 bytes; one more ASCII byte fits, two do not.
    assert normalize({"content": [text("界" * 21845 + "x")]}).content
    invalid({"content": [text("界" * 21845 + "xy")]})
    invalid({"content": [text("界" * 21846)]})


@pytest.mark.parametrize(
    "data", [None, True, 0, -1.5, "s", [], {}, {"nested": [1, {"a": None}]}, "é✓"]
)
def test_json_block_data_is_any_json_value(data: Any) -> None:
    result = normalize({"content": [{"type": "json", "data": data}]})
    assert result.content == ({"type": "json", "data": data},)


def test_json_block_limit_is_the_compact_utf8_size() -> None:
    at_limit = "x" * (JSON_BLOCK_MAX_BYTES - 2)
    assert compact_json_size(at_limit) == JSON_BLOCK_MAX_BYTES
    assert normalize({"content": [{"type": "json", "data": at_limit}]}).content[0]["data"] == (
        at_limit
    )
    invalid({"content": [{"type": "json", "data": at_limit + "x"}]})
    # Indentation in the tool's output does not count; UTF-8 bytes of the compact form do.
    n = (JSON_BLOCK_MAX_BYTES - len('{"k":[""]}')) // 2
    pretty = json.dumps({"content": [{"type": "json", "data": {"k": ["é" * n]}}]}, indent=4)
    assert normalize(pretty.encode("utf-8")).content[0]["data"] == {"k": ["é" * n]}
    pretty = json.dumps({"content": [{"type": "json", "data": {"k": ["é" * (n + 1)]}}]}, indent=4)
    invalid(pretty.encode("utf-8"))


def _blocks_of_total(total: int) -> list[dict[str, Any]]:
    """json blocks whose normalized result is exactly ``total`` bytes."""
    blocks: list[dict[str, Any]] = [{"type": "json", "data": "x" * 500_000} for _ in range(16)]
    blocks.append({"type": "json", "data": ""})
    missing = total - compact_json_size({"content": blocks})
    blocks[-1] = {"type": "json", "data": "x" * missing}
    assert compact_json_size({"content": blocks}) == total
    return blocks


def test_result_limit_is_inclusive() -> None:
    result = normalize({"content": _blocks_of_total(RESULT_MAX_BYTES)})
    assert compact_json_size(result.to_json()) == RESULT_MAX_BYTES
    invalid({"content": _blocks_of_total(RESULT_MAX_BYTES + 1)})


def test_result_limit_applies_to_the_normalized_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unpadded base64 grows when canonicalized: the limit counts what the reviewer gets."""
    block = {"type": "image", "mimeType": "image/png", "data": PNG1_B64}
    normalized = {"content": [{"type": "image", "data": PNG1_B64, "mimeType": "image/png"}]}
    size = compact_json_size(normalized)
    monkeypatch.setattr(command_output, "RESULT_MAX_BYTES", size)
    assert normalize({"content": [block]}).to_json() == normalized
    monkeypatch.setattr(command_output, "RESULT_MAX_BYTES", size - 1)
    invalid({"content": [block]})


def test_result_limit_running_sum_stops_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the blocks so far exceed the limit, later image files are not even read."""
    monkeypatch.setattr(command_output, "RESULT_MAX_BYTES", 100)
    reader = Reader({("a.png",): PNG1})
    invalid(
        {
            "content": [
                text("x" * 200),
                {"type": "image", "mimeType": "image/png", "path": "a.png"},
            ]
        },
        reader,
    )
    assert reader.requests == []


# --- authored errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message", ["Choose a smaller range.", " padded ", "multi\nline ✓", '{"json": 1}']
)
def test_authored_error_passes_through_unchanged(message: str) -> None:
    result = normalize({"isError": True, "content": [text(message)]})
    assert result.is_error
    assert result.to_json() == {"content": [text(message)], "isError": True}


@pytest.mark.parametrize(
    "content",
    [
        [text("a"), text("b")],
        [{"type": "json", "data": "a"}],
        [{"type": "image", "mimeType": "image/png", "data": PNG1_B64}],
        [text("")],
        [text(" \n\t\r ")],
        [],
        [text("a"), {"type": "json", "data": 1}],
    ],
    ids=["two-texts", "json", "image", "empty", "blank", "none", "text-and-json"],
)
def test_malformed_authored_errors(content: list[Any]) -> None:
    invalid({"isError": True, "content": content})


# --- images -----------------------------------------------------------------------------------


def test_inline_image_is_canonicalized() -> None:
    unpadded = PNG1_B64.rstrip("=")
    reader = Reader()
    result = normalize(
        {"content": [{"mimeType": "image/png", "data": unpadded, "type": "image"}]}, reader
    )
    assert result.content == ({"type": "image", "data": PNG1_B64, "mimeType": "image/png"},)
    assert list(result.content[0]) == ["type", "data", "mimeType"]
    assert reader.requests == []


@pytest.mark.parametrize(
    ("path", "components"),
    [
        ("board.png", ("board.png",)),
        ("shots/board.png", ("shots", "board.png")),
        (f"{OUT}/board.png", ("board.png",)),
        (f"{OUT}/shots/board.png", ("shots", "board.png")),
        ("a.b/.hidden.png", ("a.b", ".hidden.png")),
    ],
)
def test_image_path_is_read_below_the_output_dir(path: str, components: tuple[str, ...]) -> None:
    reader = Reader({components: PNG1})
    result = normalize(
        {"content": [{"type": "image", "mimeType": "image/png", "path": path}]}, reader
    )
    assert result.content == ({"type": "image", "data": PNG1_B64, "mimeType": "image/png"},)
    assert reader.requests == [components]


@pytest.mark.parametrize(
    "path",
    [
        "",
        ".",
        "..",
        "../x.png",
        "a/../x.png",
        "./x.png",
        "a//x.png",
        "a/",
        "a\\x.png",
        "c:x.png",
        "x\x00.png",
        "x\n.png",
        "/etc/passwd",
        "/private/run/output-x1",
        "/private/run/output-x1/",
        "/private/run/output-x1-other/x.png",
        "/private/run/output-x10/x.png",
        "/private/run/output-x1/../output-x1/x.png",
        "/private/run/output-x1/./x.png",
        "/private/run/output-x1//x.png",
        "//private/run/output-x1/x.png",
        "private/run/output-x1/x.png/..",
        42,
        None,
        ["x.png"],
    ],
)
def test_image_paths_outside_the_output_dir_are_refused_without_reading(path: Any) -> None:
    with pytest.raises(InvalidOutput):
        output_path_components(path, OUT)
    reader = Reader()
    invalid({"content": [{"type": "image", "mimeType": "image/png", "path": path}]}, reader)
    assert reader.requests == []


def test_output_dir_with_trailing_slash() -> None:
    assert output_path_components(f"{OUT}/x.png", OUT + "/") == ("x.png",)


@pytest.mark.parametrize(
    "error",
    [InvalidOutput("cannot open"), ImageError(SIZE_REFUSED)],
    ids=["unreadable", "too-large"],
)
def test_reader_failures_are_invalid_output(error: Exception) -> None:
    def failing(components: tuple[str, ...]) -> bytes:
        raise error

    with pytest.raises(InvalidOutput):
        normalize_json_output(
            compact_json(
                {"content": [{"type": "image", "mimeType": "image/png", "path": "x"}]}
            ).encode(),
            OUT,
            failing,
        )


@pytest.mark.parametrize(
    "block",
    [
        {"type": "image", "mimeType": "image/png"},
        {"type": "image", "mimeType": "image/png", "data": PNG1_B64, "path": "x.png"},
        {"type": "image", "mimeType": "image/png", "data": PNG1_B64, "extra": 1},
        {"type": "image", "data": PNG1_B64},
        {"type": "image", "mimeType": 1, "data": PNG1_B64},
        {"type": "image", "mimeType": "image/png", "data": 42},
        {"type": "image", "mimeType": "image/png", "data": None},
        {"type": "image", "mimeType": "image/jpeg", "data": PNG1_B64},
        {"type": "image", "mimeType": "IMAGE/PNG", "data": PNG1_B64},
        {"type": "image", "mimeType": "image/gif", "data": "R0lGODlhAQABAA=="},
        {"type": "image", "mimeType": "image/png", "data": ""},
        {"type": "image", "mimeType": "image/png", "data": "%%%"},
        {"type": "image", "mimeType": "image/png", "data": " " + PNG1_B64},
        {"type": "image", "mimeType": "image/png", "path": "x.png", "extra": 1},
        {"type": "image", "mimeType": "image/jpeg", "path": "x.png"},
    ],
    ids=[
        "no-source",
        "both-sources",
        "extra",
        "no-mime",
        "mime-not-string",
        "data-number",
        "data-null",
        "mime-mismatch",
        "mime-case",
        "gif",
        "empty-data",
        "bad-base64",
        "leading-space",
        "path-extra",
        "path-mime-mismatch",
    ],
)
def test_bad_image_blocks(block: dict[str, Any]) -> None:
    invalid({"content": [block]}, Reader({("x.png",): PNG1}))


def test_image_file_size_boundary() -> None:
    """The reader enforces the 4 MiB read bound; the bytes are checked again here."""
    fixed = len(PNG1) - len(_chunk(b"tEXt", b"note\0acTL"))
    body = b"pad\0" + b"x" * (IMAGE_MAX_BYTES - fixed - 12 - 4)
    big = PNG1[:33] + _chunk(b"tEXt", body) + PNG1[33 + len(_chunk(b"tEXt", b"note\0acTL")) :]
    assert len(big) == IMAGE_MAX_BYTES
    block = {"type": "image", "mimeType": "image/png", "path": "x.png"}
    result = normalize({"content": [block]}, Reader({("x.png",): big}))
    assert base64.b64decode(result.content[0]["data"]) == big
    invalid({"content": [block]}, Reader({("x.png",): big + b"x"}))
    invalid({"content": [block]}, Reader({("x.png",): b""}))


def test_two_4_MiB_images_exceed_the_result_limit() -> None:
    fixed = len(PNG1) - len(_chunk(b"tEXt", b"note\0acTL"))
    body = b"pad\0" + b"x" * (IMAGE_MAX_BYTES - fixed - 12 - 4)
    big = PNG1[:33] + _chunk(b"tEXt", body) + PNG1[33 + len(_chunk(b"tEXt", b"note\0acTL")) :]
    block = {"type": "image", "mimeType": "image/png", "path": "x.png"}
    assert normalize({"content": [block]}, Reader({("x.png",): big})).content
    invalid({"content": [block, block]}, Reader({("x.png",): big}))


def test_mixed_blocks_keep_their_order_and_normal_form() -> None:
    value = {
        "content": [
            {"text": "first", "type": "text"},
            {"data": {"b": 1, "a": 2}, "type": "json"},
            {"type": "image", "path": "x.png", "mimeType": "image/png"},
        ]
    }
    result = normalize(value, Reader({("x.png",): PNG1}))
    assert result.to_json() == {
        "content": [
            text("first"),
            {"type": "json", "data": {"b": 1, "a": 2}},
            {"type": "image", "data": PNG1_B64, "mimeType": "image/png"},
        ]
    }
    assert list(result.content[0]) == ["type", "text"]
    assert list(result.content[1]["data"]) == ["b", "a"], "key order is kept"


@pytest.mark.parametrize("kind", ["[]", "{}", "[1]", "1", "null", "true"])
def test_a_block_type_that_is_not_a_string_is_invalid_output(kind: str) -> None:
    """Found by fuzzing: an unhashable ``type`` raised TypeError (a traceback)."""
    with pytest.raises(InvalidOutput):
        normalize_json_output(f'{{"content":[{{"type":{kind}}}]}}'.encode(), OUT, Reader())
