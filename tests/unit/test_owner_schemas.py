"""Owner-schema declaration rules for ``pass_schema`` / ``fail_schema`` (reviews-and-store §1.3)."""

from __future__ import annotations

import tomllib

import pytest

from artifactize.domain.declarations.diagnostics import ConfigError, KeyProblems
from artifactize.domain.declarations.evals import (
    REFUSED_ROOT_COMBINATORS,
    RESERVED_RESULT_FIELDS,
    owner_schema_problems,
)
from artifactize.domain.declarations.model import ArtifactKind
from artifactize.domain.declarations.parse import parse_declaration
from artifactize.domain.reviews.verdicts import InvalidVerdict, VerdictValidator
from artifactize.domain.use_cases.config_service import ConfigService
from tests.fakes.filesystem import MemoryFilesystem

SCHEMA_KEYS = ("pass_schema", "fail_schema")
HEAD = (
    'name = "app"\n[evals.e]\ntitle = "T"\nprofile = { kind = "human" }\n'
    'payload.instruction = "Look."\n'
)


def parse(key: str, schema_toml: str) -> tuple[bool, list[tuple[str, str]]]:
    """Parse an eval whose ``key`` is ``schema_toml``; (eval kept?, problems)."""
    problems = KeyProblems()
    declaration = parse_declaration(
        tomllib.loads(f"{HEAD}{key} = {schema_toml}\n"),
        ArtifactKind.FOLDER,
        target=None,
        is_root=False,
        problems=problems,
    )
    return declaration is not None, problems.items


def accepted(key: str, schema_toml: str) -> None:
    assert parse(key, schema_toml) == (True, [])


def refused(key: str, schema_toml: str) -> list[tuple[str, str]]:
    kept, problems = parse(key, schema_toml)
    assert not kept
    assert problems
    return problems


def test_the_reserved_names() -> None:
    assert RESERVED_RESULT_FIELDS == (
        "verdict",
        "reference",
        "reusedFrom",
        "executionProvenance",
        "attemptId",
        "provider",
        "model",
        "stdout",
        "stderr",
        "durationMs",
        "exitCode",
    )
    assert REFUSED_ROOT_COMBINATORS == ("allOf", "anyOf", "oneOf", "not")


@pytest.mark.parametrize("key", SCHEMA_KEYS)
@pytest.mark.parametrize(
    "schema",
    [
        "{}",
        '{ type = "object" }',
        "{ additionalProperties = false }",
        '{ type = "object", required = ["note"], properties = { note = { type = "string" } } }',
        # combinators and reserved names below the root are the owner's business
        '{ properties = { a = { anyOf = [{ type = "string" }, { type = "integer" }] } } }',
        '{ properties = { a = { type = "object", properties = { verdict = {} } } } }',
        '{ properties = { Verdict = {}, verdicts = {} }, required = ["Verdict"] }',
        "{ properties = { a = { additionalProperties = true } } }",
    ],
)
def test_plain_object_schemas_are_accepted(key: str, schema: str) -> None:
    accepted(key, schema)


@pytest.mark.parametrize("key", SCHEMA_KEYS)
@pytest.mark.parametrize(
    ("type_toml", "shown"),
    [('"string"', '"string"'), ('["object", "null"]', '["object","null"]'), ('"array"', '"array"')],
)
def test_type_must_be_object(key: str, type_toml: str, shown: str) -> None:
    assert refused(key, f"{{ type = {type_toml} }}") == [
        (
            f"evals.e.{key}.type",
            f'must be "object" when given (a verdict result is a JSON object), got {shown}',
        )
    ]


@pytest.mark.parametrize("key", SCHEMA_KEYS)
@pytest.mark.parametrize("keyword", ["allOf", "anyOf", "oneOf"])
def test_root_combinators_are_refused(key: str, keyword: str) -> None:
    problems = refused(key, f'{{ {keyword} = [{{ type = "object" }}] }}')
    assert problems == [
        (
            f"evals.e.{key}.{keyword}",
            f"`{keyword}` is not allowed at the root of a result schema; the result must stay "
            "one object with declared properties (use it inside a property)",
        )
    ]


