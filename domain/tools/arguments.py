"""Call-time admission of tool arguments: size first, then the registered schema.

Diagnostics name at most five failing (instance path, schema path) pairs, each escaped
and bounded, and never the argument values themselves: a model must not be able to make
a tool echo a secret through its error message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from artifactize.domain.text import compact_json_size

ARGUMENTS_MAX_BYTES = 64 * 1024
DIAGNOSTICS_MAX = 5
DIAGNOSTIC_LITERAL_MAX_BYTES = 320
DIAGNOSTIC_LITERAL_CUT_BYTES = 300
TRUNCATED_SUFFIX = "… (truncated)"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

NOT_AN_OBJECT = "Tool arguments must be an object of at most 64 KiB."
SCHEMA_MISMATCH = "Tool arguments do not match the registered input schema."


class ArgumentsRefused(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def admit_arguments(args: Any, validator: Any) -> dict[str, Any]:
    """Return ``args`` unchanged when admitted; schema defaults are never applied.

    Arguments with no JSON text (a lone surrogate, NaN, a non-JSON value, or nesting too
    deep to serialize) are not a JSON object either: refused the same way, never raised.
    """
    if not isinstance(args, dict) or _size(args) > ARGUMENTS_MAX_BYTES:
        raise ArgumentsRefused(NOT_AN_OBJECT)
    errors = sorted(validator.iter_errors(args), key=_error_order)
    if errors:
        raise ArgumentsRefused(schema_mismatch_message(errors))
    return args


def _size(args: dict[str, Any]) -> int:
    try:
        return compact_json_size(args)
    except (UnicodeEncodeError, ValueError, TypeError, RecursionError):
        return ARGUMENTS_MAX_BYTES + 1


def _error_order(error: Any) -> tuple[str, str]:
    return (_pointer(error.absolute_path), _pointer(error.absolute_schema_path))


def schema_mismatch_message(errors: Iterable[Any]) -> str:
    lines = [SCHEMA_MISMATCH]
    for error in list(errors)[:DIAGNOSTICS_MAX]:
        instance = _literal(_pointer(error.absolute_path))
        constraint = _literal(_pointer(error.absolute_schema_path))
        lines.append(f"- instancePath {instance}: constraint {constraint} failed.")
    return "\n".join(lines)


def _pointer(parts: Iterable[Any]) -> str:
    """A JSON Pointer: ``/a/0/b`` with ``~`` and ``/`` escaped."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _literal(text: str) -> str:
    """A JSON string literal, cut to 300 bytes (at a character boundary) past 320.

    Written like serde_json writes it: control characters, quotes and backslashes escaped,
    every other character as itself. A lone surrogate (JSON text can carry one) is not a
    character of any encoding, so it stays escaped (``\\ud800``).
    """
    literal = _LONE_SURROGATE.sub(
        lambda found: f"\\u{ord(found.group()):04x}", json.dumps(text, ensure_ascii=False)
    )
    if len(literal.encode("utf-8")) <= DIAGNOSTIC_LITERAL_MAX_BYTES:
        return literal
    cut = literal.encode("utf-8")[:DIAGNOSTIC_LITERAL_CUT_BYTES].decode("utf-8", "ignore")
    return cut + TRUNCATED_SUFFIX
