"""Value-free descriptions of JSON Schema failures, for verdict error messages.

jsonschema's own messages embed the failing instance value ("5 is greater than the
maximum of 3"). A verdict error goes back to a model in a repair turn and into stored
state, so it must never repeat what the result held: each description here is built
from the failing keyword and the *schema's* value only (the owner wrote that; it is
shown to the reviewer anyway). Paths are JSON Pointers into the instance.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from artifactize.domain.text import compact_json, quote

_BOUNDS: Mapping[str, str] = {
    "minimum": "must be >= {}",
    "maximum": "must be <= {}",
    "exclusiveMinimum": "must be > {}",
    "exclusiveMaximum": "must be < {}",
    "multipleOf": "must be a multiple of {}",
    "minLength": "must be at least {} characters long",
    "maxLength": "must be at most {} characters long",
    "minItems": "must have at least {} items",
    "maxItems": "must have at most {} items",
    "minProperties": "must have at least {} properties",
    "maxProperties": "must have at most {} properties",
    "minContains": "must contain at least {} matching items",
    "maxContains": "must contain at most {} matching items",
    "type": "must be of type {}",
    "const": "must equal {}",
    "enum": "must be one of {}",
    "pattern": "must match the pattern {}",
    "format": "must be a valid {}",
}
# The same bounds when the schema's value is 1: "at least 1 character", not "characters".
_SINGULAR: Mapping[str, str] = {
    "minLength": "must be at least 1 character long",
    "maxLength": "must be at most 1 character long",
    "minItems": "must have at least 1 item",
    "maxItems": "must have at most 1 item",
    "minProperties": "must have at least 1 property",
    "maxProperties": "must have at most 1 property",
    "minContains": "must contain at least 1 matching item",
    "maxContains": "must contain at most 1 matching item",
}
_FIXED: Mapping[str, str] = {
    "additionalProperties": "has properties the schema does not declare",
    "unevaluatedProperties": "has properties the schema does not evaluate",
    "unevaluatedItems": "has items the schema does not evaluate",
    "uniqueItems": "must not contain duplicate items",
    "propertyNames": "has a property name the schema does not allow",
    "additionalItems": "has items the schema does not allow",
    "items": "has items the schema does not allow",
}


def pointer(parts: Iterable[Any]) -> str:
    """A JSON Pointer: ``/a/0/b`` with ``~`` and ``/`` escaped; ``""`` is the root."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def describe(error: Any) -> str:
    """What ``error`` (a jsonschema ValidationError) requires, without the instance value."""
    keyword = error.validator
    if keyword is None:
        # A ``false`` subschema. jsonschema drops the instance path of this one error
        # (its path stays at the parent), so the schema path says where it was.
        where = quote(pointer(error.absolute_schema_path))
        return f"holds a value a false subschema at schema path {where} does not allow"
    if keyword in _SINGULAR and error.validator_value == 1:
        return _SINGULAR[keyword]
    if keyword in _BOUNDS:
        return _BOUNDS[keyword].format(_schema_value(error.validator_value))
    if keyword in _FIXED:
        return _FIXED[keyword]
    special = _SPECIAL.get(keyword)
    if special is not None:
        return special(error)
    return (
        f"does not satisfy {keyword!s} at schema path {quote(pointer(error.absolute_schema_path))}"
    )


def _schema_value(value: Any) -> str:
    try:
        return compact_json(value)
    except (TypeError, ValueError):
        return repr(value)


def _required(error: Any) -> str:
    """Names come from the schema's list; the instance only says which are absent."""
    instance = error.instance if isinstance(error.instance, dict) else {}
    missing = [n for n in error.validator_value if n not in instance]
    return f"must have the required properties {_schema_value(missing)}"


def _dependent_required(error: Any) -> str:
    return "is missing a property that another property requires"


_SPECIAL: Mapping[str, Callable[[Any], str]] = {
    "required": _required,
    "dependentRequired": _dependent_required,
    "dependencies": _dependent_required,
}
