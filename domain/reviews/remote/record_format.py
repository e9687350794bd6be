"""The remote review record format (schema 2), shared by the client and the store server.

One module owns the record: its schema number, its size caps, its fields, and the JSON
Schemas of its shape (docs/review-store.md, "The record"). Two readers use them, with
different strictness:

- a client (``records.validate_record``) checks the whole shape (``RECORD_SHAPE``) before it
  trusts a record, then, in code, what spans fields or is not a shape: label sizes in
  bytes, ``kinds`` naming exactly the Artifacts of ``fingerprints``, ``result.verdict``,
  a runtime result's fields, timestamps, the recomputed key and a full record's
  ``execution``;
- the store server (``server_admission.check_record``) checks only the envelope
  (``ENVELOPE_SHAPE``): the fields it indexes and the ones a reader relies on.

Every subschema that can fail names its rule in ``x-problem``: a template, or a table of
templates by failing keyword (``*``: any other). ``{where}`` is the failing field's path
(``usage[0].turn``), ``{key}`` its last property name and ``{name}`` the property name a
``propertyNames`` rule refused. A problem is built from the schema and from field names
only, never from a value, and a name that is not a plain identifier is escaped and cut
(``shown``): a store is shared, and a publisher may be careless or hostile.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from artifactize.domain.declarations.identifiers import IDENTIFIER_PATTERN
from artifactize.domain.declarations.model import ArtifactKind
from artifactize.domain.json_schema import admit_schema, compile_validator
from artifactize.domain.json_schema_subset import Check, compile_subset_check
from artifactize.domain.reviews.reuse.fingerprints import (
    SCRIPT_OUTPUT_CHARACTERS,
    SCRIPT_OUTPUT_MAX_CHARS,
)
from artifactize.ports.statuses import PROFILE_KINDS, VERDICTS

RECORD_SCHEMA = 2
KIB = 1024
MIB = 1024 * KIB
SUMMARY_RECORD_MAX_BYTES = 256 * KIB
"""Largest serialized record without ``execution`` (compact UTF-8 JSON)."""
FULL_RECORD_MAX_BYTES = 16 * MIB
"""Largest serialized record with ``execution``; the same bound as a local reuse record."""
ID_MAX_CHARS = 200
LABEL_MAX_BYTES = 200
"""Reviewer names, producer fields and option strings: short labels, like reviewer IDs."""
PUBLISHER_MAX_CHARS = 64
MIRROR_PREFIX = "remote-"
SHOWN_NAME_MAX_CHARS = 64
"""A field name from the store is shown escaped and cut to this length in a problem."""

ARTIFACT_KINDS = tuple(kind.value for kind in ArtifactKind)
RUNTIME_RESULT_FIELDS = ("verdict", "exitCode", "durationMs", "truncated")
OPTION_TEXT_FIELDS = ("backend", "model", "reasoning", "variant")
OPTION_COUNT_FIELDS = ("timeoutMs", "maxToolCalls", "maxTokens")
USAGE_FIELDS = ("turn", "attempt", "usage")
PRODUCER_FIELDS = ("name", "version", "session")
REQUIRED_FIELDS = (
    "schema",
    "key",
    "evalDefHash",
    "fingerprints",
    "kinds",
    "verdict",
    "evalId",
    "runId",
    "requestId",
    "executionId",
    "profile",
    "options",
    "result",
    "usage",
    "startedAt",
    "completedAt",
)
OPTIONAL_FIELDS = (
    "reviewer",
    "producer",
    "executionPaths",
    "execution",
    "publisher",
    "publishedAt",
)

VERDICT_RULE = "must be GREEN or RED"
LABEL_RULE = f"must be 1-{LABEL_MAX_BYTES} bytes of text without control characters"
COUNT_RULE = "must be a non-negative integer"
TIME_RULE = "must be an RFC 3339 timestamp"
OBJECT_RULE = "must be an object"
UNKNOWN_FIELD = "unknown field {name}"
MISSING_FIELD = "field `{where}` is missing"

PROBLEM = "x-problem"
MISSING = "x-missing"
"""A node's template for a missing required property; ``OWN_RULE``: that property's own."""
OWN_RULE = "own rule"


def record_bytes(record: Mapping[str, Any]) -> int:
    """The size of ``record`` as compact UTF-8 JSON; raises ValueError if it is not JSON."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return len(text.encode("utf-8"))


