"""Verdict validation: a review result is ``{"verdict": "GREEN"|"RED", ...owner fields}``.

The owner's ``pass_schema`` (GREEN) or ``fail_schema`` (RED) describes the owner fields.
Each becomes a *branch schema*: forced to an object with no undeclared properties, with
``verdict`` added as a required constant. Both Agent final answers and Human submissions
go through ``VerdictValidator.validate``; an Agent's raw text first goes through
``parse_final_text``.

Error messages have a fixed shape because a model reads them in a repair turn and a
person reads them on the command line: a first line ``<code>: <rule>``, then at most
five detail lines, each naming an instance path or an undeclared field. They never
repeat a value of the result (see ``schema_messages``).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from artifactize.domain.json_schema import admit_schema, compile_validator
from artifactize.domain.reviews.schema_messages import describe, pointer
from artifactize.domain.text import compact_json, quote, utf16_length
from artifactize.kernel.bounded_json import JsonRefused, read_json
from artifactize.ports.statuses import VERDICTS, Verdict

VerdictText = Literal["GREEN", "RED"]  # a verdict as JSON text gives it
VERDICT_FIELD = "verdict"

RESULT_MAX_UTF16 = 256_000  # normalized (compact JSON) result, in UTF-16 code units
FINAL_TEXT_MAX_BYTES = 1024 * 1024  # an Agent's final text, in UTF-8 bytes
DETAIL_LINES_MAX = 5
DETAIL_PIECE_MAX_UTF16 = 200
TRUNCATED_SUFFIX = "… (truncated)"

VERDICT_MISMATCH = "schema_mismatch: verdict must be GREEN or RED"
OWNER_MISMATCH = "schema_mismatch: result must match the selected verdict's owner schema"
RESULT_OVER_SIZE = f"over_size: normalized result exceeds {RESULT_MAX_UTF16} characters"
NOT_JSON_DATA = "invalid_json: the result is not JSON data"
EMPTY_TEXT = "invalid_json: the final response is empty"
TEXT_OVER_SIZE = f"over_size: the final response exceeds {FINAL_TEXT_MAX_BYTES} bytes"
NOT_JSON_TEXT = "invalid_json: the final response is not valid JSON"
NOT_AN_OBJECT = "invalid_json: the final response must be exactly one JSON object"
REPAIR_PREFIX = "Your final response did not match the required schema: "
REPAIR_SUFFIX = "Return only one JSON object matching the schema."

# One fenced block around the whole answer (```json ... ``` or ``` ... ```). Models add
# it out of habit even when told not to; it carries no prose, so accepting it costs
# nothing. Anything else around the JSON is refused.
_FENCE = re.compile(r"\A```[ \t]*(?:json)?[ \t]*\r?\n(?P<body>.*?)\r?\n[ \t]*```\Z", re.I | re.S)


class InvalidVerdict(ValueError):
    """A result that cannot be a verdict; ``message`` is the full multi-line error."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def code(self) -> str:
        """``schema_mismatch``, ``over_size`` or ``invalid_json``."""
        return self.message.split(":", 1)[0]


class VerdictValidator:
    """Validates results against the branch schema of the verdict they claim."""

    def __init__(
        self, pass_schema: Mapping[str, Any] | None, fail_schema: Mapping[str, Any] | None
    ) -> None:
        self._owner: dict[str, Mapping[str, Any] | None] = {
            Verdict.GREEN: pass_schema,
            Verdict.RED: fail_schema,
        }
        self._validators: dict[str, Any] = {}
        self._declared: dict[str, frozenset[str]] = {}
        for verdict in VERDICTS:
            schema = self.branch_schema(verdict)
            admit_schema(schema, require_object_root=True)  # raises SchemaError: no remote refs
            self._validators[verdict] = compile_validator(schema)
            self._declared[verdict] = frozenset(schema["properties"])

    def branch_schema(self, verdict: Verdict | VerdictText) -> dict[str, Any]:
        """The owner schema of ``verdict`` closed over its declared fields, plus ``verdict``."""
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be GREEN or RED, got {verdict!r}")
        owner = self._owner[verdict]
        schema: dict[str, Any] = copy.deepcopy(dict(owner)) if owner is not None else {}
        properties = schema.get("properties")
        required = schema.get("required")
        schema["type"] = "object"
        schema["additionalProperties"] = False
        schema["properties"] = {
            **(properties if isinstance(properties, dict) else {}),
            VERDICT_FIELD: {"type": "string", "const": verdict},
        }
        names = list(required) if isinstance(required, list) else []
        schema["required"] = [*names, VERDICT_FIELD] if VERDICT_FIELD not in names else names
        return schema

    def validate(self, value: Any) -> dict[str, Any]:
        """The normalized result (a JSON round trip of ``value``), or ``InvalidVerdict``.

        Order: the verdict first (it selects the schema), then the size (so a huge value
        is never walked by the validator), then the branch schema, then undeclared keys.
        """
        if not isinstance(value, dict):
            raise InvalidVerdict(
                _with_details(VERDICT_MISMATCH, [_path_line((), "must be a JSON object")])
            )
        verdict = value.get(VERDICT_FIELD)
        if verdict not in VERDICTS:
            raise InvalidVerdict(VERDICT_MISMATCH)
        result = _normalized(value)
        try:
            errors = sorted(self._validators[verdict].iter_errors(result), key=_error_order)
        except RecursionError:
            raise InvalidVerdict(
                _with_details(OWNER_MISMATCH, [_path_line((), "is nested too deeply to check")])
            ) from None
        undeclared = [
            f"- field {quote(_truncate(key))} is not declared."
            for key in result
            if key not in self._declared[verdict]
        ]
        if errors:
            # The failing instance paths first, then the undeclared fields (named, not just
            # "undeclared ones"): within DETAIL_LINES_MAX lines, many undeclared fields must
            # not hide a real type error.
            lines: list[str] = []
            extra = False
            for error in errors:
                if _is_root_extra(error) and undeclared:
                    extra = True
                else:
                    lines.append(_path_line(error.absolute_path, describe(error)))
            if extra:
                lines.extend(undeclared)
            raise InvalidVerdict(_with_details(OWNER_MISMATCH, lines))
        if undeclared:
            raise InvalidVerdict(_with_details(OWNER_MISMATCH, undeclared))
        return result


