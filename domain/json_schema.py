"""Schema admission: compile owner JSON Schemas with no file or network resolution.

``jsonschema`` resolves ``$ref`` lazily and would happily fetch a remote document at
validation time. We refuse that when the declaration loads: every ``$ref`` must be a
local fragment that resolves inside the schema itself, and the validator is built over a
registry whose retrieval always fails.

``jsonschema`` and ``referencing`` are imported on the first schema admitted or compiled,
not with this module: a warm ``status`` or ``verify`` reads its declarations from the file
index and admits no schema, and the two are ~30 ms of such a command's start.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from artifactize.domain.text import compact_json

if TYPE_CHECKING:
    import referencing
    import referencing._core

SCHEMA_MAX_BYTES = 8 * 1024 * 1024
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)


class SchemaError(ValueError):
    """A schema that cannot be admitted; the message names the rule it breaks."""


def _refuse_retrieval(uri: str) -> referencing.Resource[Any]:
    import referencing.exceptions

    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


@cache
def _no_retrieval() -> referencing.Registry[Any]:
    """The registry every schema is resolved over: its retrieval always fails."""
    import referencing

    registry: referencing.Registry[Any] = referencing.Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]
    return registry


def _refs(node: Any, *, schema_map: bool = False) -> Iterator[str]:
    """Every reference string; ``schema_map`` marks a name -> subschema table."""
    if isinstance(node, dict):
        for key, value in node.items():
            if schema_map:  # keys are property names, so `const` here is not a keyword
                yield from _refs(value)
            elif key in ("$ref", "$dynamicRef") and isinstance(value, str):
                yield value
            elif key not in _DATA_KEYWORDS:
                yield from _refs(value, schema_map=key in _SCHEMA_MAPS)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _check_local_ref(resolver: referencing._core.Resolver[Any], ref: str) -> None:
    import referencing.exceptions

    if not ref.startswith("#"):
        raise SchemaError(f"$ref {ref!r} is not local; remote and file references are refused")
    try:
        resolver.lookup(ref)
    except referencing.exceptions.Unresolvable:
        raise SchemaError(f"$ref {ref!r} does not resolve inside the schema") from None


def admit_schema(schema: Any, *, require_object_root: bool) -> None:
    """Raise ``SchemaError`` unless ``schema`` is an admissible JSON Schema object."""
    if not isinstance(schema, dict):
        raise SchemaError("a schema must be a table (a JSON object)")
    if require_object_root and schema.get("type") != "object":
        raise SchemaError('the root must declare type = "object"')
    try:
        canonical = compact_json(schema)  # serialized once: for the size and as the cache key
    except ValueError:  # TOML and YAML can write inf and nan; JSON (and so a schema) cannot
        raise SchemaError(
            "the schema holds a number JSON cannot represent (NaN or infinity)"
        ) from None
    if len(canonical.encode("utf-8")) > SCHEMA_MAX_BYTES:  # as ``compact_json_size``
        raise SchemaError(f"the schema exceeds {SCHEMA_MAX_BYTES // (1024 * 1024)} MiB")
    _admit_cached(canonical)


@lru_cache(maxsize=1024)
def _admit_cached(canonical: str) -> None:
    """Compiling is the expensive part; identical schemas across Artifacts compile once."""
    import jsonschema
    import jsonschema.exceptions
    import jsonschema.validators

    schema = json.loads(canonical)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "the root"
        raise SchemaError(f"invalid JSON Schema at {where}: {exc.message}") from None
    resolver = _registry_for(schema).resolver(base_uri="")
    for ref in _refs(schema):
        _check_local_ref(resolver, ref)


def _registry_for(schema: Mapping[str, Any]) -> referencing.Registry[Any]:
    import referencing
    from referencing.jsonschema import DRAFT202012

    resource = referencing.Resource.from_contents(schema, default_specification=DRAFT202012)
    registry: referencing.Registry[Any] = _no_retrieval().with_resource(uri="", resource=resource)
    return registry


def compile_validator(schema: Mapping[str, Any], *, strict_integers: bool = False) -> Any:
    """A validator for an admitted schema that can never fetch anything.

    ``strict_integers``: ``integer`` means a JSON integer as written (``2``), never a float
    with a zero fraction (``2.0``), as our own documents' checks require."""
    import jsonschema
    import jsonschema.validators

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    if strict_integers:
        cls = _strict_integers(cls)
    return cls(schema, registry=_registry_for(schema))


@lru_cache(maxsize=8)
def _strict_integers(cls: Any) -> Any:
    import jsonschema.validators

    checker = cls.TYPE_CHECKER.redefine("integer", _is_strict_integer)
    return jsonschema.validators.extend(cls, type_checker=checker)  # type: ignore[no-untyped-call]


def _is_strict_integer(_checker: Any, instance: Any) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)