def is_full(record: Mapping[str, Any]) -> bool:
    """A record that carries its ``execution`` (``execution: null`` is a summary record)."""
    return record.get("execution") is not None


def record_size_limit(record: Mapping[str, Any]) -> int:
    """A summary record is small; one that carries its full ``execution`` may be large."""
    return FULL_RECORD_MAX_BYTES if is_full(record) else SUMMARY_RECORD_MAX_BYTES


def shown(name: str) -> str:
    """A name from the store, escaped (no terminal control) and bounded."""
    cut = name[:SHOWN_NAME_MAX_CHARS] + ("…" if len(name) > SHOWN_NAME_MAX_CHARS else "")
    return json.dumps(cut, ensure_ascii=True)


def label_fits(value: str) -> bool:
    """The byte bound of a label (its text rule is in the shape)."""
    return len(value.encode("utf-8", "replace")) <= LABEL_MAX_BYTES


# --- the shapes ------------------------------------------------------------------------------


def _whole(regex: str) -> str:
    """``regex`` over the whole string (``$`` would also match before a final newline)."""
    return f"^(?:{regex})(?![\\s\\S])"


def _field(rule: str) -> str:
    return f"field `{{where}}` {rule}"


_HEX64 = "[0-9a-f]{64}"
_ID = f"[A-Za-z0-9._:-]{{1,{ID_MAX_CHARS}}}"
_FINGERPRINT = f"[{SCRIPT_OUTPUT_CHARACTERS}]{{1,{SCRIPT_OUTPUT_MAX_CHARS}}}"
_PUBLISHER = f"[A-Za-z0-9._-]{{1,{PUBLISHER_MAX_CHARS}}}"
_LABEL_TEXT = r"(?=[\s\S]*\S)[^\x00-\x1f\x7f-\x9f]*"  # some non-space, no control character
_LABEL_PATHS = (
    ("reviewer",),
    ("producer", "name"),
    ("producer", "version"),
    ("producer", "session"),
    *(("options", name) for name in OPTION_TEXT_FIELDS),
)


def _hex(rule: str = "must be 64 lowercase hex characters") -> dict[str, Any]:
    return {"type": "string", "pattern": _whole(_HEX64), PROBLEM: _field(rule)}


def _id() -> dict[str, Any]:
    return {
        "type": "string",
        "pattern": _whole(_ID),
        PROBLEM: _field(f"must be 1-{ID_MAX_CHARS} of [A-Za-z0-9._:-]"),
    }


def _label(*, nullable: bool = False) -> dict[str, Any]:
    kind: Any = ["string", "null"] if nullable else "string"
    return {"type": kind, "pattern": _whole(_LABEL_TEXT), PROBLEM: _field(LABEL_RULE)}


def _count() -> dict[str, Any]:
    return {"type": "integer", "minimum": 0, PROBLEM: _field(COUNT_RULE)}


def _time(*, nullable: bool = False) -> dict[str, Any]:
    kind: Any = ["string", "null"] if nullable else "string"
    return {"type": kind, PROBLEM: _field(TIME_RULE)}  # parsed in code


def _object(**rules: Any) -> dict[str, Any]:
    return {"type": "object", PROBLEM: _field(OBJECT_RULE), **rules}


