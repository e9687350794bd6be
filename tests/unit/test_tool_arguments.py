"""Call-time admission of tool arguments (tools.md §5; SCH-01..05)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from artifactize.domain.json_schema import compile_validator
from artifactize.domain.text import compact_json_size
from artifactize.domain.tools.arguments import (
    ARGUMENTS_MAX_BYTES,
    NOT_AN_OBJECT,
    SCHEMA_MISMATCH,
    TRUNCATED_SUFFIX,
    ArgumentsRefused,
    admit_arguments,
    schema_mismatch_message,
)

ANY_OBJECT = compile_validator({"type": "object"})


def refusal(args: Any, schema: dict[str, Any] | None = None) -> str:
    validator = ANY_OBJECT if schema is None else compile_validator(schema)
    with pytest.raises(ArgumentsRefused) as caught:
        admit_arguments(args, validator)
    assert str(caught.value) == caught.value.message
    return caught.value.message


def of_size(size: int, filler: str = "x") -> dict[str, Any]:
    """``{"k": ...}`` whose compact JSON is exactly ``size`` bytes."""
    overhead = compact_json_size({"k": ""})
    unit = compact_json_size(filler) - 2
    count, rest = divmod(size - overhead, unit)
    args = {"k": filler * count + "x" * rest}
    assert compact_json_size(args) == size
    return args


def diagnostics(message: str) -> list[str]:
    lines = message.split("\n")
    assert lines[0] == SCHEMA_MISMATCH
    return lines[1:]


# Size and shape


def test_the_limit_is_64_kib() -> None:
    assert ARGUMENTS_MAX_BYTES == 65536


@pytest.mark.parametrize("filler", ["x", "é", "😀", "\x01", '"'])
def test_exactly_64_kib_of_compact_json_is_admitted_one_byte_more_refused(filler: str) -> None:
    admitted = of_size(ARGUMENTS_MAX_BYTES, filler)
    assert admit_arguments(admitted, ANY_OBJECT) is admitted
    assert refusal(of_size(ARGUMENTS_MAX_BYTES + 1, filler)) == NOT_AN_OBJECT


def test_size_counts_utf8_bytes_of_the_compact_form_not_characters() -> None:
    # 32764 characters, 65528 bytes of text: over the limit although short in characters.
    args = {"k": "é" * 32764}
    assert len(json.dumps(args)) > 65536  # the ASCII-escaped form is not the measure either
    assert compact_json_size(args) == 65536
    assert admit_arguments(args, ANY_OBJECT) is args
    assert refusal({"k": "é" * 32765}) == NOT_AN_OBJECT
    # Spaces of a pretty form do not count: only the compact form is measured.
    nested = {"a": [1, 2, {"b": None}] * 100}
    assert admit_arguments(nested, ANY_OBJECT) is nested


@pytest.mark.parametrize("args", [[], [{}], "x", "", None, 0, 1.5, True, False])
def test_non_objects_are_refused(args: Any) -> None:
    assert refusal(args) == NOT_AN_OBJECT


def test_size_is_checked_before_the_schema() -> None:
    schema = {"type": "object", "additionalProperties": False}
    assert refusal(of_size(ARGUMENTS_MAX_BYTES + 1), schema) == NOT_AN_OBJECT
    assert refusal(of_size(ARGUMENTS_MAX_BYTES), schema).startswith(SCHEMA_MISMATCH)


# Diagnostics


def test_diagnostic_format() -> None:
    schema = {
        "type": "object",
        "$defs": {"positive": {"type": "integer", "minimum": 1}},
        "properties": {"n": {"$ref": "#/$defs/positive"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    message = refusal({"n": 0}, schema)
    assert message.startswith(SCHEMA_MISMATCH)
    assert '\n- instancePath "/n": constraint "' in message
    assert message.endswith(" failed.")
    assert len(message.encode()) < 4096
    assert diagnostics(refusal({}, schema)) == ['- instancePath "": constraint "/required" failed.']


def test_at_most_five_diagnostics() -> None:
    names = "abcdefgh"
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names}}
    lines = diagnostics(refusal(dict.fromkeys(names, "x"), schema))
    assert len(lines) == 5
    assert all(line.startswith("- instancePath ") for line in lines)
    assert all(line.endswith(" failed.") for line in lines)
    # Exactly five failures: all five are shown.
    assert len(diagnostics(refusal(dict.fromkeys("abcde", "x"), schema))) == 5


@pytest.mark.parametrize(
    ("schema", "args"),
    [
        ({"properties": {"n": {"type": "integer"}}}, {"n": "secret-value"}),
        ({"properties": {"n": {"enum": ["a", "b"]}}}, {"n": "secret-value"}),
        ({"properties": {"n": {"const": "a"}}}, {"n": "secret-value"}),
        ({"properties": {"n": {"pattern": "^a$"}}}, {"n": "secret-value"}),
        ({"properties": {"n": {"maxLength": 2}}}, {"n": "secret-value"}),
        ({"properties": {"n": {"format": "email", "maxLength": 1}}}, {"n": "secret-value"}),
        ({"properties": {"n": {"not": {"type": "string"}}}}, {"n": "secret-value"}),
        ({"additionalProperties": False}, {"extra": "secret-value"}),
        ({"additionalProperties": {"type": "integer"}}, {"x": ["secret-value"]}),
        ({"properties": {"n": {"items": {"type": "integer"}}}}, {"n": [1, "secret-value"]}),
        ({"properties": {"n": {"maxItems": 0}}}, {"n": ["secret-value"]}),
        ({"required": ["n"]}, {"m": "secret-value"}),
        ({"properties": {"n": {"type": "string"}}}, {"n": {"secret-value": 1}}),
    ],
)
def test_argument_values_are_never_echoed(schema: dict[str, Any], args: dict[str, Any]) -> None:
    message = refusal(args, {"type": "object", **schema})
    assert "secret" not in message
    assert len(diagnostics(message)) >= 1


def test_instance_and_schema_paths_are_escaped_json_pointers() -> None:
    key = "a/b~c"
    schema = {"type": "object", "properties": {key: {"type": "integer"}}}
    assert diagnostics(refusal({key: "x"}, schema)) == [
        '- instancePath "/a~1b~0c": constraint "/properties/a~1b~0c/type" failed.'
    ]
    items = {"type": "object", "properties": {"l": {"items": {"type": "integer"}}}}
    assert diagnostics(refusal({"l": [1, "x"]}, items)) == [
        '- instancePath "/l/1": constraint "/properties/l/items/type" failed.'
    ]


def test_paths_are_json_string_literals() -> None:
    key = 'q"b\\s\nl\x01é😀'
    schema = {"type": "object", "properties": {key: {"type": "integer"}}}
    (line,) = diagnostics(refusal({key: "x"}, schema))
    literal = json.dumps("/" + key, ensure_ascii=False)
    assert (
        line
        == f"- instancePath {literal}: constraint "
        + json.dumps(f"/properties/{key}/type", ensure_ascii=False)
        + " failed."
    )
    assert "\\n" in line and "\\u0001" in line and "é😀" in line


def test_lone_surrogates_stay_escaped_in_diagnostics() -> None:
    key = "a\ud800b"
    validator = compile_validator({"type": "object", "properties": {key: {"type": "integer"}}})
    message = schema_mismatch_message(validator.iter_errors({key: "x"}))
    assert '"/a\\ud800b"' in message
    message.encode("utf-8")  # a message is always encodable


def deeply_nested(depth: int) -> dict[str, Any]:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return {"k": value}


@pytest.mark.parametrize(
    "args",
    [
        {"k": "a\ud800b"},
        {"a\udfff": 1},
        {"k": float("nan")},
        {"k": float("inf")},
        {"k": b"bytes"},
        {"k": {1, 2}},
        {1: object()},
        deeply_nested(100_000),
    ],
    ids=["surrogate", "surrogate-key", "nan", "inf", "bytes", "set", "object", "deep"],
)
def test_arguments_without_json_text_are_refused_not_raised(args: dict[Any, Any]) -> None:
    assert refusal(args) == NOT_AN_OBJECT


def literal_line(key: str) -> str:
    schema = {"type": "object", "properties": {key: {"type": "integer"}}}
    (line,) = diagnostics(refusal({key: "x"}, schema))
    prefix = "- instancePath "
    assert line.startswith(prefix)
    return line[len(prefix) : line.index(": constraint ")]


def test_a_literal_of_320_bytes_is_kept_whole() -> None:
    key = "k" * 317  # the literal "/kkk…" with its quotes: 320 bytes
    assert literal_line(key) == json.dumps("/" + key)


def test_a_literal_over_320_bytes_is_cut_to_300() -> None:
    key = "k" * 318
    literal = literal_line(key)
    assert literal == json.dumps("/" + key)[:300] + TRUNCATED_SUFFIX
    assert len(literal.removesuffix(TRUNCATED_SUFFIX).encode()) == 300


def test_the_cut_never_splits_a_character() -> None:
    key = "k" * 297 + "界" * 20  # the 300-byte cut falls inside the second "界"
    literal = literal_line(key)
    kept = literal.removesuffix(TRUNCATED_SUFFIX)
    assert literal.endswith(TRUNCATED_SUFFIX)
    assert kept == '"/' + "k" * 297 and len(kept.encode()) == 299
    key = "k" * 295 + "界" * 20  # the cut falls right after the first "界"
    kept = literal_line(key).removesuffix(TRUNCATED_SUFFIX)
    assert kept == '"/' + "k" * 295 + "界" and len(kept.encode()) == 300


def test_the_whole_message_stays_under_4_kib() -> None:
    names = [f"{i}" + "界" * 2000 for i in range(7)]
    schema = {
        "type": "object",
        "properties": {n: {"$ref": "#/$defs/" + n} for n in names},
        "$defs": {n: {"type": "integer"} for n in names},
    }
    message = refusal(dict.fromkeys(names, "x"), schema)
    assert len(message.encode()) < 4096
    assert len(message.split("\n")) == 6
    assert message.count(TRUNCATED_SUFFIX) == 10  # both paths of every line are cut


def test_schema_defaults_are_never_applied() -> None:
    schema = {
        "type": "object",
        "properties": {
            "offset": {"type": "integer", "default": 1},
            "nested": {
                "type": "object",
                "default": {"x": 1},
                "properties": {"y": {"type": "integer", "default": 2}},
            },
        },
    }
    validator = compile_validator(schema)
    cases: list[dict[str, Any]] = [{}, {"nested": {}}]
    for args in cases:
        before = copy.deepcopy(args)
        admitted = admit_arguments(args, validator)
        assert admitted is args
        assert admitted == before
