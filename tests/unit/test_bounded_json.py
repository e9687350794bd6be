"""The one bounded JSON reader (``kernel.bounded_json``) and every input that reads through it.

Each limit is checked at its boundary and one past it; each caller is checked to turn a
refusal into its own documented error, never a traceback and never Python's own wording.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from artifactize.domain.reviews.human.submission import FieldsError, human_result
from artifactize.domain.reviews.remote.records import validate_record
from artifactize.domain.reviews.verdicts import InvalidVerdict, VerdictValidator, parse_final_text
from artifactize.domain.tools.commands.json_output import InvalidOutput, normalize_json_output
from artifactize.kernel.bounded_json import (
    JSON_INTEGER_DIGITS_MAX,
    JSON_NESTING_MAX,
    JsonRefused,
    RefusedValue,
    first_refusal,
    read_json,
    read_json_batch,
)
from tests.support.documents import opaque
from tests.support.remote_records import KINDS, execution

PYTHON_WORDING = ("set_int_max_str_digits", "Exceeds the limit", "recursion", "Traceback")


def refused(text: str | bytes) -> str:
    with pytest.raises(JsonRefused) as caught:
        read_json(text)
    reason = caught.value.reason
    assert not any(words in reason for words in PYTHON_WORDING), reason
    return reason


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_constants() -> None:
    assert JSON_NESTING_MAX == 512
    assert JSON_INTEGER_DIGITS_MAX == 4300
    # The interpreter's own default conversion limit: every accepted integer can be written.
    assert sys.int_info.default_max_str_digits == JSON_INTEGER_DIGITS_MAX


# --- each limit at its boundary and one past it -------------------------------------------


def test_nesting_at_the_limit_and_one_past() -> None:
    value = read_json(nested(JSON_NESTING_MAX))
    for _ in range(JSON_NESTING_MAX - 1):
        value = value[0]
    assert value == []
    assert "nesting deeper than 512" in refused(nested(JSON_NESTING_MAX + 1))


def test_objects_count_toward_the_nesting() -> None:
    depth = JSON_NESTING_MAX // 2
    assert read_json('{"a":[' * depth + "0" + "]}" * depth) is not None
    deeper = '{"a":[' * depth + "{}" + "]}" * depth
    assert "nesting deeper" in refused(deeper)


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"s": "[" * 10_000, "t": '\\"{' * 1000})
    assert read_json(text)["s"] == "[" * 10_000


@pytest.mark.parametrize("depth", [JSON_NESTING_MAX + 1, 50_000, 1_000_000])
def test_deep_nesting_is_refused_without_a_recursion_error(depth: int) -> None:
    assert "nesting deeper" in refused("[" * depth + "]" * depth)
    assert "nesting deeper" in refused('{"a":' * depth)


@pytest.mark.parametrize("sign", ["", "-"])
def test_integer_digits_at_the_limit_and_one_past(sign: str) -> None:
    at_limit = sign + "7" * JSON_INTEGER_DIGITS_MAX
    assert read_json(at_limit) == int(at_limit)
    assert read_json(f"[{at_limit}]") == [int(at_limit)]
    past = sign + "7" * (JSON_INTEGER_DIGITS_MAX + 1)
    assert refused(past) == "an integer longer than 4300 digits"
    assert refused(f'{{"data": {past}}}') == "an integer longer than 4300 digits"


@pytest.mark.parametrize("literal", ["1e400", "-1e400", "1" * 400 + ".0", "123e99999"])
def test_numbers_too_large_to_be_finite(literal: str) -> None:
    assert "too large to be finite" in refused(f'{{"durationMs": {literal}}}')


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_python_constants_are_not_json(literal: str) -> None:
    assert refused(f"[{literal}]") == f"{literal} is not a JSON number"


def test_large_finite_and_tiny_numbers_are_fine() -> None:
    assert read_json("[1e308, 1e-400, -0.0]") == [1e308, 0.0, -0.0]


def test_duplicate_keys_are_refused_at_any_depth() -> None:
    assert refused('{"a":1,"a":1}') == 'duplicate key "a"'
    assert refused('[{"x":{"b":1,"c":2,"b":3}}]') == 'duplicate key "b"'
    assert read_json('{"a":{"a":1}}') == {"a": {"a": 1}}


def test_syntax_errors_and_encoding() -> None:
    assert refused("{").startswith("Expecting property name")
    assert refused("{} {}").startswith("Extra data")
    assert refused(b"\xff{}") == "not UTF-8"
    assert read_json(b'{"a":"\xc3\xa9"}') == {"a": "é"}


# --- a batch keeps what it can -------------------------------------------------------------


def test_a_batch_marks_refused_values_in_place() -> None:
    batch = read_json_batch(
        '{"entries":[{"a":1e400},{"b":1,"b":2},{"c":[NaN]},{"d":1},{"e":' + "9" * 4301 + "}]}"
    )
    entries = batch["entries"]
    assert isinstance(entries[1], RefusedValue)
    assert [first_refusal(e) is None for e in entries] == [False, False, False, True, False]
    assert entries[3] == {"d": 1}
    assert first_refusal(entries[4]) == "an integer longer than 4300 digits"


def test_a_batch_is_still_refused_whole_for_syntax_and_nesting() -> None:
    with pytest.raises(JsonRefused):
        read_json_batch('{"entries":[')
    with pytest.raises(JsonRefused):
        read_json_batch(nested(JSON_NESTING_MAX + 1))


# --- the inputs that read through it ------------------------------------------------------


def _no_file(_: tuple[str, ...]) -> bytes:
    raise InvalidOutput("no file")


@pytest.mark.parametrize(
    "stdout",
    [
        b'{"content":[{"type":"json","data":1e400}]}',
        b'{"content":[{"type":"json","data":' + b"1" * 10_000 + b"}]}",
        b'{"content":[{"type":"text","text":"x"}],"isError":true,"isError":false}',
        b'{"content":[{"type":"json","data":' + nested(50_000).encode() + b"}]}",
    ],
    ids=["infinite", "10000-digits", "duplicate-isError", "50000-deep"],
)
def test_tool_stdout_beyond_the_limits_is_invalid_output(stdout: bytes) -> None:
    with pytest.raises(InvalidOutput):
        normalize_json_output(stdout, "/out", _no_file)


def test_a_tool_json_block_at_the_limits_is_accepted() -> None:
    data = (
        "[" * (JSON_NESTING_MAX - 3) + "9" * JSON_INTEGER_DIGITS_MAX + "]" * (JSON_NESTING_MAX - 3)
    )
    stdout = ('{"content":[{"type":"json","data":' + data + "}]}").encode()
    result = normalize_json_output(stdout, "/out", _no_file)
    assert not result.is_error


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ('{"n": ' + "5" * 5000 + "}", "an integer longer than 4300 digits"),
        ('{"n": 1e400}', "too large to be finite"),
        ('{"n": ' + "[" * 50_000 + "}", "nesting deeper than 512 levels"),
        ('{"n": 1, "n": 2}', 'duplicate key "n"'),
    ],
)
def test_fields_beyond_the_limits(fields: str, reason: str) -> None:
    with pytest.raises(FieldsError) as caught:
        human_result("GREEN", fields)
    message = caught.value.message
    assert message.startswith("Human fields are not valid JSON: ") and reason in message
    assert not any(words in message for words in PYTHON_WORDING)


@pytest.mark.parametrize(
    "text", ['{"verdict":"GREEN","verdict":"RED"}', '{"verdict":"GREEN","x":1e400}']
)
def test_an_agent_final_text_beyond_the_limits(text: str) -> None:
    with pytest.raises(InvalidVerdict):
        parse_final_text(text, VerdictValidator(None, None))


def test_a_store_record_holding_a_refused_value_is_invalid() -> None:
    from artifactize.domain.reviews.remote.records import build_record

    record: dict[str, Any] = opaque(build_record(execution(), KINDS, "summary"))
    assert not isinstance(validate_record(record), str)
    poisoned = read_json_batch(json.dumps(record)[:-1] + ',"durationMs":1e400}')
    problem = validate_record(poisoned)
    assert isinstance(problem, str)
    assert problem == "the record is not JSON we accept: the number 1e400 is too large to be finite"