RECORD_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": list(REQUIRED_FIELDS),
    "additionalProperties": False,
    "properties": {
        "schema": {
            "type": "integer",
            "const": RECORD_SCHEMA,
            PROBLEM: _field(f"must be {RECORD_SCHEMA}"),
        },
        "key": _hex(),
        "evalDefHash": _hex(),
        "fingerprints": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {
                "pattern": _whole(IDENTIFIER_PATTERN),
                PROBLEM: _field("has an invalid Artifact name {name}"),
            },
            "additionalProperties": {
                "type": "string",
                "pattern": _whole(_FINGERPRINT),
                PROBLEM: (
                    f"fingerprint of `{{key}}` must be 1-{SCRIPT_OUTPUT_MAX_CHARS} of "
                    f"[{SCRIPT_OUTPUT_CHARACTERS}]"
                ),
            },
            PROBLEM: {
                "type": _field(OBJECT_RULE),
                "minProperties": _field("must name at least one Artifact"),
            },
        },
        "kinds": _object(
            additionalProperties={
                "enum": list(ARTIFACT_KINDS),
                PROBLEM: f"kind of `{{key}}` must be {' or '.join(ARTIFACT_KINDS)}",
            }
        ),
        "verdict": {"enum": [str(v) for v in VERDICTS], PROBLEM: _field(VERDICT_RULE)},
        "evalId": {
            "type": "string",
            "pattern": _whole(f"{IDENTIFIER_PATTERN}/{IDENTIFIER_PATTERN}"),
            PROBLEM: _field("must be ARTIFACT/EVAL, two identifiers"),
        },
        "runId": _id(),
        "requestId": _id(),
        "executionId": {
            **_id(),
            "allOf": [
                {
                    "not": {"type": "string", "pattern": f"^{MIRROR_PREFIX}"},
                    PROBLEM: _field("names a mirror; mirrors are never published"),
                }
            ],
        },
        "profile": {
            "type": "object",
            "required": ["kind"],
            "additionalProperties": False,
            "properties": {"kind": {"enum": [str(kind) for kind in PROFILE_KINDS]}},
            PROBLEM: _field(f'must be {{{{"kind": {" | ".join(PROFILE_KINDS)}}}}}'),
        },
        "options": {
            "type": "object",
            "properties": {
                **{name: _label() for name in OPTION_TEXT_FIELDS},
                **{name: _count() for name in OPTION_COUNT_FIELDS},
            },
            "additionalProperties": False,
            PROBLEM: {"type": _field(OBJECT_RULE)},
        },
        "result": _object(),  # its verdict and a runtime result's fields: in code
        "usage": {
            "type": "array",
            "items": {
                "type": "object",
                "required": list(USAGE_FIELDS),
                "additionalProperties": False,
                "properties": {
                    "turn": _count(),
                    "attempt": _count(),
                    "usage": _object(additionalProperties=_count()),
                },
                PROBLEM: {
                    "type": _field(OBJECT_RULE),
                    "*": _field(f"must have exactly {', '.join(USAGE_FIELDS)}"),
                },
            },
            PROBLEM: _field("must be a list"),
        },
        "startedAt": _time(nullable=True),
        "completedAt": _time(),
        "reviewer": _label(nullable=True),
        "producer": {
            "type": ["object", "null"],
            "required": ["name", "version"],
            "additionalProperties": False,
            "properties": {
                "name": _label(),
                "version": _label(),
                "session": _label(nullable=True),
            },
            PROBLEM: {"type": _field(OBJECT_RULE)},
        },
        "executionPaths": _object(
            propertyNames={"minLength": 1, PROBLEM: _field("has an empty tool name")},
            additionalProperties={
                "type": "object",
                "propertyNames": {"minLength": 1},
                "additionalProperties": {"type": "string", "pattern": _whole(_HEX64)},
                PROBLEM: _field("must map paths to 64 lowercase hex digests"),
            },
        ),
        "execution": _object(),  # must tell the same story as the record: in code
        "publisher": {
            "type": ["string", "null"],
            "pattern": _whole(_PUBLISHER),
            PROBLEM: _field(f"must be 1-{PUBLISHER_MAX_CHARS} of [A-Za-z0-9._-]"),
        },
        "publishedAt": _time(nullable=True),
    },
}
RECORD_CHECK_ORDER = (
    "schema",
    "key",
    "evalDefHash",
    "fingerprints",
    "kinds",
    "verdict",
    "evalId",
    "runId",
    "requestId",
    "executionId",
    "profile",
    "options",
    "result",
    "usage",
    "startedAt",
    "completedAt",
    "reviewer",
    "producer",
    "executionPaths",
    "publisher",
    "publishedAt",
    "execution",
)
"""Which field's problem is reported first when a record has several."""

