"""Schema admission: standard JSON Schema, local references only, bounded size."""

from __future__ import annotations

from typing import Any

import pytest
import referencing.exceptions

from artifactize.domain.json_schema import (
    SCHEMA_MAX_BYTES,
    SchemaError,
    admit_schema,
    compile_validator,
)
from artifactize.domain.text import compact_json_size

REMOTE = "https://example.invalid/schema.json"


def admit(schema: Any, *, require_object_root: bool = False) -> None:
    admit_schema(schema, require_object_root=require_object_root)


def refusal(schema: Any, *, require_object_root: bool = False) -> str:
    with pytest.raises(SchemaError) as info:
        admit(schema, require_object_root=require_object_root)
    return str(info.value)


# --- root ------------------------------------------------------------------------------


def test_object_root_required_only_when_asked() -> None:
    admit({"type": "string"})
    admit({})
    admit({"type": "object"}, require_object_root=True)
    assert refusal({"type": "string"}, require_object_root=True) == (
        'the root must declare type = "object"'
    )
    assert "type" in refusal({}, require_object_root=True)


@pytest.mark.parametrize("root_type", [["object"], ["object", "null"], "Object"])
def test_object_root_must_be_exactly_object(root_type: Any) -> None:
    refusal({"type": root_type}, require_object_root=True)


@pytest.mark.parametrize("schema", [True, False, [], "object", 1, None])
def test_a_schema_must_be_a_table(schema: Any) -> None:
    assert refusal(schema) == "a schema must be a table (a JSON object)"


def test_the_default_tool_schema_is_admitted() -> None:
    admit({"type": "object", "additionalProperties": False}, require_object_root=True)


# --- references ----------------------------------------------------------------------


def test_local_json_pointer_reference() -> None:
    schema = {
        "type": "object",
        "$defs": {"page": {"type": "string", "minLength": 1}},
        "properties": {"page": {"$ref": "#/$defs/page"}},
    }
    admit(schema, require_object_root=True)
    validator = compile_validator(schema)
    assert validator.is_valid({"page": "intro"})
    assert not validator.is_valid({"page": ""})


def test_local_anchor_reference() -> None:
    schema = {
        "type": "object",
        "$defs": {"page": {"$anchor": "page", "type": "string"}},
        "properties": {"page": {"$ref": "#page"}},
    }
    admit(schema)
    validator = compile_validator(schema)
    assert validator.is_valid({"page": "x"})
    assert not validator.is_valid({"page": 1})


def test_root_and_property_pointers() -> None:
    admit({"properties": {"a": {"type": "integer"}, "b": {"$ref": "#/properties/a"}}})
    admit({"properties": {"tree": {"items": {"$ref": "#"}}}})


def test_composition_and_other_standard_features() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"oneOf": [{"type": "integer", "multipleOf": 2}, {"type": "string"}]},
            "s": {"allOf": [{"minLength": 1}, {"pattern": "^[a-z]+$"}]},
        },
        "if": {"required": ["n"]},
        "then": {"required": ["s"]},
        "dependentRequired": {"s": ["n"]},
        "additionalProperties": False,
    }
    admit(schema, require_object_root=True)
    validator = compile_validator(schema)
    assert validator.is_valid({"n": 2, "s": "ab"})
    assert not validator.is_valid({"n": 2})
    assert not validator.is_valid({"n": 3, "s": "ab"})


def test_draft_07_definitions() -> None:
    admit(
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"x": {"type": "string"}},
            "properties": {"a": {"$ref": "#/definitions/x"}},
        }
    )


@pytest.mark.parametrize(
    "ref",
    [REMOTE, "http://example.invalid/s.json#/x", "file:///etc/passwd", "other.json", "./x.json#/a"],
)
def test_non_local_references_are_refused(ref: str) -> None:
    message = refusal({"type": "object", "properties": {"a": {"$ref": ref}}})
    assert message == f"$ref {ref!r} is not local; remote and file references are refused"


def test_remote_reference_in_an_unused_definition_is_refused() -> None:
    refusal({"$defs": {"unused": {"$ref": REMOTE}}})


@pytest.mark.parametrize("ref", ["#/$defs/missing", "#/properties/nope", "#nowhere", "#/$defs/x/y"])
def test_unresolvable_local_references_are_refused(ref: str) -> None:
    message = refusal({"$defs": {"x": {"type": "string"}}, "properties": {"a": {"$ref": ref}}})
    assert message == f"$ref {ref!r} does not resolve inside the schema"


def test_dynamic_references_are_local_too() -> None:
    admit({"$dynamicAnchor": "meta", "properties": {"a": {"$dynamicRef": "#meta"}}})
    refusal({"properties": {"a": {"$dynamicRef": REMOTE}}})


