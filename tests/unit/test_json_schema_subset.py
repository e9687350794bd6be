"""The compiled subset check answers exactly as ``jsonschema`` does (``compile_validator``'s
``is_valid``), on generated schemas and instances and on the team store's record shapes."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from artifactize.domain.json_schema import compile_validator
from artifactize.domain.json_schema_subset import compile_subset_check
from artifactize.domain.reviews.remote.record_format import ENVELOPE_SHAPE, RECORD_SHAPE
from artifactize.ports.statuses import ExecutionStatus
from tests.support.remote_records import KINDS, execution

NAMES = st.sampled_from(["a", "b", "kind", "x-y", "1"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 1.5, -2.0]),
    st.sampled_from(["", "a", "ab", "x-y", "A1", "é", "12", "GREEN"]),
)
# What our own documents hold beside plain JSON: enum members that are strings, tuples.
PYTHON_VALUES = st.sampled_from(
    [ExecutionStatus.GREEN, ExecutionStatus.RED, ("a", 1), (), Decimal("-0.5"), 10**400, 2.0**70]
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=8,
)
INSTANCES = st.recursive(
    SCALARS | PYTHON_VALUES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=8,
)
TYPES = st.sampled_from(["object", "array", "string", "integer", "number", "boolean", "null"])


def _schemas(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keywords = st.fixed_dictionaries(
        {},
        optional={
            "type": TYPES | st.lists(TYPES, min_size=1, max_size=3, unique=True),
            "properties": st.dictionaries(NAMES, inner, max_size=2),
            "additionalProperties": inner,
            "propertyNames": inner,
            "required": st.lists(NAMES, max_size=2, unique=True),
            "minProperties": st.integers(0, 3),
            "items": inner,
            "enum": st.lists(JSON | PYTHON_VALUES, min_size=1, max_size=3),
            "const": JSON | PYTHON_VALUES,
            "minLength": st.integers(0, 3),
            "maxLength": st.integers(0, 3),
            "pattern": st.sampled_from(["^a", "[0-9]", "^$", "^[a-z-]+$", "é"]),
            "minimum": st.sampled_from([0, 1, -1.5, 2.0]),
            "allOf": st.lists(inner, min_size=1, max_size=2),
            "not": inner,
            "title": st.just("a title"),
            "x-problem": st.just("a template"),
        },
    )
    return keywords


SCHEMAS: st.SearchStrategy[Any] = st.recursive(st.booleans() | st.just({}), _schemas, max_leaves=6)


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(schema=SCHEMAS, instance=INSTANCES, strict=st.booleans())
def test_the_subset_check_answers_as_jsonschema(schema: Any, instance: Any, strict: bool) -> None:
    check = compile_subset_check(schema, strict_integers=strict)
    assert check is not None
    expected = compile_validator(
        schema if isinstance(schema, dict) else {"allOf": [schema]}, strict_integers=strict
    ).is_valid(instance)
    assert check(instance) is expected


EDGES: list[tuple[dict[str, Any], Any]] = [
    ({"minimum": 0}, Decimal("-0.5")),  # a number that is neither int nor float
    ({"type": "number"}, Decimal("1")),
    ({"type": "integer"}, 2.0),
    ({"type": "integer"}, 10**400),  # past any float
    ({"minimum": 1}, 10**400),
    ({"enum": ["GREEN"]}, ExecutionStatus.GREEN),  # a string enum member
    ({"const": ExecutionStatus.RED}, "RED"),
    ({"const": 1}, True),
    ({"const": 0}, False),
    ({"const": 1.0}, 1),
    ({"const": [1, "a"]}, (1, "a")),  # sequences compare member by member
    ({"type": "array"}, ("a",)),
    ({"items": {"type": "string"}}, ("a", 1)),
    ({"const": {"a": [True]}}, {"a": [1]}),
    ({"minLength": 2}, ExecutionStatus.GREEN),
    ({"pattern": "^G"}, ExecutionStatus.GREEN),
]


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize(("schema", "instance"), EDGES)
def test_the_edges_of_json_equality_and_types_answer_as_jsonschema(
    schema: dict[str, Any], instance: Any, strict: bool
) -> None:
    check = compile_subset_check(schema, strict_integers=strict)
    assert check is not None
    expected = compile_validator(schema, strict_integers=strict).is_valid(instance)
    assert check(instance) is expected


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/a", "$defs": {"a": {}}},
        {"patternProperties": {"^a": {}}},
        {"maxItems": 3},
        {"anyOf": [{}]},
        {"type": "thing"},
        {"minLength": -1},
        {"properties": {"a": {"format": "date"}}},
    ],
)
def test_a_schema_outside_the_subset_is_not_compiled(schema: dict[str, Any]) -> None:
    assert compile_subset_check(schema) is None


def _record() -> dict[str, Any]:
    """A record as ``remote push`` builds it: its verdict the status enum's member."""
    from artifactize.domain.reviews.remote.records import build_record

    record = dict(build_record(execution(), KINDS, "full"))
    record["verdict"] = ExecutionStatus(str(record["verdict"]))
    return record


def _mutations(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The record with one value changed at each place: removed, nulled, retyped, emptied."""
    found: list[dict[str, Any]] = []

    def visit(path: list[Any], node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for name, value in list(items):
            replacements: tuple[Any, ...] = (None, 1, 1.5, True, "", "x", [], {}, "AAA", -1)
            for replacement in replacements:
                changed = copy.deepcopy(record)
                holder = changed
                for step in path:
                    holder = holder[step]
                holder[name] = replacement
                found.append(changed)
            if isinstance(node, dict):
                removed = copy.deepcopy(record)
                holder = removed
                for step in path:
                    holder = holder[step]
                del holder[name]
                found.append(removed)
            if isinstance(value, (dict, list)):
                visit([*path, name], value)

    visit([], record)
    extra = copy.deepcopy(record)
    extra["unknown"] = 1
    return [*found, extra]


@pytest.mark.parametrize("shape", [RECORD_SHAPE, ENVELOPE_SHAPE], ids=["record", "envelope"])
def test_the_record_shapes_compile_and_agree_on_every_mutation(shape: dict[str, Any]) -> None:
    check = compile_subset_check(shape, strict_integers=True)
    assert check is not None, "a record shape left the subset: the fast path is gone"
    validator = compile_validator(shape, strict_integers=True)
    record = _record()
    assert check(record) and validator.is_valid(record)
    mutations = _mutations(record)
    assert len(mutations) > 200
    disagreements = [m for m in mutations if check(m) is not validator.is_valid(m)]
    assert disagreements == []
    assert not all(check(m) for m in mutations)