ENVELOPE_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": ["schema", "key", "verdict", "result", "profile", "executionId", "completedAt"],
    MISSING: OWN_RULE,
    "properties": {
        "schema": {
            "type": "integer",
            "const": RECORD_SCHEMA,
            PROBLEM: f"schema must be {RECORD_SCHEMA}.",
        },
        "key": {"type": "string", PROBLEM: "key must equal the key in the path."},
        "verdict": {"enum": [str(v) for v in VERDICTS], PROBLEM: f"verdict {VERDICT_RULE}."},
        "result": {"type": "object", PROBLEM: "result.verdict must equal verdict."},
        "profile": {
            "type": "object",
            "required": ["kind"],
            "properties": {"kind": {"enum": [str(kind) for kind in PROFILE_KINDS]}},
            PROBLEM: "profile.kind must be runtime, agent or human.",
        },
        "executionId": {
            "type": "string",
            "minLength": 1,
            "maxLength": ID_MAX_CHARS,
            PROBLEM: f"executionId must be a string of 1 to {ID_MAX_CHARS} characters.",
        },
        "completedAt": {"type": "string", PROBLEM: f"completedAt {TIME_RULE}."},
    },
}
"""What the store server checks of a published record; everything else is kept as sent."""
ENVELOPE_CHECK_ORDER = (
    "schema",
    "key",
    "verdict",
    "result",
    "profile",
    "executionId",
    "completedAt",
)


def record_problem(record: Mapping[str, Any]) -> str | None:
    """The first problem of a record's shape (a client's check), or None."""
    if not _valid("record", record):
        problem = _first_problem(_validator("record"), RECORD_SHAPE, record, RECORD_CHECK_ORDER)
        if problem is not None:
            return problem
    for path in _LABEL_PATHS:
        value = _at(record, path)
        if isinstance(value, str) and not label_fits(value):
            return f"field `{'.'.join(path)}` {LABEL_RULE}"
    return None


def envelope_problem(record: Mapping[str, Any]) -> str | None:
    """The first problem of a published record's envelope (the server's check), or None."""
    if _valid("envelope", record):
        return None
    return _first_problem(_validator("envelope"), ENVELOPE_SHAPE, record, ENVELOPE_CHECK_ORDER)


@lru_cache(maxsize=2)
def _validator(which: str) -> Any:
    shape = RECORD_SHAPE if which == "record" else ENVELOPE_SHAPE
    admit_schema(shape, require_object_root=True)  # a valid schema without remote refs
    return compile_validator(shape, strict_integers=True)


def _valid(which: str, record: Mapping[str, Any]) -> bool:
    """Whether the shape holds, by the check compiled from it (``json_schema_subset``: the
    same answer as ``jsonschema``, about 20 times sooner); ``jsonschema`` then only
    explains a record that fails it."""
    return _subset_check(which)(record)


@lru_cache(maxsize=2)
def _subset_check(which: str) -> Check:
    shape = RECORD_SHAPE if which == "record" else ENVELOPE_SHAPE
    check = compile_subset_check(shape, strict_integers=True)
    if check is None:  # a shape grew a keyword the subset lacks: jsonschema decides alone
        return lambda record: bool(_validator(which).is_valid(record))
    return check


def _at(record: Mapping[str, Any], path: Sequence[str]) -> Any:
    value: Any = record
    for name in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(name)
    return value


# --- problems from schema errors --------------------------------------------------------------