@pytest.mark.parametrize("keyword", ["const", "enum", "default", "examples"])
def test_ref_strings_inside_data_are_not_references(keyword: str) -> None:
    data: Any = {"$ref": REMOTE}
    if keyword in ("enum", "examples"):
        data = [data]
    admit({"type": "object", "properties": {"a": {keyword: data}}}, require_object_root=True)


def test_ref_inside_const_data_is_plain_data_when_validating() -> None:
    schema = {"const": {"$ref": REMOTE}}
    admit(schema)
    validator = compile_validator(schema)
    assert validator.is_valid({"$ref": REMOTE})
    assert not validator.is_valid({})


@pytest.mark.parametrize(
    "map_keyword", ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]
)
@pytest.mark.parametrize("name", ["const", "enum", "default", "examples"])
def test_schemas_named_like_data_keywords_are_still_checked(map_keyword: str, name: str) -> None:
    refusal({map_keyword: {name: {"$ref": REMOTE}}})


def test_a_property_called_ref_is_not_a_reference() -> None:
    admit({"properties": {"$ref": {"type": "string"}}, "required": ["$ref"]})


# --- keyword values --------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"minimum": "no"},
        {"type": "nope"},
        {"required": "a"},
        {"properties": []},
        {"minLength": -1},
        {"additionalProperties": "no"},
        {"properties": {"a": {"maxItems": 1.5}}},
    ],
)
def test_invalid_keyword_values_are_refused(schema: dict[str, Any]) -> None:
    assert refusal(schema).startswith("invalid JSON Schema at ")


def test_invalid_keyword_error_names_the_schema_location() -> None:
    message = refusal({"properties": {"a": {"minimum": "no"}}})
    assert message.startswith("invalid JSON Schema at properties/a/minimum: ")


def test_unknown_keywords_are_allowed() -> None:
    admit({"type": "object", "x-owner": {"anything": [1, 2]}, "title": "t"})


# --- size ----------------------------------------------------------------------------


def _schema_of_size(size: int) -> dict[str, Any]:
    base: dict[str, Any] = {"type": "object", "description": ""}
    padding = size - compact_json_size(base)
    return {"type": "object", "description": "x" * padding}


def test_schema_cap_constant() -> None:
    assert SCHEMA_MAX_BYTES == 8 * 1024 * 1024


def test_schema_of_exactly_8_mib_is_admitted() -> None:
    schema = _schema_of_size(SCHEMA_MAX_BYTES)
    assert compact_json_size(schema) == SCHEMA_MAX_BYTES
    admit(schema, require_object_root=True)


def test_schema_one_byte_over_8_mib_is_refused() -> None:
    schema = _schema_of_size(SCHEMA_MAX_BYTES + 1)
    assert compact_json_size(schema) == SCHEMA_MAX_BYTES + 1
    assert refusal(schema, require_object_root=True) == "the schema exceeds 8 MiB"


def test_schema_size_counts_utf8_bytes() -> None:
    # "é" is two UTF-8 bytes: the limit is in bytes of compact JSON, not in characters.
    base: dict[str, Any] = {"description": ""}
    room = SCHEMA_MAX_BYTES - compact_json_size(base)
    schema = {"description": "é" * (room // 2) + "x" * (room % 2)}
    assert compact_json_size(schema) == SCHEMA_MAX_BYTES
    admit(schema)
    schema = {"description": "é" * (room // 2 + 1)}
    assert compact_json_size(schema) > SCHEMA_MAX_BYTES
    refusal(schema)


# --- compiled validators -----------------------------------------------------------------


def test_compile_validator_never_retrieves() -> None:
    # Not admissible, but even if it reached compilation the registry refuses to fetch.
    schema = {"anyOf": [{"type": "integer"}, {"$ref": REMOTE}]}
    validator = compile_validator(schema)
    assert validator.is_valid(1)  # the remote branch is never evaluated
    with pytest.raises(referencing.exceptions.Unresolvable):
        validator.is_valid("x")


def test_compile_validator_refuses_file_references() -> None:
    validator = compile_validator({"$ref": "file:///etc/hostname"})
    with pytest.raises(referencing.exceptions.Unresolvable):
        validator.validate(1)


def test_schema_defaults_never_change_the_instance() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer", "default": 3}}}
    admit(schema)
    instance: dict[str, Any] = {}
    assert compile_validator(schema).is_valid(instance)
    assert instance == {}


@pytest.mark.parametrize("number", [float("inf"), float("-inf"), float("nan")])
def test_a_number_json_cannot_write_is_refused_not_raised(number: float) -> None:
    # The declaration reader refuses TOML's inf and nan first; this is the schema's own rule,
    # found by the declaration fuzz test, which hands parsed documents straight to the parser.
    schema = {"type": "object", "properties": {"name": {"maximum": number}}}
    assert refusal(schema) == "the schema holds a number JSON cannot represent (NaN or infinity)"