@pytest.mark.parametrize("key", SCHEMA_KEYS)
def test_root_not_is_refused(key: str) -> None:
    ((path, message),) = refused(key, '{ not = { required = ["a"] } }')
    assert path == f"evals.e.{key}.not"
    assert message.startswith("`not` is not allowed at the root")


@pytest.mark.parametrize("key", SCHEMA_KEYS)
@pytest.mark.parametrize("value", ["true", "{}", '{ type = "string" }'])
def test_additional_properties_must_be_false(key: str, value: str) -> None:
    assert refused(key, f"{{ additionalProperties = {value} }}") == [
        (
            f"evals.e.{key}.additionalProperties",
            "must be false when given; every result field must be declared in `properties`",
        )
    ]


def assert_reserved(key: str, name: str, schema_toml: str, where: str) -> None:
    """``schema_toml`` is refused with one problem: ``name``, at ``where``, is reserved."""
    assert refused(key, schema_toml) == [
        (
            f"evals.e.{key}.{where}",
            f"`{name}` is a result field reserved by artifactize; choose another name",
        )
    ]


@pytest.mark.parametrize("key", SCHEMA_KEYS)
@pytest.mark.parametrize("name", RESERVED_RESULT_FIELDS)
def test_reserved_names_cannot_be_declared(key: str, name: str) -> None:
    assert_reserved(key, name, f"{{ properties = {{ {name} = {{}} }} }}", f"properties.{name}")


@pytest.mark.parametrize("key", SCHEMA_KEYS)
@pytest.mark.parametrize("name", RESERVED_RESULT_FIELDS)
def test_reserved_names_cannot_be_required(key: str, name: str) -> None:
    assert_reserved(key, name, f'{{ required = ["note", "{name}"] }}', "required[1]")


def test_every_problem_is_reported_with_the_compile_error() -> None:
    problems = refused(
        "fail_schema",
        '{ type = "string", oneOf = [], additionalProperties = true, '
        'properties = { stdout = {} }, required = ["exitCode"], minProperties = "x" }',
    )
    assert [path for path, _ in problems] == [
        "evals.e.fail_schema.type",
        "evals.e.fail_schema.oneOf",
        "evals.e.fail_schema.additionalProperties",
        "evals.e.fail_schema.properties.stdout",
        "evals.e.fail_schema.required[0]",
        "evals.e.fail_schema",
    ]
    assert problems[-1][1].startswith("invalid JSON Schema")


def test_problems_come_as_key_segments() -> None:
    assert owner_schema_problems({"properties": {"a b": {}, "verdict": {}}}) == [
        (
            ("properties", "verdict"),
            "`verdict` is a result field reserved by artifactize; choose another name",
        )
    ]


def test_a_problem_names_the_file_and_line() -> None:
    declaration = (
        b'name = "app"\n'
        b"\n"
        b"[evals.e]\n"
        b'title = "T"\n'
        b'profile = { kind = "human" }\n'
        b'payload.instruction = "Look."\n'
        b"\n"
        b"[evals.e.pass_schema]\n"
        b'type = "object"\n'
        b"properties.verdict = { const = true }\n"
    )
    filesystem = MemoryFilesystem({"/repo": {"index.artf": declaration}})
    with pytest.raises(ConfigError) as caught:
        ConfigService(filesystem).load("/repo")
    (problem,) = caught.value.problems
    assert problem.render() == (
        "index.artf:10: evals.e.pass_schema.properties.verdict: "
        "`verdict` is a result field reserved by artifactize; choose another name"
    )


def test_an_accepted_schema_keeps_its_meaning_inside_the_verdict_envelope() -> None:
    """What the declaration rules admit, the verdict validator enforces as written."""
    schema = {
        "type": "object",
        "required": ["approved"],
        "additionalProperties": False,
        "properties": {"approved": {"const": True}},
    }
    assert owner_schema_problems(schema) == []
    validator = VerdictValidator(schema, None)
    assert validator.validate({"verdict": "GREEN", "approved": True})["approved"] is True
    with pytest.raises(InvalidVerdict):
        validator.validate({"verdict": "GREEN", "approved": False})
