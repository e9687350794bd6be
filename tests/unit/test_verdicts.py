"""Verdict validation and the parsing of an Agent's final text (reviews-and-store §1.3, §6.3)."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest

from artifactize.domain.json_schema import SchemaError
from artifactize.domain.reviews.verdicts import (
    DETAIL_LINES_MAX,
    DETAIL_PIECE_MAX_UTF16,
    EMPTY_TEXT,
    FINAL_TEXT_MAX_BYTES,
    NOT_AN_OBJECT,
    NOT_JSON_DATA,
    NOT_JSON_TEXT,
    OWNER_MISMATCH,
    RESULT_MAX_UTF16,
    RESULT_OVER_SIZE,
    TEXT_OVER_SIZE,
    TRUNCATED_SUFFIX,
    VERDICT_MISMATCH,
    InvalidVerdict,
    VerdictValidator,
    parse_final_text,
    repair_message,
)
from artifactize.domain.text import compact_json, utf16_length

ASTRAL = "\N{GRINNING FACE}"
SECRET = "s3cret-token-value"
PASS = {
    "type": "object",
    "required": ["checked"],
    "properties": {"checked": {"type": "integer", "minimum": 1}},
}
FAIL = {
    "type": "object",
    "required": ["problems"],
    "properties": {"problems": {"type": "array", "minItems": 1, "items": {"type": "string"}}},
}


def refusal(value: Any, validator: VerdictValidator | None = None) -> str:
    with pytest.raises(InvalidVerdict) as caught:
        (validator or VerdictValidator(PASS, FAIL)).validate(value)
    assert str(caught.value) == caught.value.message
    return caught.value.message


def text_refusal(text: str, validator: VerdictValidator | None = None) -> str:
    with pytest.raises(InvalidVerdict) as caught:
        parse_final_text(text, validator or VerdictValidator(PASS, FAIL))
    return caught.value.message


def test_limits() -> None:
    assert RESULT_MAX_UTF16 == 256_000
    assert FINAL_TEXT_MAX_BYTES == 1024 * 1024
    assert DETAIL_LINES_MAX == 5
    assert DETAIL_PIECE_MAX_UTF16 == 200
    assert RESULT_OVER_SIZE == "over_size: normalized result exceeds 256000 characters"


# --- branch schemas ----------------------------------------------------------------------


def test_branch_schema_closes_the_owner_schema_and_adds_the_verdict() -> None:
    owner = {"properties": {"note": {"type": "string"}}, "required": ["note"]}
    before = copy.deepcopy(owner)
    schema = VerdictValidator(owner, None).branch_schema("GREEN")
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["properties"]["verdict"] == {"type": "string", "const": "GREEN"}
    assert schema["properties"]["note"] == {"type": "string"}
    assert schema["required"] == ["note", "verdict"]
    assert owner == before  # the declaration's schema is never modified


def test_missing_owner_schema_admits_only_the_verdict() -> None:
    validator = VerdictValidator(None, None)
    assert validator.branch_schema("RED") == {
        "type": "object",
        "additionalProperties": False,
        "properties": {"verdict": {"type": "string", "const": "RED"}},
        "required": ["verdict"],
    }
    assert validator.validate({"verdict": "RED"}) == {"verdict": "RED"}
    assert refusal({"verdict": "GREEN", "note": "x"}, validator) == (
        f'{OWNER_MISMATCH}\n- field "note" is not declared.'
    )


def test_each_verdict_uses_its_own_branch() -> None:
    validator = VerdictValidator(PASS, FAIL)
    assert validator.validate({"verdict": "GREEN", "checked": 3}) == {
        "verdict": "GREEN",
        "checked": 3,
    }
    assert validator.validate({"verdict": "RED", "problems": ["a"]})["problems"] == ["a"]
    assert refusal({"verdict": "RED", "checked": 3}).startswith(OWNER_MISMATCH)
    assert refusal({"verdict": "GREEN", "problems": ["a"]}).startswith(OWNER_MISMATCH)


def test_a_remote_reference_in_an_owner_schema_is_refused() -> None:
    with pytest.raises(SchemaError, match="not local"):
        VerdictValidator({"$ref": "https://x.invalid/s"}, None)


def test_branch_schema_rejects_another_verdict() -> None:
    with pytest.raises(ValueError, match="GREEN or RED"):
        VerdictValidator(None, None).branch_schema("YELLOW")  # type: ignore[arg-type]


# --- the verdict --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [{}, {"verdict": "green"}, {"verdict": "PASS"}, {"verdict": 1}, {"verdict": None}],
)
def test_verdict_must_be_green_or_red(value: dict[str, Any]) -> None:
    assert refusal(value) == VERDICT_MISMATCH


@pytest.mark.parametrize("value", [[1], "GREEN", None, 3])
def test_result_must_be_an_object(value: Any) -> None:
    assert refusal(value) == f'{VERDICT_MISMATCH}\n- instancePath "": must be a JSON object'


# --- owner schema mismatches ------------------------------------------------------------


def test_mismatch_names_the_instance_path() -> None:
    assert refusal({"verdict": "GREEN", "checked": 0}) == (
        f'{OWNER_MISMATCH}\n- instancePath "/checked": must be >= 1'
    )
    assert refusal({"verdict": "GREEN"}) == (
        f'{OWNER_MISMATCH}\n- instancePath "": must have the required properties ["checked"]'
    )
    assert refusal({"verdict": "RED", "problems": ["ok", 2]}) == (
        f'{OWNER_MISMATCH}\n- instancePath "/problems/1": must be of type "string"'
    )


@pytest.mark.parametrize(
    ("subschema", "value"),
    [
        ({"const": "expected"}, SECRET),
        ({"enum": ["a", "b"]}, SECRET),
        ({"type": "integer"}, SECRET),
        ({"maxLength": 3}, SECRET),
        ({"pattern": "^[0-9]+$"}, SECRET),
        ({"not": {"type": "string"}}, SECRET),
        ({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, SECRET),
        (False, SECRET),
        ({"type": "object", "additionalProperties": False}, {SECRET: 1}),
        ({"uniqueItems": True}, [SECRET, SECRET]),
    ],
)
def test_messages_never_echo_the_value(subschema: Any, value: Any) -> None:
    owner = {"type": "object", "properties": {"field": subschema}}
    raw = [e.message for e in jsonschema.Draft202012Validator(subschema).iter_errors(value)]
    if subschema != {"const": "expected"}:  # the one keyword whose own message is safe
        assert any(SECRET in m for m in raw)  # jsonschema's message would have leaked it
    message = refusal({"verdict": "GREEN", "field": value}, VerdictValidator(owner, None))
    assert message.startswith(f'{OWNER_MISMATCH}\n- instancePath "')
    assert SECRET not in message


def test_a_false_subschema_names_its_schema_path() -> None:
    owner = {"type": "object", "properties": {"field": False}}
    assert refusal({"verdict": "GREEN", "field": SECRET}, VerdictValidator(owner, None)) == (
        f'{OWNER_MISMATCH}\n- instancePath "": holds a value a false subschema at schema path '
        '"/properties" does not allow'
    )


def test_at_most_five_detail_lines_in_path_order() -> None:
    owner = {
        "type": "object",
        "properties": {f"f{i}": {"type": "integer"} for i in range(7)},
    }
    value = {"verdict": "GREEN", **{f"f{i}": "x" for i in reversed(range(7))}}
    lines = refusal(value, VerdictValidator(owner, None)).splitlines()
    assert lines[0] == OWNER_MISMATCH
    assert lines[1:] == [f'- instancePath "/f{i}": must be of type "integer"' for i in range(5)]


def test_duplicate_detail_lines_are_merged() -> None:
    owner = {"type": "object", "required": ["a", "b"], "properties": {"a": {}, "b": {}}}
    assert refusal({"verdict": "GREEN"}, VerdictValidator(owner, None)) == (
        f'{OWNER_MISMATCH}\n- instancePath "": must have the required properties ["a","b"]'
    )


def test_instance_paths_are_json_pointers_in_json_quotes() -> None:
    owner = {
        "type": "object",
        "required": ["line\nbreak"],
        "properties": {"a/b": {"properties": {"c~": {"type": "string"}}}},
    }
    lines = refusal(
        {"verdict": "GREEN", "a/b": {"c~": 1}}, VerdictValidator(owner, None)
    ).splitlines()
    assert '- instancePath "/a~1b/c~0": must be of type "string"' in lines
    assert '- instancePath "": must have the required properties ["line\\nbreak"]' in lines
    assert len(lines) == 3  # a newline in a name never starts a line of its own


def test_instance_paths_are_truncated_past_the_limit() -> None:
    at_limit = "k" * (DETAIL_PIECE_MAX_UTF16 - 1)  # the pointer adds a leading "/"
    past = "k" * DETAIL_PIECE_MAX_UTF16
    owner = {
        "type": "object",
        "properties": {at_limit: {"type": "integer"}, past: {"type": "integer"}},
    }
    message = refusal({"verdict": "GREEN", at_limit: "x", past: "x"}, VerdictValidator(owner, None))
    lines = message.splitlines()
    assert f'- instancePath "/{at_limit}": must be of type "integer"' in lines
    cut = "/" + past[: DETAIL_PIECE_MAX_UTF16 - 1]
    assert f'- instancePath "{cut}{TRUNCATED_SUFFIX}": must be of type "integer"' in lines


def test_truncation_counts_utf16_units_and_keeps_surrogate_pairs_whole() -> None:
    key = "k" * (DETAIL_PIECE_MAX_UTF16 - 2) + ASTRAL  # pointer: 1 + 198 + 2 = 201 units
    owner = {"type": "object", "properties": {key: {"type": "integer"}}}
    line = refusal({"verdict": "GREEN", key: "x"}, VerdictValidator(owner, None)).splitlines()[1]
    assert line == (
        f'- instancePath "/{"k" * (DETAIL_PIECE_MAX_UTF16 - 2)}{TRUNCATED_SUFFIX}": '
        'must be of type "integer"'
    )


def test_long_messages_are_truncated() -> None:
    owner = {"type": "object", "properties": {"a": {"const": "c" * 500}}}
    line = refusal({"verdict": "GREEN", "a": "x"}, VerdictValidator(owner, None)).splitlines()[1]
    message = line.split(": ", 1)[1]
    assert message.endswith(TRUNCATED_SUFFIX)
    assert utf16_length(message) == DETAIL_PIECE_MAX_UTF16 + len(TRUNCATED_SUFFIX)


# --- undeclared fields ----------------------------------------------------------------


def test_pattern_properties_cannot_widen_the_envelope() -> None:
    owner = {"type": "object", "patternProperties": {"^x": {"type": "string"}}}
    assert refusal({"verdict": "GREEN", "xa": "s"}, VerdictValidator(owner, None)) == (
        f'{OWNER_MISMATCH}\n- field "xa" is not declared.'
    )


def test_undeclared_fields_are_listed_at_most_five() -> None:
    owner = {"type": "object", "patternProperties": {"^x": {}}}
    value = {"verdict": "GREEN", **{f"x{i}": 1 for i in range(7)}}
    lines = refusal(value, VerdictValidator(owner, None)).splitlines()
    assert lines == [OWNER_MISMATCH] + [f'- field "x{i}" is not declared.' for i in range(5)]


def test_failing_instance_paths_come_before_undeclared_fields_five_lines_in_all() -> None:
    """Seed 002: five undeclared fields and two type errors show the two paths first."""
    owner = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}
    value = {"verdict": "GREEN", "a": "x", "b": 1, **{f"u{i}": 1 for i in range(5)}}
    lines = refusal(value, VerdictValidator(owner, None)).splitlines()
    assert lines == [
        OWNER_MISMATCH,
        '- instancePath "/a": must be of type "integer"',
        '- instancePath "/b": must be of type "string"',
        '- field "u0" is not declared.',
        '- field "u1" is not declared.',
        '- field "u2" is not declared.',
    ]


def test_a_root_reference_cannot_widen_the_envelope() -> None:
    owner = {"$ref": "#/$defs/r", "$defs": {"r": {"properties": {"a": {"type": "string"}}}}}
    assert refusal({"verdict": "GREEN", "a": "s"}, VerdictValidator(owner, None)).startswith(
        OWNER_MISMATCH
    )


# --- size and normalization -------------------------------------------------------------


def padded(units: int, filler: str = "x") -> dict[str, Any]:
    """A GREEN result with a ``note`` whose compact JSON is exactly ``units`` UTF-16 units."""
    overhead = utf16_length(compact_json({"verdict": "GREEN", "note": ""}))
    count, rest = divmod(units - overhead, utf16_length(filler))
    value = {"verdict": "GREEN", "note": filler * count + "x" * rest}
    assert utf16_length(compact_json(value)) == units
    return value


NOTE = {"type": "object", "properties": {"note": {"type": "string"}}}


@pytest.mark.parametrize("filler", ["x", ASTRAL])
def test_result_at_the_size_limit_passes(filler: str) -> None:
    value = padded(RESULT_MAX_UTF16, filler)
    assert VerdictValidator(NOTE, None).validate(value) == value


@pytest.mark.parametrize("filler", ["x", ASTRAL])
def test_result_one_past_the_size_limit_fails(filler: str) -> None:
    assert refusal(padded(RESULT_MAX_UTF16 + 1, filler), VerdictValidator(NOTE, None)) == (
        RESULT_OVER_SIZE
    )


def test_the_normalized_result_is_a_json_copy() -> None:
    value = {"verdict": "RED", "problems": ("a",)}
    result = VerdictValidator(PASS, FAIL).validate(value)
    assert result == {"verdict": "RED", "problems": ["a"]}
    result["problems"].append("b")
    assert value["problems"] == ("a",)


def test_non_json_data_is_refused() -> None:
    assert refusal({"verdict": "GREEN", "checked": float("nan")}) == NOT_JSON_DATA
    assert refusal({"verdict": "GREEN", "checked": object()}) == NOT_JSON_DATA


def test_error_codes() -> None:
    assert InvalidVerdict(RESULT_OVER_SIZE).code == "over_size"
    assert InvalidVerdict(VERDICT_MISMATCH).code == "schema_mismatch"
    assert InvalidVerdict(EMPTY_TEXT).code == "invalid_json"


# --- an Agent's final text ------------------------------------------------------------


def test_plain_json_text_is_parsed_and_validated() -> None:
    text = '  {"verdict": "GREEN", "checked": 2}\n'
    assert parse_final_text(text, VerdictValidator(PASS, FAIL)) == {
        "verdict": "GREEN",
        "checked": 2,
    }
    assert text_refusal('{"verdict": "GREEN", "checked": 0}').startswith(OWNER_MISMATCH)


@pytest.mark.parametrize("text", ["", " ", "\n\t \r\n"])
def test_empty_text_is_refused(text: str) -> None:
    assert text_refusal(text) == EMPTY_TEXT


def text_of_bytes(size: int, pad: str = " ") -> str:
    """A valid answer of exactly ``size`` UTF-8 bytes, padded after the object."""
    head = '{"verdict":"RED","problems":["p"]}'
    count, rest = divmod(size - len(head), len(pad.encode()))
    text = head + pad * count + " " * rest
    assert len(text.encode()) == size
    return text


@pytest.mark.parametrize("pad", [" ", "\u3000"])  # U+3000: whitespace of 3 UTF-8 bytes
def test_final_text_size_limit_counts_utf8_bytes(pad: str) -> None:
    validator = VerdictValidator(PASS, FAIL)
    at_limit = text_of_bytes(FINAL_TEXT_MAX_BYTES, pad)
    assert parse_final_text(at_limit, validator)["verdict"] == "RED"
    assert text_refusal(text_of_bytes(FINAL_TEXT_MAX_BYTES + 1, pad)) == TEXT_OVER_SIZE


def test_an_oversized_blank_text_is_over_size() -> None:
    assert text_refusal(" " * (FINAL_TEXT_MAX_BYTES + 1)) == TEXT_OVER_SIZE


@pytest.mark.parametrize(
    "text",
    [
        "GREEN",
        'Here is my verdict: {"verdict": "RED", "problems": ["p"]}',
        '{"verdict": "RED", "problems": ["p"]} That is all.',
        '{"verdict": "RED", "problems": ["p"]}{"verdict": "RED", "problems": ["p"]}',
        '{"verdict": "GREEN", "checked": NaN}',
        '{"verdict": "GREEN", "checked": Infinity}',
        "[" * 100_000 + "]" * 100_000,
    ],
)
def test_non_json_text_is_refused(text: str) -> None:
    assert text_refusal(text).startswith(NOT_JSON_TEXT)


def test_a_decode_error_names_line_and_column_but_no_value() -> None:
    assert text_refusal('{\n  "verdict": GREEN\n}') == (
        f"{NOT_JSON_TEXT} (line 2, column 14: Expecting value)"
    )


@pytest.mark.parametrize("text", ["[]", '"GREEN"', "1", "null", '[{"verdict": "GREEN"}]'])
def test_json_that_is_not_an_object_is_refused(text: str) -> None:
    assert text_refusal(text) == NOT_AN_OBJECT


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"verdict": "RED", "problems": ["p"]}\n```',
        '```JSON\r\n{"verdict": "RED", "problems": ["p"]}\r\n```',
        '\n```\n{"verdict": "RED",\n "problems": ["p"]}\n```\n',
    ],
)
def test_one_fenced_block_is_tolerated(text: str) -> None:
    assert parse_final_text(text, VerdictValidator(PASS, FAIL))["problems"] == ["p"]


@pytest.mark.parametrize(
    "text",
    [
        'Verdict:\n```json\n{"verdict": "RED", "problems": ["p"]}\n```',
        '```json\n{"verdict": "RED", "problems": ["p"]}\n```\nDone.',
        '```json\n{"verdict": "RED", "problems": ["p"]}\n```\n```json\n{}\n```',
        '```python\n{"verdict": "RED", "problems": ["p"]}\n```',
        '```json {"verdict": "RED", "problems": ["p"]} ```',
    ],
)
def test_prose_around_a_fence_is_refused(text: str) -> None:
    assert text_refusal(text).startswith(NOT_JSON_TEXT)


def test_repair_message() -> None:
    error = InvalidVerdict(f'{OWNER_MISMATCH}\n- instancePath "/checked": must be >= 1')
    assert repair_message(error) == (
        "Your final response did not match the required schema: "
        f'{OWNER_MISMATCH}\n- instancePath "/checked": must be >= 1\n'
        "Return only one JSON object matching the schema."
    )


def test_human_fields_follow_the_same_rules() -> None:
    """Human submissions reuse ``validate``; the CLI inserts ``verdict`` from --verdict."""
    fields = json.loads('{"problems": ["typo"]}')
    assert VerdictValidator(PASS, FAIL).validate({**fields, "verdict": "RED"}) == {
        "problems": ["typo"],
        "verdict": "RED",
    }
