"""``request submit``'s result: ``--verdict`` plus the owner fields as a JSON object.

The verdict has its own option so a person never types it into the JSON, and the fields
text is bounded before it is parsed (a fields file is read up to one byte past the limit,
so an oversized file is refused without reading it whole).
"""

from __future__ import annotations

import json
from typing import Any

from artifactize.domain.reviews.verdicts import VERDICT_FIELD
from artifactize.kernel.bounded_json import JsonRefused, read_json
from artifactize.ports.statuses import VERDICTS

HUMAN_FIELDS_MAX_BYTES = 256_000
HUMAN_FIELDS_READ_BYTES = HUMAN_FIELDS_MAX_BYTES + 1  # enough to know a file is too big
FIELDS_TOO_LARGE = f"Human fields exceed {HUMAN_FIELDS_MAX_BYTES} bytes."
FIELDS_NOT_OBJECT = "Human fields must be a JSON object."
FIELDS_NOT_JSON = "Human fields are not valid JSON: {reason}"
FIELDS_NOT_UTF8 = "Human fields are not UTF-8 text."
VERDICT_IN_FIELDS = "Use --verdict, not a verdict inside --fields."
BAD_VERDICT = "--verdict must be GREEN or RED, got {value}."
FIELDS_BOTH = "Give the fields either with --fields or with --fields-file, not both."


class FieldsError(ValueError):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def human_result(verdict: str, fields: str | bytes | None) -> dict[str, Any]:
    """``{"verdict": verdict, **fields}``; ``None`` fields are ``{}``. Raises FieldsError."""
    if verdict.upper() not in VERDICTS:  # `green` is GREEN: the case carries no meaning
        raise FieldsError(BAD_VERDICT.format(value=json.dumps(verdict, ensure_ascii=False)))
    verdict = verdict.upper()
    parsed = _parse(fields) if fields is not None else {}
    if VERDICT_FIELD in parsed:
        raise FieldsError(VERDICT_IN_FIELDS)
    return {VERDICT_FIELD: verdict, **parsed}


def _parse(fields: str | bytes) -> dict[str, Any]:
    data = fields.encode("utf-8", "surrogatepass") if isinstance(fields, str) else fields
    if len(data) > HUMAN_FIELDS_MAX_BYTES:
        raise FieldsError(FIELDS_TOO_LARGE)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FieldsError(FIELDS_NOT_UTF8) from None
    try:
        value = read_json(text)
    except JsonRefused as exc:
        raise FieldsError(FIELDS_NOT_JSON.format(reason=exc.reason)) from None
    if not isinstance(value, dict):
        raise FieldsError(FIELDS_NOT_OBJECT)
    return value
