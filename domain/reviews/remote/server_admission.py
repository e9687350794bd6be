"""What the team review store server accepts: lookup bodies and published records.

The server checks only the *envelope* of a record (the fields it indexes and the ones a
reader relies on to pick the latest verdict); every client validates a record fully before
reusing it (both shapes live in ``record_format``). Checks here are pure, so the HTTP layer
only maps a refusal's ``kind`` to a status code (400, 410, 413).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass

from artifactize.domain.reviews.remote.record_format import (
    FULL_RECORD_MAX_BYTES as FULL_RECORD_MAX_BYTES,
)
from artifactize.domain.reviews.remote.record_format import ID_MAX_CHARS, KIB, envelope_problem
from artifactize.domain.reviews.remote.record_format import RECORD_SCHEMA as RECORD_SCHEMA
from artifactize.domain.reviews.remote.record_format import (
    SUMMARY_RECORD_MAX_BYTES as SUMMARY_RECORD_MAX_BYTES,
)
from artifactize.domain.reviews.remote.record_format import record_size_limit as record_size_limit
from artifactize.domain.text import compact_json_size
from artifactize.kernel.timestamps import normalize_rfc3339
from artifactize.ports.review_store import LOOKUP_KEYS_MAX, PUBLISH_BATCH_MAX_ENTRIES
from artifactize.ports.statuses import ProfileKind

# Room for the envelope around the largest record; a bigger body is refused unread.
REQUEST_BODY_SLACK_BYTES = 64 * KIB
REQUEST_BODY_MAX_BYTES = FULL_RECORD_MAX_BYTES + REQUEST_BODY_SLACK_BYTES
EXECUTION_ID_MAX_CHARS = ID_MAX_CHARS
HUMAN_KIND = ProfileKind.HUMAN
LOOKUP_FIELDS = frozenset({"keys"})
BATCH_FIELDS = frozenset({"entries"})
BATCH_ENTRY_FIELDS = frozenset({"key", "record"})

_REUSE_KEY = re.compile(r"[0-9a-f]{64}")
OBJECT_KEYS_GONE = (
    "Lookup keys must be reuse keys; object keys come from artifactize 0.4, "
    "which this store no longer serves. Upgrade artifactize."
)


class Refusal(enum.Enum):
    INVALID = "invalid"  # 400
    GONE = "gone"  # 410: an old client's request shape
    TOO_LARGE = "too_large"  # 413


class StoreRequestError(Exception):
    def __init__(self, kind: Refusal, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class CheckedRecord:
    """The envelope fields of an accepted record; ``completed_at`` in the stored form."""

    key: str
    execution_id: str
    completed_at: str
    profile_kind: str


def is_reuse_key(value: object) -> bool:
    return isinstance(value, str) and _REUSE_KEY.fullmatch(value) is not None


def _invalid(message: str) -> StoreRequestError:
    return StoreRequestError(Refusal.INVALID, message)


def _body_object(body: object, what: str, fields: frozenset[str]) -> Mapping[str, object]:
    """``body`` as a JSON object holding no field but ``fields``."""
    if not isinstance(body, Mapping):
        raise _invalid(f"The {what} body must be a JSON object.")
    unknown = sorted(set(body) - fields)
    if unknown:
        raise _invalid(f"Unknown field in the {what} body: {unknown[0]}.")
    return body


def parse_lookup_keys(body: object) -> list[str]:
    """The keys of a lookup body ``{"keys": [...]}``, each once, in request order."""
    keys = _body_object(body, "lookup", LOOKUP_FIELDS).get("keys")
    if not isinstance(keys, list):
        raise _invalid("keys must be an array of reuse keys.")
    if any(isinstance(key, Mapping) for key in keys):
        raise StoreRequestError(Refusal.GONE, OBJECT_KEYS_GONE)
    if len(keys) > LOOKUP_KEYS_MAX:
        raise _invalid(f"keys has {len(keys)} entries; a lookup takes at most {LOOKUP_KEYS_MAX}.")
    for index, key in enumerate(keys):
        if not is_reuse_key(key):
            raise _invalid(f"keys[{index}] is not a reuse key (64 lowercase hex characters).")
    return list(dict.fromkeys(keys))


def check_record(
    path_key: str, record: object, size_bytes: int, *, key_named: str = "the key in the path"
) -> CheckedRecord:
    """Check a published record against its path key (``key_named`` in messages) and the
    size it arrived in."""
    if not is_reuse_key(path_key):
        raise _invalid("The key in the path is not a reuse key (64 lowercase hex characters).")
    if not isinstance(record, Mapping):
        raise _invalid("The record must be a JSON object.")
    limit = record_size_limit(record)
    if size_bytes > limit:
        what = "with its execution" if limit == FULL_RECORD_MAX_BYTES else "summary"
        raise StoreRequestError(
            Refusal.TOO_LARGE,
            f"The record is {size_bytes} bytes; a {what} record may have at most {limit}.",
        )
    problem = envelope_problem(record)  # record_format.ENVELOPE_SHAPE
    if problem is not None:
        raise _invalid(problem)
    if record["key"] != path_key:
        raise _invalid(f"key must equal {key_named}.")
    if record["result"].get("verdict") != record["verdict"]:
        raise _invalid("result.verdict must equal verdict.")
    kind = record["profile"]["kind"]
    execution_id = record["executionId"]
    completed_at = stored_timestamp(record["completedAt"])
    if completed_at is None:
        raise _invalid("completedAt must be an RFC 3339 timestamp.")
    return CheckedRecord(path_key, execution_id, completed_at, str(kind))


@dataclass(frozen=True)
class BatchEntry:
    """One accepted record of a batch publish: its envelope and the record."""

    checked: CheckedRecord
    record: Mapping[str, object]


def check_publish_batch(body: object) -> list[BatchEntry]:
    """Every record of a batch publish ``{"entries": [{"key", "record"}, …]}``, each checked
    as ``PUT /v1/entries/{key}`` checks its body; the first refusal names its entry and
    refuses the whole batch. A record's size is its compact UTF-8 JSON, the form the
    client sends (a ``PUT`` counts its body as it arrived)."""
    items = _body_object(body, "batch", BATCH_FIELDS).get("entries")
    if not isinstance(items, list) or not items:
        raise _invalid("entries must be a non-empty array of {key, record} objects.")
    if len(items) > PUBLISH_BATCH_MAX_ENTRIES:
        raise _invalid(
            f"entries has {len(items)} records; a batch takes at most {PUBLISH_BATCH_MAX_ENTRIES}."
        )
    accepted: list[BatchEntry] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping) or set(item) != BATCH_ENTRY_FIELDS:
            raise _invalid(f"entries[{index}] must be an object with exactly key and record.")
        key, record = item["key"], item["record"]
        if not is_reuse_key(key):
            raise _invalid(
                f"entries[{index}].key is not a reuse key (64 lowercase hex characters)."
            )
        try:
            size = compact_json_size(record) if isinstance(record, Mapping) else 0
            checked = check_record(key, record, size, key_named=f"entries[{index}].key")
        except StoreRequestError as error:
            raise StoreRequestError(error.kind, f"entries[{index}]: {error.message}") from None
        assert isinstance(record, Mapping)  # check_record refused anything else
        accepted.append(BatchEntry(checked, record))
    return accepted


def stored_timestamp(value: object) -> str | None:
    """An RFC 3339 timestamp in the stored form (UTC, nine fractional digits), or None.

    Digits past the ninth are dropped (the server only orders by it); a leap second
    (``:60``) is refused, as Python cannot represent it."""
    return normalize_rfc3339(value, truncate=True) if isinstance(value, str) else None