_PLAIN_NAME = re.compile(f"{IDENTIFIER_PATTERN}")
_DESCENDING = frozenset({"additionalProperties", "items"})
_NAMED = frozenset({"properties", "patternProperties"})
_INDEXED = frozenset({"allOf", "anyOf", "oneOf"})


def _first_problem(
    validator: Any, shape: Mapping[str, Any], record: Mapping[str, Any], order: Sequence[str]
) -> str | None:
    errors = list(validator.iter_errors(record))
    if not errors:
        return None

    def rank(item: tuple[int, Any]) -> tuple[int, int]:
        index, error = item
        path = list(error.absolute_path)
        if not path:  # a rule of the record itself: unknown fields first, then missing ones
            return (-2 if error.validator == "additionalProperties" else -1, index)
        name = path[0]
        return (order.index(name) if name in order else len(order), index)

    _, first = min(enumerate(errors), key=rank)
    return _problem(shape, first)


def _problem(shape: Mapping[str, Any], error: Any) -> str:
    """The message of one jsonschema error, from the templates along its schema path."""
    nodes = _nodes(shape, list(error.absolute_schema_path))
    keyword = error.validator
    owner, depth = nodes[-1]
    where = list(error.absolute_path)[:depth]
    template = _template(owner, keyword)
    if template is None and keyword == "additionalProperties":
        declared = owner.get("properties", {})
        extra = sorted(name for name in error.instance if name not in declared)
        return UNKNOWN_FIELD.format(name=shown(_dotted([*where, extra[0]], plain=True)))
    if template is None and keyword == "required":
        missing = next(name for name in owner["required"] if name not in error.instance)
        rule = owner.get(MISSING, MISSING_FIELD)
        if rule == OWN_RULE:
            own = owner["properties"][missing]
            rule = _template(own, "*") or MISSING_FIELD
        return _render(rule, [*where, missing], error)
    if template is None:
        for node, node_depth in reversed(nodes[:-1]):
            template = _template(node, "*")
            if template is not None:
                where = list(error.absolute_path)[:node_depth]
                break
    return _render(template or _field("is not valid"), where, error)


def _nodes(shape: Mapping[str, Any], schema_path: list[Any]) -> list[tuple[Mapping[str, Any], int]]:
    """Each schema node from the root to the one holding the failing keyword (the last
    element of ``schema_path``), with the depth of the instance it applies to."""
    node, depth = shape, 0
    nodes = [(node, depth)]
    index = 0
    while index < len(schema_path) - 1:
        step = schema_path[index]
        if step in _NAMED:
            node, depth, index = node[step][schema_path[index + 1]], depth + 1, index + 2
        elif step in _INDEXED:
            node, index = node[step][schema_path[index + 1]], index + 2
        elif step in _DESCENDING:
            node, depth, index = node[step], depth + 1, index + 1
        else:  # propertyNames, not: the same instance (a name, or the value itself)
            node, index = node[step], index + 1
        nodes.append((node, depth))
    return nodes


def _template(node: Mapping[str, Any], keyword: str) -> str | None:
    problem = node.get(PROBLEM)
    if isinstance(problem, Mapping):
        found = problem.get(keyword, problem.get("*"))
        return found if isinstance(found, str) else None
    return problem if isinstance(problem, str) else None


def _render(template: str, where: list[Any], error: Any) -> str:
    key = where[-1] if where and isinstance(where[-1], str) else ""
    refused = error.instance if "{name}" in template and isinstance(error.instance, str) else ""
    return template.format(where=_dotted(where), key=_name_text(key), name=shown(refused))


def _dotted(path: Sequence[Any], *, plain: bool = False) -> str:
    """``usage[0].usage.t``; a name that is not an identifier is escaped unless ``plain``
    (the whole text is escaped by the caller then)."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            name = str(part) if plain else _name_text(str(part))
            text += f".{name}" if text else name
    return text


def _name_text(name: str) -> str:
    return name if _PLAIN_NAME.fullmatch(name) else shown(name)
