"""A fast yes/no check for our own document shapes, compiled from the very schema that
``jsonschema`` checks them with.

``jsonschema`` walks a schema generically for every instance (a validator evolved per
subschema, a generator of errors per keyword): about 0.45 ms for one team-store record, the
most of what ``remote push`` and a Run's mirror of the store spend per record. The shapes
we write ourselves use a dozen keywords, so ``compile_subset_check`` turns such a schema
into nested closures that answer only *valid or not*. It is a fast path, never the judge:
a ``False`` goes back to ``jsonschema``, whose first error names the problem, and a schema
with any keyword outside the subset is not compiled at all (``None``). Its answers are held
against ``jsonschema``'s by a property test over generated schemas and instances
(``tests/unit/test_json_schema_subset.py``).

The subset, with Draft 2020-12 meaning: ``type`` (one or a list; ``integer`` as
``compile_validator`` reads it: strictly a JSON integer when ``strict_integers``),
``properties``, ``additionalProperties``, ``propertyNames``, ``required``,
``minProperties``, ``items``, ``enum``, ``const``, ``minLength``, ``maxLength``, ``pattern``,
``minimum``,
``allOf``, ``not``, boolean schemas, and annotations (``title``, ``description``, and our
``x-…`` keys), which check nothing.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Check = Callable[[Any], bool]

ANNOTATIONS = frozenset({"title", "description", "$comment", "default", "examples"})
_CHECKED = frozenset(
    {
        "type",
        "properties",
        "additionalProperties",
        "propertyNames",
        "required",
        "minProperties",
        "items",
        "enum",
        "const",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "allOf",
        "not",
    }
)


class _Unsupported(Exception):
    """A keyword (or a keyword's value) outside the subset."""


def compile_subset_check(schema: Any, *, strict_integers: bool = False) -> Check | None:
    """A function telling whether an instance is valid against ``schema``, exactly as
    ``compile_validator(schema, strict_integers=…).is_valid`` tells; None when the schema
    uses anything outside the subset (the module's docstring)."""
    try:
        return _compile(schema, strict_integers)
    except _Unsupported:
        return None


def _compile(schema: Any, strict: bool) -> Check:
    if schema is True:
        return _always
    if schema is False:
        return _never
    if not isinstance(schema, Mapping):
        raise _Unsupported
    checks: list[Check] = []
    for keyword in schema:
        if keyword in ANNOTATIONS or keyword.startswith("x-"):
            continue
        if keyword not in _CHECKED:
            raise _Unsupported
    if "type" in schema:
        checks.append(_type_check(schema["type"], strict))
    object_checks = _object_checks(schema, strict)
    if object_checks:
        checks.append(_when(dict, _all_of(object_checks)))
    if "items" in schema:
        item = _compile(schema["items"], strict)
        checks.append(_when(list, lambda value: all(map(item, value))))
    if "enum" in schema:
        options = schema["enum"]
        if not isinstance(options, list):
            raise _Unsupported
        checks.append(lambda value: any(_equal(value, option) for option in options))
    if "const" in schema:
        constant = schema["const"]
        checks.append(lambda value: _equal(value, constant))
    checks.extend(_string_checks(schema))
    if "minimum" in schema:
        minimum = _number(schema["minimum"])
        checks.append(lambda value: not _is_number(value) or value >= minimum)
    if "allOf" in schema:
        if not isinstance(schema["allOf"], list):
            raise _Unsupported
        checks.extend(_compile(part, strict) for part in schema["allOf"])
    if "not" in schema:
        negated = _compile(schema["not"], strict)
        checks.append(lambda value: not negated(value))
    return _all_of(checks)


def _object_checks(schema: Mapping[str, Any], strict: bool) -> list[Check]:
    checks: list[Check] = []
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        raise _Unsupported
    named = {name: _compile(sub, strict) for name, sub in properties.items()}
    if named:
        pairs = tuple(named.items())

        def properties_hold(value: dict[str, Any]) -> bool:
            for name, check in pairs:  # noqa: SIM110 (a loop: no generator per call)
                if name in value and not check(value[name]):
                    return False
            return True

        checks.append(properties_hold)
    if "additionalProperties" in schema:
        other = _compile(schema["additionalProperties"], strict)

        def others_hold(value: dict[str, Any]) -> bool:
            for name, item in value.items():  # noqa: SIM110 (as above)
                if name not in named and not other(item):
                    return False
            return True

        checks.append(others_hold)
    if "propertyNames" in schema:
        name_check = _compile(schema["propertyNames"], strict)
        checks.append(lambda value: all(map(name_check, value)))
    if "required" in schema:
        required = schema["required"]
        if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
            raise _Unsupported
        checks.append(lambda value: all(name in value for name in required))
    if "minProperties" in schema:
        least = _count(schema["minProperties"])
        checks.append(lambda value: len(value) >= least)
    return checks


def _string_checks(schema: Mapping[str, Any]) -> list[Check]:
    checks: list[Check] = []
    if "minLength" in schema:
        shortest = _count(schema["minLength"])
        checks.append(_when(str, lambda value: len(value) >= shortest))
    if "maxLength" in schema:
        longest = _count(schema["maxLength"])
        checks.append(_when(str, lambda value: len(value) <= longest))
    if "pattern" in schema:
        if not isinstance(schema["pattern"], str):
            raise _Unsupported
        search = re.compile(schema["pattern"]).search
        checks.append(_when(str, lambda value: search(value) is not None))
    return checks


_TYPES: dict[str, Callable[[Any, bool], bool]] = {
    "object": lambda value, _strict: isinstance(value, dict),
    "array": lambda value, _strict: isinstance(value, list),
    "string": lambda value, _strict: isinstance(value, str),
    "boolean": lambda value, _strict: isinstance(value, bool),
    "null": lambda value, _strict: value is None,
    "number": lambda value, _strict: _is_number(value),
    "integer": lambda value, strict: (
        (isinstance(value, int) and not isinstance(value, bool))
        or (not strict and isinstance(value, float) and value.is_integer())
    ),
}


def _type_check(declared: Any, strict: bool) -> Check:
    names = declared if isinstance(declared, list) else [declared]
    if not names or not all(isinstance(name, str) and name in _TYPES for name in names):
        raise _Unsupported
    if names == ["object"]:  # the common single types: one call, no loop
        return lambda value: isinstance(value, dict)
    if names == ["string"]:
        return lambda value: isinstance(value, str)
    tests = [_TYPES[name] for name in names]
    return lambda value: any(test(value, strict) for test in tests)


def _when(kind: type, check: Check) -> Check:
    """``check`` for instances of ``kind``; any other instance passes (the keyword does
    not apply to it, as in JSON Schema)."""
    return lambda value: not isinstance(value, kind) or check(value)


def _all_of(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)
    every = tuple(checks)

    def all_hold(value: Any) -> bool:
        for check in every:  # noqa: SIM110 (as above)
            if not check(value):
                return False
        return True

    return all_hold


def _always(_value: Any) -> bool:
    return True


def _never(_value: Any) -> bool:
    return False


def _is_number(value: Any) -> bool:
    """JSON Schema's ``number`` as ``jsonschema`` tells it: any number but a boolean."""
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


def _number(value: Any) -> int | float:
    if not _is_number(value):
        raise _Unsupported
    return value  # type: ignore[no-any-return]


def _count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _Unsupported
    return value


def _equal(one: Any, other: Any) -> bool:
    """JSON equality as JSON Schema's ``enum`` and ``const`` use it (``jsonschema``'s rule,
    step for step): a string equals what compares equal to it (a ``StrEnum`` member
    included), ``true`` is not ``1`` while ``1`` is ``1.0``, and sequences and mappings are
    compared member by member."""
    if one is other:
        return True
    if isinstance(one, str) or isinstance(other, str):
        return bool(one == other)
    if isinstance(one, Sequence) and isinstance(other, Sequence):
        return len(one) == len(other) and all(map(_equal, one, other))
    if isinstance(one, Mapping) and isinstance(other, Mapping):
        return len(one) == len(other) and all(
            name in other and _equal(value, other[name]) for name, value in one.items()
        )
    return bool(_unbool(one) == _unbool(other))


_TRUE, _FALSE = object(), object()


def _unbool(value: Any) -> Any:
    return _TRUE if value is True else _FALSE if value is False else value
