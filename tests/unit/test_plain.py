"""The plain protocol: single-pass argv substitution and the one bounded text block
(tools.md §8, PLAIN-01..12)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from artifactize.domain.declarations.templates import TemplateError
from artifactize.domain.tools.commands.plain import (
    PLAIN_FAILED_PREFIX,
    SubstitutionError,
    plain_result,
    substitute,
)
from artifactize.domain.tools.commands.text_output import (
    TEXT_BLOCK_MAX_BYTES,
    TRUNCATION_MARKER,
    clean_output,
    decode_lossy,
    truncate_utf8,
)
from tests.support.processes import nothing_left_behind as nothing_left_behind_in


@pytest.fixture(scope="module", autouse=True)
def nothing_left_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with nothing_left_behind_in(tmp_path_factory):
        yield


def size(text: str) -> int:
    return len(text.encode("utf-8"))


# --- substitution -----------------------------------------------------------------------------


def test_constants() -> None:
    assert PLAIN_FAILED_PREFIX == "Agent tool exited unsuccessfully.\n"
    assert TEXT_BLOCK_MAX_BYTES == 65536
    assert TRUNCATION_MARKER == "\n[output truncated]"


def test_plain_01_reference_case() -> None:
    q = "a b ' \" ; $(touch injected)\n{n} \\ $HOME"
    args = ("{query}", "--query={query}", "{n}", "{items}", "{{query}}", '{{"literal":true}}')
    got = substitute(args, {"query": q, "n": 42, "items": [1, True]})
    assert got == (q, "--query=" + q, "42", "[1,true]", "{query}", '{"literal":true}')


def test_literals_pass_unchanged() -> None:
    args = ("--mode=fast", "", " spaced ", "$HOME", "é")
    assert substitute(args, {}) == args
    assert substitute((), {"q": "x"}) == ()


@pytest.mark.parametrize(
    "value",
    [
        "{n}",
        "{{n}}",
        "}}{{",
        "{",
        "}",
        "'single' \"double\"",
        "with spaces and\ttabs",
        "$(rm -rf /)",
        "`id`",
        "a; b && c | d > e",
        "$HOME ${PATH}",
        "line\nbreak\r\n",
        "",
        "é ✓ 界 😀",
        "\\",
        "-rf",
    ],
)
def test_values_stay_one_literal_element_and_are_never_rescanned(value: str) -> None:
    values = {"q": value, "n": "N"}
    assert substitute(("{q}", "--q={q}", "x{q}y"), values) == (
        value,
        "--q=" + value,
        "x" + value + "y",
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (42, "42"),
        (-7, "-7"),
        (2.0, "2.0"),
        (0.5, "0.5"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        ([], "[]"),
        ({}, "{}"),
        ([1, True, None, "x"], '[1,true,null,"x"]'),
        ({"b": 1, "a": [2, {"c": "é"}]}, '{"b":1,"a":[2,{"c":"é"}]}'),
        (['quote"', "back\\slash"], '["quote\\"","back\\\\slash"]'),
        (["\u0000"], '["\\u0000"]'),
    ],
)
def test_non_string_values_are_compact_json(value: Any, expected: str) -> None:
    assert substitute(("{v}", "--v={v}"), {"v": value}) == (expected, "--v=" + expected)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1e100, "1e100"),
        (1.5e-7, "1.5e-7"),
        (-2.5e-300, "-2.5e-300"),
        (1234e30, "1.234e33"),
        # the fixed layout up to the 21st digit before the point, and one past
        (1e20, "100000000000000000000.0"),
        (1e21, "1e21"),
        (12340000000.0, "12340000000.0"),
        # ... and down to 0.00001, and one past
        (0.00001, "0.00001"),
        (0.000001, "1e-6"),
        (0.001234, "0.001234"),
        (123.45, "123.45"),
        (-0.0, "-0.0"),
        (0.0, "0.0"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e308"),
        ({"x": [1e100, 2.0]}, '{"x":[1e100,2.0]}'),
    ],
)
def test_floats_are_written_as_serde_json_writes_them(value: Any, expected: str) -> None:
    assert substitute(("{v}",), {"v": value}) == (expected,)


def test_several_placeholders_in_one_token() -> None:
    assert substitute(("{a}:{b}/{a}",), {"a": "x", "b": 2}) == ("x:2/x",)
    assert substitute(("{a}{b}",), {"a": "{b}", "b": "{a}"}) == ("{b}{a}",)


def test_escaped_braces() -> None:
    assert substitute(("{{", "}}", "{{}}", "a{{b}}c", "{{{v}}}"), {"v": "x"}) == (
        "{",
        "}",
        "{}",
        "a{b}c",
        "{x}",
    )


@pytest.mark.parametrize(
    ("args", "values"),
    [
        (("{missing}",), {}),
        (("--q={missing}",), {"other": "x"}),
        (("ok", "{a}", "{b}"), {"a": "x"}),
    ],
)
def test_missing_value_fails(args: tuple[str, ...], values: dict[str, Any]) -> None:
    with pytest.raises(SubstitutionError):
        substitute(args, values)


@pytest.mark.parametrize("value", ["\x00", "a\x00b", "trailing\x00"])
def test_nul_fails(value: str) -> None:
    with pytest.raises(SubstitutionError):
        substitute(("{q}",), {"q": value})
    with pytest.raises(SubstitutionError):
        substitute(("--q={q}",), {"q": value})


def test_null_value_is_present_not_missing() -> None:
    assert substitute(("{q}",), {"q": None}) == ("null",)


@pytest.mark.parametrize("arg", ["{", "{}", "}", "a}b", "{a{b}", "x{a", "{{a}"])
def test_template_syntax_errors(arg: str) -> None:
    with pytest.raises(TemplateError):
        substitute((arg,), {"a": "x", "a{b": "y"})


def test_values_are_not_mutated() -> None:
    values: dict[str, Any] = {"q": {"nested": [1, 2]}, "s": "x"}
    substitute(("{q}", "{s}"), values)
    assert values == {"q": {"nested": [1, 2]}, "s": "x"}


# --- the result -------------------------------------------------------------------------------


def test_success_is_one_text_block() -> None:
    result = plain_result(b"hello\n", False, True)
    assert not result.is_error
    assert result.to_json() == {"content": [{"type": "text", "text": "hello\n"}]}


def test_empty_success() -> None:
    assert plain_result(b"", False, True).to_json() == {"content": [{"type": "text", "text": ""}]}


def test_failure_is_marked_and_keeps_stdout() -> None:
    result = plain_result(b"domain detail\n", False, False)
    assert result.is_error
    assert result.to_json() == {
        "content": [{"type": "text", "text": PLAIN_FAILED_PREFIX + "domain detail\n"}],
        "isError": True,
    }


def test_empty_failure_is_still_a_nonblank_error() -> None:
    result = plain_result(b"", False, False)
    assert result.is_error
    assert result.content[0]["text"] == PLAIN_FAILED_PREFIX


def test_cleaning_and_lossy_decoding() -> None:
    assert plain_result(b"\x1b[31mhello\x1b[0m\x00\t\n", False, True).content[0]["text"] == (
        "hello\t\n"
    )
    raw = b"a\xffb\r\n\x7f\x1b]title\x07c\x1b[31\x0b\x0c\x1f\xe7\x95"
    assert plain_result(raw, False, True).content[0]["text"] == "a\ufffdb\r\n\x7f]titlec[31\ufffd"


@pytest.mark.parametrize("extra", [0, 1, 2, 19, 1000])
def test_cap_boundary(extra: int) -> None:
    stdout = b"x" * (TEXT_BLOCK_MAX_BYTES + extra)
    got = plain_result(stdout, False, True).content[0]["text"]
    if extra == 0:
        assert got == "x" * TEXT_BLOCK_MAX_BYTES
    else:
        assert got == "x" * (TEXT_BLOCK_MAX_BYTES - size(TRUNCATION_MARKER)) + TRUNCATION_MARKER
        assert size(got) == TEXT_BLOCK_MAX_BYTES


def test_cap_counts_bytes_after_cleaning() -> None:
    """Removed control characters do not count; the cap applies to the cleaned text."""
    stdout = b"\x00" * 100_000 + b"x" * TEXT_BLOCK_MAX_BYTES
    assert plain_result(stdout, False, True).content[0]["text"] == "x" * TEXT_BLOCK_MAX_BYTES


def test_cap_never_splits_a_character() -> None:
    got = plain_result(("界" * 100_000).encode("utf-8"), False, True).content[0]["text"]
    assert size(got) <= TEXT_BLOCK_MAX_BYTES
    assert got.endswith(TRUNCATION_MARKER)
    body = got[: -len(TRUNCATION_MARKER)]
    assert body == "界" * len(body)
    assert size(body) > TEXT_BLOCK_MAX_BYTES - size(TRUNCATION_MARKER) - 3


def test_overflowed_capture_always_gets_the_marker() -> None:
    got = plain_result(b"short", True, True).content[0]["text"]
    assert got == "short" + TRUNCATION_MARKER


def test_failure_prefix_counts_against_the_cap() -> None:
    stdout = b"x" * (TEXT_BLOCK_MAX_BYTES - size(PLAIN_FAILED_PREFIX))
    result = plain_result(stdout, False, False)
    assert result.content[0]["text"] == PLAIN_FAILED_PREFIX + stdout.decode()
    result = plain_result(stdout + b"x", False, False)
    got = result.content[0]["text"]
    assert result.is_error
    assert got.startswith(PLAIN_FAILED_PREFIX) and got.endswith(TRUNCATION_MARKER)
    assert size(got) == TEXT_BLOCK_MAX_BYTES


def _reference(stdout: bytes, overflowed: bool, succeeded: bool) -> str:
    """The plain result text by the definition: clean all, prefix, then cap."""
    text = clean_output(decode_lossy(stdout))
    if not succeeded:
        text = PLAIN_FAILED_PREFIX + text
    return truncate_utf8(text, force=overflowed)


@pytest.mark.parametrize(
    "stdout",
    [
        b"x" * 65_535,
        b"x" * 65_536,
        b"x" * 65_537,
        b"x" * 65_536 + "é".encode(),
        "😀".encode() * 16_384,
        "😀".encode() * 16_385,
        "é".encode() * 32_768 + b"x",
        b"\x1b[1;31m" * 20_000 + b"y" * 70_000,
        b"y" * 65_530 + b"\x1b[" + b"3" * 100 + b"m" + b"z" * 100,
        b"y" * 65_530 + b"\x1b[" + b"3" * 100,
        b"\xff" * 30_000,
        b"ab\x00" * 40_000,
        ("界" * 21_840).encode() + b"\x1b[0m" * 10 + b"tail" * 100,
        b"x" * (16 * 1024 * 1024),
    ],
)
@pytest.mark.parametrize("succeeded", [True, False])
@pytest.mark.parametrize("overflowed", [False, True])
def test_result_matches_the_definition(stdout: bytes, succeeded: bool, overflowed: bool) -> None:
    result = plain_result(stdout, overflowed, succeeded)
    assert result.is_error is not succeeded
    text = result.content[0]["text"]
    assert text == _reference(stdout, overflowed, succeeded)
    assert size(text) <= TEXT_BLOCK_MAX_BYTES
