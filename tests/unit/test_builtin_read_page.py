"""``read_page``: one page of complete original lines (tools.md §6.1, READ-01..14).

Runs over ``MemoryFileHandle``; ``_CHUNK`` (the read size) is shrunk in places so that
lines, terminators and multibyte characters straddle chunk boundaries.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from artifactize.domain.tools.builtins import read as builtin_read
from artifactize.domain.tools.builtins.read import (
    INVALID_UTF8,
    NUL_REFUSED,
    READ_PAGE_MAX_BYTES,
    read_page,
)
from artifactize.domain.tools.results import ToolError
from tests.fakes.filesystem import MemoryFileHandle

LIMIT_MAX = 500


def page(data: bytes, offset: int = 1, limit: int = 80) -> dict[str, Any]:
    return read_page(MemoryFileHandle(data), offset, limit, lambda: None)


def refusal(data: bytes, offset: int = 1, limit: int = 80) -> str:
    with pytest.raises(ToolError) as caught:
        page(data, offset, limit)
    return caught.value.message


def texts(result: dict[str, Any]) -> list[str]:
    return [line["text"] for line in result["lines"]]


def joined(result: dict[str, Any]) -> bytes:
    return "".join(texts(result)).encode("utf-8")


@contextmanager
def chunk(size: int) -> Iterator[None]:
    with mock.patch.object(builtin_read, "_CHUNK", size):
        yield


# Line bytes are preserved


def test_lf_crlf_and_bom_are_preserved() -> None:
    data = b"\xef\xbb\xbfone\r\n\n\xe4\xb8\x89\nlast"
    result = page(data, limit=2)
    assert result["lines"] == [
        {"number": 1, "text": "\ufeffone\r\n"},
        {"number": 2, "text": "\n"},
    ]
    assert (result["truncated"], result["nextOffset"]) == (True, 3)
    assert "totalLines" not in result
    rest = page(data, offset=3)
    assert texts(rest) == ["三\n", "last"]
    assert joined(result) + joined(rest) == data


def test_a_lone_cr_is_not_a_line_end() -> None:
    result = page(b"a\rb\r\nc\n")
    assert texts(result) == ["a\rb\r\n", "c\n"]


def test_the_exact_page_shape() -> None:
    assert page(b"alpha\r\nbeta\nlast", offset=2) == {
        "lines": [{"number": 2, "text": "beta\n"}, {"number": 3, "text": "last"}],
        "startLine": 2,
        "endLine": 3,
        "lineCount": 2,
        "truncated": False,
        "nextOffset": None,
        "totalLines": 3,
    }


def test_concatenated_pages_reproduce_the_file() -> None:
    data = b"".join(f"line {i}\r\n".encode() if i % 3 else b"\n" for i in range(1, 400))
    data += "fin 界".encode()
    collected = b""
    offset: int | None = 1
    pages = 0
    while offset is not None:
        result = page(data, offset=offset, limit=37)
        collected += joined(result)
        offset = result["nextOffset"]
        pages += 1
    assert collected == data
    assert pages == 11 and result["totalLines"] == 400


# The 64 KiB page budget


def test_lines_filling_the_budget_exactly_are_one_page() -> None:
    line = b"a" * 1023 + b"\n"
    data = line * 64 + b"next\n"
    result = page(data, limit=LIMIT_MAX)
    assert result["lineCount"] == 64
    assert len(joined(result)) == READ_PAGE_MAX_BYTES
    assert (result["truncated"], result["nextOffset"]) == (True, 65)
    # The budget used exactly at the end of the file: the page is complete.
    result = page(line * 64, limit=LIMIT_MAX)
    assert (result["lineCount"], result["truncated"], result["totalLines"]) == (64, False, 64)


def test_one_byte_over_the_budget_ends_the_page_before_that_line() -> None:
    data = b"a" * 1023 + b"\n" + b"b" * 64512 + b"\n" + b"c\n"  # 1024 + 64513 bytes
    result = page(data)
    assert texts(result) == ["a" * 1023 + "\n"]
    assert (result["truncated"], result["nextOffset"]) == (True, 2)
    assert "totalLines" not in result


def test_a_first_line_of_exactly_64_kib_fits() -> None:
    line = b"a" * (READ_PAGE_MAX_BYTES - 1) + b"\n"
    result = page(line + b"next")
    assert result["lineCount"] == 1
    assert len(result["lines"][0]["text"]) == READ_PAGE_MAX_BYTES
    assert (result["truncated"], result["nextOffset"]) == (True, 2)
    unterminated = page(b"a" * READ_PAGE_MAX_BYTES)
    assert (unterminated["lineCount"], unterminated["totalLines"]) == (1, 1)


@pytest.mark.parametrize(
    "line",
    [
        b"a" * READ_PAGE_MAX_BYTES + b"\n",
        b"a" * (READ_PAGE_MAX_BYTES + 1),
        "界".encode() * 30000 + b"\n",
    ],
    ids=["terminated", "unterminated", "multibyte"],
)
def test_an_oversized_first_requested_line_is_an_error(line: bytes) -> None:
    data = b"ok\n" + line
    assert refusal(data, offset=2) == "Artifact line 2 exceeds the 65536-byte read limit."
    first = page(data)
    assert texts(first) == ["ok\n"]
    assert (first["truncated"], first["nextOffset"]) == (True, 2)


def test_a_later_oversized_line_ends_the_page() -> None:
    data = b"a\nb\n" + b"x" * 70000 + b"\nz\n"
    result = page(data)
    assert texts(result) == ["a\n", "b\n"]
    assert (result["truncated"], result["nextOffset"]) == (True, 3)


# Decoding only what is asked for


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (b"\xff", INVALID_UTF8),
        (b"\xc3", INVALID_UTF8),  # a truncated sequence before the LF
        (b"\xed\xa0\x80", INVALID_UTF8),  # an encoded surrogate
        (b"\x00", NUL_REFUSED),
        (b"ok\x00\xff", NUL_REFUSED),
    ],
)
def test_invalid_text_is_an_error_inside_the_page_only(bad: bytes, message: str) -> None:
    data = b"first\n" + bad + b"\nvalid\n"
    assert refusal(data) == message
    assert refusal(data, offset=2) == message
    assert texts(page(data, offset=3)) == ["valid\n"]
    assert texts(page(data, limit=1)) == ["first\n"]


def test_a_truncated_sequence_at_the_end_of_the_file_is_an_error() -> None:
    assert refusal(b"ok\n\xe4\xb8") == INVALID_UTF8


def test_lines_after_the_page_are_never_decoded() -> None:
    result = page(b"valid\n\xff\x00", limit=1)
    assert texts(result) == ["valid\n"]
    assert (result["truncated"], result["nextOffset"]) == (True, 2)


# Empty files, the end of the file and totals


def test_an_empty_file() -> None:
    assert page(b"") == {
        "lines": [],
        "startLine": 1,
        "endLine": None,
        "lineCount": 0,
        "truncated": False,
        "nextOffset": None,
        "totalLines": 0,
    }
    assert page(b"", offset=5)["totalLines"] == 0


@pytest.mark.parametrize(
    ("data", "total"),
    [(b"a\nb\n", 2), (b"a\nb", 2), (b"\n", 1), (b"x", 1), (b"\n\n\n", 3)],
)
def test_a_page_past_the_end_keeps_the_real_total(data: bytes, total: int) -> None:
    for offset in (total + 1, total + 2, 1000):
        result = page(data, offset=offset)
        assert result == {
            "lines": [],
            "startLine": offset,
            "endLine": None,
            "lineCount": 0,
            "truncated": False,
            "nextOffset": None,
            "totalLines": total,
        }
    last = page(data, offset=total)
    assert (last["lineCount"], last["totalLines"], last["nextOffset"]) == (1, total, None)


def test_a_final_unterminated_line_is_a_line() -> None:
    result = page(b"a\nlast")
    assert result["lines"] == [{"number": 1, "text": "a\n"}, {"number": 2, "text": "last"}]
    assert (result["endLine"], result["totalLines"], result["truncated"]) == (2, 2, False)


def test_next_offset_and_completion_at_the_limit() -> None:
    data = b"1\n2\n3\n"
    result = page(data, limit=2)
    assert (result["endLine"], result["truncated"], result["nextOffset"]) == (2, True, 3)
    # Stopping on the limit exactly at the end of the file: the read is complete.
    result = page(data, limit=3)
    assert (result["truncated"], result["nextOffset"], result["totalLines"]) == (False, None, 3)
    result = page(data, offset=2, limit=2)
    assert (result["startLine"], result["endLine"], result["totalLines"]) == (2, 3, 3)


def test_the_check_runs_while_skipping_and_can_stop_the_read() -> None:
    calls = []

    def check() -> None:
        calls.append(1)
        if len(calls) > 3:
            raise ToolError("Agent tool call was cancelled.")

    data = b"x\n" * 100
    with chunk(8), pytest.raises(ToolError, match="cancelled"):
        read_page(MemoryFileHandle(data), 90, 5, check)


# Small chunks


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_small_chunks_do_not_change_the_page(size: int) -> None:
    data = b"\xef\xbb\xbfone\r\n\n" + "界é".encode() * 5 + b"\r\nlast"
    expected = [page(data, offset=o, limit=2) for o in range(1, 7)]
    with chunk(size):
        assert [page(data, offset=o, limit=2) for o in range(1, 7)] == expected


def test_a_3_mb_file_read_at_a_high_offset_through_tiny_chunks() -> None:
    lines = [f"{i:07d} {'界' * (i % 5)}{'é' * (i % 3)}\r\n".encode() for i in range(1, 200_001)]
    data = b"".join(lines) + b"\xff\x00 garbage after the page is never decoded"
    assert len(data) > 3_000_000
    offset = 187_654
    with chunk(7):
        result = page(data, offset=offset, limit=LIMIT_MAX)
        past = page(data[: -len(b"\xff\x00 garbage after the page is never decoded")], 999_999)
    assert result["startLine"] == offset and result["lineCount"] == LIMIT_MAX
    assert joined(result) == b"".join(lines[offset - 1 : offset - 1 + LIMIT_MAX])
    assert result["nextOffset"] == offset + LIMIT_MAX
    assert past["totalLines"] == 200_000


def test_a_line_of_exactly_64_kib_through_tiny_chunks() -> None:
    data = b"skip\n" + b"a" * (READ_PAGE_MAX_BYTES - 2) + b"\r\n" + b"b" * 70000
    with chunk(7):
        result = page(data, offset=2)
        assert len(joined(result)) == READ_PAGE_MAX_BYTES
        assert result["nextOffset"] == 3
        assert refusal(data, offset=3) == "Artifact line 3 exceeds the 65536-byte read limit."


# Property: concatenated texts are the bytes of the requested range


LINE_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\n\r\x00"), max_size=12
)
TERMINATOR = st.sampled_from(["\n", "\r\n", "\r\r\n"])


@st.composite
def files(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    texts_ = draw(st.lists(LINE_TEXT, max_size=60))
    lines = [(text + draw(TERMINATOR)).encode() for text in texts_]
    if draw(st.booleans()):
        tail = draw(LINE_TEXT)
        if tail:
            lines.append(tail.encode())
    bom = draw(st.booleans())
    if lines and bom:
        lines[0] = "\ufeff".encode() + lines[0]
    return b"".join(lines), lines


@settings(max_examples=300, deadline=None)
@given(
    file=files(),
    offset=st.integers(min_value=1, max_value=70),
    limit=st.integers(min_value=1, max_value=LIMIT_MAX),
    size=st.integers(min_value=1, max_value=16),
)
def test_pages_are_slices_of_the_file(
    file: tuple[bytes, list[bytes]], offset: int, limit: int, size: int
) -> None:
    data, lines = file
    with chunk(size):
        result = page(data, offset=offset, limit=limit)
    expected = lines[offset - 1 : offset - 1 + limit]
    assert joined(result) == b"".join(expected)
    assert [line["number"] for line in result["lines"]] == list(
        range(offset, offset + len(expected))
    )
    assert result["lineCount"] == len(expected)
    assert result["endLine"] == (offset + len(expected) - 1 if expected else None)
    complete = offset - 1 + len(expected) >= len(lines)
    assert result["truncated"] is not complete
    if complete:
        assert result["nextOffset"] is None
        assert result["totalLines"] == len(lines)
    else:
        assert result["nextOffset"] == offset + len(expected)
        assert "totalLines" not in result


def model_page(lines: list[bytes], offset: int, limit: int) -> list[bytes] | None:
    """The lines a page holds under the limit and the 64 KiB budget; None for an error."""
    selected: list[bytes] = []
    used = 0
    for line in lines[offset - 1 :]:
        if len(selected) == limit or used == READ_PAGE_MAX_BYTES:
            break
        if used + len(line) > READ_PAGE_MAX_BYTES:
            if not selected:
                return None
            break
        selected.append(line)
        used += len(line)
    return selected


@settings(max_examples=200, deadline=None)
@given(
    lengths=st.lists(st.integers(min_value=0, max_value=40_000), max_size=12),
    tail=st.integers(min_value=0, max_value=70_000),
    offset=st.integers(min_value=1, max_value=14),
    limit=st.integers(min_value=1, max_value=6),
    size=st.sampled_from([7, 4096, 1 << 20]),
)
def test_pages_of_long_lines_follow_the_budget(
    lengths: list[int], tail: int, offset: int, limit: int, size: int
) -> None:
    lines = [b"a" * n + b"\n" for n in lengths] + ([b"t" * tail] if tail else [])
    data = b"".join(lines)
    expected = model_page(lines, offset, limit)
    with chunk(size):
        if expected is None:
            message = f"Artifact line {offset} exceeds the 65536-byte read limit."
            assert refusal(data, offset, limit) == message
            return
        result = page(data, offset=offset, limit=limit)
    assert joined(result) == b"".join(expected)
    complete = offset - 1 + len(expected) >= len(lines)
    assert result["truncated"] is not complete
    assert result.get("totalLines") == (len(lines) if complete else None)
    assert result["nextOffset"] == (None if complete else offset + len(expected))


def outcome(data: bytes, offset: int, limit: int) -> dict[str, Any] | str:
    try:
        return page(data, offset=offset, limit=limit)
    except ToolError as exc:
        return exc.message


# bytes that exercise every rule: terminators, a lone CR, NUL, invalid and multibyte UTF-8
ANY_BYTES = st.lists(
    st.sampled_from([b"a", b"\n", b"\r\n", b"\r", b"\x00", b"\xff", b"\xe4\xb8\x89", b"\xe4"]),
    max_size=80,
).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(
    data=ANY_BYTES,
    offset=st.integers(min_value=1, max_value=12),
    limit=st.integers(min_value=1, max_value=20),
    size=st.sampled_from([1, 3, 8, 1 << 20]),
)
def test_whole_lines_decoded_at_once_give_the_line_by_line_page(
    data: bytes, offset: int, limit: int, size: int
) -> None:
    """The lines the buffer already holds are decoded in one step; a NUL or invalid UTF-8
    among them falls back to the line-by-line reading, so each refusal names the same first
    bad line. The page and the refusal are those of reading line by line throughout."""
    with chunk(size):
        fast = outcome(data, offset, limit)
        with mock.patch.object(builtin_read, "_decoded_lines", lambda block: None):
            slow = outcome(data, offset, limit)
    assert fast == slow


@pytest.mark.parametrize("limit", [1, 79, 80, 200])
def test_a_page_of_a_small_file_is_decoded_in_one_step(limit: int) -> None:
    data = b"".join(b"%d the quick brown fox\r\n" % n for n in range(200))
    with mock.patch.object(builtin_read, "_decode", side_effect=AssertionError("per line")):
        result = page(data, limit=limit)
    assert joined(result) == b"".join(data.splitlines(keepends=True)[:limit])