def _normalized(value: dict[str, Any]) -> dict[str, Any]:
    try:
        canonical = compact_json(value)
    except (TypeError, ValueError, RecursionError):
        raise InvalidVerdict(NOT_JSON_DATA) from None
    if utf16_length(canonical) > RESULT_MAX_UTF16:
        raise InvalidVerdict(RESULT_OVER_SIZE)
    result: dict[str, Any] = json.loads(canonical)
    return result


def _is_root_extra(error: Any) -> bool:
    """The branch schema's own ``additionalProperties: false`` refusing top-level keys."""
    return bool(error.validator == "additionalProperties" and not error.absolute_path)


def _error_order(error: Any) -> tuple[str, str]:
    return (pointer(error.absolute_path), pointer(error.absolute_schema_path))


def _path_line(path: Any, message: str) -> str:
    return f"- instancePath {quote(_truncate(pointer(path)))}: {_truncate(message)}"


def _with_details(code: str, lines: list[str]) -> str:
    """The code line and at most ``DETAIL_LINES_MAX`` distinct detail lines, in order."""
    distinct = list(dict.fromkeys(lines))[:DETAIL_LINES_MAX]
    return "\n".join([code, *distinct])


def _truncate(text: str) -> str:
    """Cut to ``DETAIL_PIECE_MAX_UTF16`` UTF-16 units, never inside a surrogate pair."""
    if utf16_length(text) <= DETAIL_PIECE_MAX_UTF16:
        return text
    units = 0
    for index, char in enumerate(text):
        units += 2 if ord(char) > 0xFFFF else 1
        if units > DETAIL_PIECE_MAX_UTF16:
            return text[:index] + TRUNCATED_SUFFIX
    return text  # unreachable: the length check above guarantees a cut


# --- an Agent's final text --------------------------------------------------------------


def parse_final_text(text: str, validator: VerdictValidator) -> dict[str, Any]:
    """The verdict in an Agent's final answer: exactly one JSON object, nothing else.

    A single surrounding ```json fenced block is tolerated (see ``_FENCE``).
    """
    if _utf8_size_exceeds(text, FINAL_TEXT_MAX_BYTES):
        raise InvalidVerdict(TEXT_OVER_SIZE)
    body = text.strip()
    if not body:
        raise InvalidVerdict(EMPTY_TEXT)
    fenced = _FENCE.match(body)
    if fenced is not None:
        body = fenced["body"]
    try:
        value = read_json(body)
    except JsonRefused as exc:
        where = f"line {exc.line}, column {exc.column}: " if exc.line else ""
        raise InvalidVerdict(f"{NOT_JSON_TEXT} ({where}{exc.problem})") from None
    if not isinstance(value, dict):
        raise InvalidVerdict(NOT_AN_OBJECT)
    return validator.validate(value)


def _utf8_size_exceeds(text: str, limit: int) -> bool:
    if len(text) > limit:  # every character is at least one byte
        return True
    if len(text) * 4 <= limit:  # and at most four
        return False
    return len(text.encode("utf-8", "surrogatepass")) > limit


def repair_message(error: InvalidVerdict) -> str:
    """The user message of the one repair turn an Agent gets after an invalid answer."""
    return f"{REPAIR_PREFIX}{error.message}\n{REPAIR_SUFFIX}"
