"""Remote review records (schema 2): what a client publishes, checks, and mirrors locally.

A record is one GREEN/RED verdict of one reuse key, as the team review store keeps it
(docs/review-store.md, "Client"). Three jobs live here, all pure:

- ``build_record``: project a local execution into a record. The *summary* share keeps the
  owner fields of an Agent/Human result, a runtime result reduced to
  ``{verdict, exitCode, durationMs, truncated}``, and usage reduced to
  ``{turn, attempt, usage}`` per attempt; it never carries argv, stdout, stderr, the tool
  audit or the repository path. The *full* share adds ``execution``: the whole execution
  JSON minus ``provenance.repoPath``.
- ``validate_record``: every check a client makes before it trusts a record from the store:
  its shape (the JSON Schema ``record_format.RECORD_SHAPE``), then the rules that span
  fields, in code. The store is shared and a publisher may be careless or hostile, so the record's key is
  recomputed from its own ``evalDefHash``, ``fingerprints`` and ``kinds``: a record can only
  ever answer for the key its inputs produce.
- ``mirror_execution``: the self-contained local execution (``remote-<executionId>``) that
  stands for a remote record in the local reuse history.

Two fields are our extensions of the reference record: ``kinds`` (``{artifactName:
"folder"|"file"}``; the v2 reuse key covers the Artifact kind, so without it the key could
not be recomputed) and ``executionPaths`` (the execution-path pins of the review, which
travel with remote records so a mirror carries the same provenance as the original).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from artifactize.domain.declarations.model import ArtifactKind
from artifactize.domain.reviews.remote.record_format import (
    FULL_RECORD_MAX_BYTES as FULL_RECORD_MAX_BYTES,
)
from artifactize.domain.reviews.remote.record_format import ID_MAX_CHARS as ID_MAX_CHARS
from artifactize.domain.reviews.remote.record_format import LABEL_MAX_BYTES as LABEL_MAX_BYTES
from artifactize.domain.reviews.remote.record_format import MIRROR_PREFIX as MIRROR_PREFIX
from artifactize.domain.reviews.remote.record_format import (
    OPTION_COUNT_FIELDS,
    OPTION_TEXT_FIELDS,
    PRODUCER_FIELDS,
    RUNTIME_RESULT_FIELDS,
    TIME_RULE,
    UNKNOWN_FIELD,
    USAGE_FIELDS,
    is_full,
    record_problem,
    record_size_limit,
    shown,
)
from artifactize.domain.reviews.remote.record_format import (
    PUBLISHER_MAX_CHARS as PUBLISHER_MAX_CHARS,
)
from artifactize.domain.reviews.remote.record_format import RECORD_SCHEMA as RECORD_SCHEMA
from artifactize.domain.reviews.remote.record_format import (
    SUMMARY_RECORD_MAX_BYTES as SUMMARY_RECORD_MAX_BYTES,
)
from artifactize.domain.reviews.remote.record_format import record_bytes as record_bytes
from artifactize.domain.reviews.reuse.keys import reuse_key
from artifactize.kernel.bounded_json import first_refusal
from artifactize.kernel.document_codec import execution_from_json
from artifactize.kernel.timestamps import normalize_rfc3339
from artifactize.ports.documents import (
    AttemptDocument,
    ExecutionDocument,
    ProducerDocument,
    ProfileDocument,
    ProvenanceDocument,
    StoreRecord,
)
from artifactize.ports.ids import EvalId, ExecutionId, RequestId, ReuseKey, RunId
from artifactize.ports.review_store import SHARE_MODES
from artifactize.ports.state import ExecutionRecord
from artifactize.ports.statuses import VERDICT_STATUSES, ExecutionStatus, ProfileKind

# The execution fields that must equal the record's (execution field, record field).
_SAME_IN_EXECUTION = (
    ("id", "executionId"),
    ("key", "key"),
    ("evalDefHash", "evalDefHash"),
    ("fingerprints", "fingerprints"),
    ("evalId", "evalId"),
    ("runId", "runId"),
    ("requestId", "requestId"),
    ("status", "verdict"),
    ("completedAt", "completedAt"),
)


class RecordError(ValueError):
    """An execution that cannot become a record (not GREEN/RED, no key, a mirror, ...)."""


class _Invalid(Exception):
    """Internal: the first problem found in a record."""


@dataclass(frozen=True)
class RemoteRecord:
    """A record that passed ``validate_record``; ``data`` is the record as received."""

    key: str
    execution_id: str
    eval_id: str
    verdict: str
    kind: str  # profile kind: runtime | agent | human
    completed_at: str  # normalized: UTC, nine fractional digits
    started_at: str | None  # normalized
    publisher: str | None
    published_at: str | None  # normalized
    reviewer: str | None
    producer_name: str | None
    data: StoreRecord


# --- building ----------------------------------------------------------------------------


def is_mirror(execution: Mapping[str, Any]) -> bool:
    """Whether an execution stands for a remote record (mirrors are never re-published)."""
    identifier = execution.get("id")
    from_store = isinstance(identifier, str) and identifier.startswith(MIRROR_PREFIX)
    return from_store or execution.get("origin") is not None


def summary_result(result: Any, kind: str) -> Any:
    """An Agent/Human result as is; a runtime result reduced to its verdict and exit facts."""
    if kind != ProfileKind.RUNTIME or not isinstance(result, Mapping):
        return copy.deepcopy(result)
    return {name: result[name] for name in RUNTIME_RESULT_FIELDS if name in result}


def summary_usage(usage: Any) -> list[AttemptDocument]:
    """``{turn, attempt, usage}`` per attempt; provider error texts stay local. (From a
    saved or received execution: a field it lacks stays absent, and a record's shape check
    refuses the record then.)"""
    if not isinstance(usage, list):
        return []
    projected = [
        {name: copy.deepcopy(attempt[name]) for name in USAGE_FIELDS if name in attempt}
        for attempt in usage
        if isinstance(attempt, Mapping)
    ]
    return cast(list[AttemptDocument], projected)


def record_options(profile: Mapping[str, Any]) -> dict[str, str | int]:
    """The profile's backend settings; never a runtime command or its args."""
    names = OPTION_TEXT_FIELDS + OPTION_COUNT_FIELDS
    return {name: profile[name] for name in names if profile.get(name) is not None}


def build_record(execution: ExecutionDocument, kinds: Mapping[str, str], share: str) -> StoreRecord:
    """The schema-2 record of a completed GREEN/RED keyed execution (its saved JSON).

    ``kinds`` gives the Artifact kind of every name in the execution's ``fingerprints``.
    Raises ``RecordError`` for an execution that cannot be published. The record is not
    validated here: run ``validate_record`` on it (the size limit is checked there).
    """
    identifier = _need(execution, "id")
    if share not in SHARE_MODES:
        raise RecordError(f"share must be one of {', '.join(SHARE_MODES)}, not {share!r}")
    status = execution.get("status")
    if status not in VERDICT_STATUSES:
        raise RecordError(f"execution {identifier} is {status}; only GREEN or RED is published")
    if is_mirror(execution):
        raise RecordError(f"execution {identifier} mirrors a remote record; it is not re-published")
    key = execution.get("key")
    if not isinstance(key, str):
        raise RecordError(f"execution {identifier} has no reuse key")
    fingerprints = dict(_need(execution, "fingerprints"))
    missing = sorted(name for name in fingerprints if name not in kinds)
    if missing:
        raise RecordError(f"execution {identifier}: no Artifact kind for {', '.join(missing)}")
    profile = _need(execution, "profile")
    kind = profile.get("kind")
    provenance = execution.get("provenance")
    record: StoreRecord = {
        "schema": RECORD_SCHEMA,
        "key": key,
        "evalDefHash": _need(execution, "evalDefHash"),
        "fingerprints": fingerprints,
        "kinds": {name: kinds[name] for name in fingerprints},
        "verdict": status,
        "evalId": _need(execution, "evalId"),
        "runId": _need(execution, "runId"),
        "requestId": _need(execution, "requestId"),
        "executionId": identifier,
        "profile": {"kind": kind},
        "options": record_options(profile),
        "result": summary_result(execution.get("result"), str(kind)),
        "usage": summary_usage(execution.get("usage")),
        "startedAt": execution.get("startedAt"),
        "completedAt": _need(execution, "completedAt"),
    }
    if execution.get("reviewer") is not None:
        record["reviewer"] = execution["reviewer"]
    producer: Mapping[str, Any] | None = execution.get("producer")
    if isinstance(producer, Mapping):
        shared = {name: producer[name] for name in PRODUCER_FIELDS if name in producer}
        record["producer"] = cast(ProducerDocument, shared)
    if provenance is not None and provenance.get("executionPaths"):
        record["executionPaths"] = copy.deepcopy(dict(provenance["executionPaths"]))
    if share == "full":
        record["execution"] = full_execution(execution)
    return record


def full_execution(execution: ExecutionDocument) -> ExecutionDocument:
    """The execution JSON as shared in full: everything but the local repository path."""
    shared = copy.deepcopy(execution)
    provenance = shared.get("provenance")
    if isinstance(provenance, dict):
        provenance.pop("repoPath", None)
    return shared


def _need(execution: Mapping[str, Any], name: str) -> Any:
    if execution.get(name) is None:
        raise RecordError(f"execution {execution.get('id')!s} has no `{name}`")
    return execution[name]


# --- validation ----------------------------------------------------------------------------


def validate_record(raw: Any) -> RemoteRecord | str:
    """The record when every client check passes, else the first problem found.

    The problem names the field and the rule, never echoes a value, and is meant for
    "Ignoring an invalid remote review record: <problem>".
    """
    refused = first_refusal(raw)
    if refused is not None:
        return f"the record is not JSON we accept: {refused}"
    try:
        return _validate(raw)
    except _Invalid as problem:
        return str(problem)


def _validate(raw: Any) -> RemoteRecord:
    """The shape first (``record_format.RECORD_SHAPE``), then what spans fields."""
    if not isinstance(raw, dict):
        raise _Invalid("a record must be a JSON object")
    _check_size(raw)
    problem = record_problem(raw)
    if problem is not None:
        raise _Invalid(problem)
    if set(raw["kinds"]) != set(raw["fingerprints"]):
        raise _Invalid("field `kinds` must name exactly the Artifacts of `fingerprints`")
    verdict = raw["verdict"]
    kind = str(raw["profile"]["kind"])
    _check_result(raw["result"], verdict, kind)
    started = None if raw["startedAt"] is None else _time(raw["startedAt"], "startedAt")
    completed = _time(raw["completedAt"], "completedAt")
    published = raw.get("publishedAt")
    published = None if published is None else _time(published, "publishedAt")
    _check_key(raw)
    if "execution" in raw:
        _check_execution(raw["execution"], raw, kind)
    producer = raw.get("producer")
    return RemoteRecord(
        key=raw["key"],
        execution_id=raw["executionId"],
        eval_id=raw["evalId"],
        verdict=verdict,
        kind=kind,
        completed_at=completed,
        started_at=started,
        publisher=raw.get("publisher"),
        published_at=published,
        reviewer=raw.get("reviewer"),
        producer_name=producer["name"] if producer is not None else None,
        data=cast(StoreRecord, raw),  # its shape was checked above
    )


def _check_size(raw: Mapping[str, Any]) -> None:
    try:
        size = record_bytes(raw)
    except (ValueError, TypeError):
        raise _Invalid("the record is not plain JSON") from None
    limit = record_size_limit(raw)
    if size > limit:
        which = "with" if is_full(raw) else "without"
        raise _Invalid(f"the record has {size} bytes; the limit {which} `execution` is {limit}")


def _object(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Invalid(f"field `{name}` must be an object")
    return value


def _check_result(result: Mapping[str, Any], verdict: str, kind: str) -> None:
    if result.get("verdict") != verdict:
        raise _Invalid("field `result.verdict` must equal `verdict`")
    if kind == ProfileKind.RUNTIME:
        extra = sorted(name for name in result if name not in RUNTIME_RESULT_FIELDS)
        if extra:
            unknown = UNKNOWN_FIELD.format(name=shown("result." + extra[0]))
            raise _Invalid(f"{unknown} of a runtime result")


def _time(value: Any, name: str) -> str:
    normalized = normalize_rfc3339(value) if isinstance(value, str) else None
    if normalized is None:
        raise _Invalid(f"field `{name}` {TIME_RULE}")
    return normalized


def _check_key(raw: Mapping[str, Any]) -> None:
    deps = {
        name: (ArtifactKind(raw["kinds"][name]), fingerprint)
        for name, fingerprint in raw["fingerprints"].items()
    }
    if reuse_key(raw["evalDefHash"], deps) != raw["key"]:
        raise _Invalid(
            "field `key` does not match the key recomputed from `evalDefHash`, "
            "`fingerprints` and `kinds`"
        )


def _check_execution(execution: Any, raw: Mapping[str, Any], kind: str) -> None:
    """A full record's ``execution`` must tell the same story as the record around it."""
    _object(execution, "execution")
    if is_mirror(execution):
        raise _Invalid("field `execution` is itself a mirror of a remote record")
    for inner, outer in _SAME_IN_EXECUTION:
        if execution.get(inner) != raw[outer]:
            raise _Invalid(f"field `execution.{inner}` does not match `{outer}`")
    profile = execution.get("profile")
    if not isinstance(profile, dict) or profile.get("kind") != kind:
        raise _Invalid("field `execution.profile.kind` does not match `profile.kind`")
    if summary_result(execution.get("result"), kind) != raw["result"]:
        raise _Invalid("field `execution.result` does not match `result`")
    if summary_usage(execution.get("usage")) != raw["usage"]:
        raise _Invalid("field `execution.usage` does not match `usage`")
    if "kinds" in execution and execution["kinds"] != raw["kinds"]:
        raise _Invalid("field `execution.kinds` does not match `kinds`")
    provenance = _object(execution.get("provenance"), "execution.provenance")
    if "repoPath" in provenance:
        raise _Invalid("field `execution.provenance.repoPath` must not be shared")
    if provenance.get("executionPaths") != raw.get("executionPaths"):
        raise _Invalid(
            "field `execution.provenance.executionPaths` does not match `executionPaths`"
        )


# --- mirrors ---------------------------------------------------------------------------------


def mirror_execution(record: RemoteRecord, store_url: str) -> ExecutionDocument:
    """The local execution JSON that stands for ``record`` (id ``remote-<executionId>``).

    Self-contained: result, profile, provenance (with an empty repository path and the
    execution-path pins), usage, producer, reviewer, and ``origin`` naming the store, the
    publisher and the publication time. A full record contributes its tool audit and
    complete usage. Times are normalized to nine fractional digits.
    """
    data = record.data
    shared = data.get("execution")
    base: ExecutionDocument = copy.deepcopy(shared) if isinstance(shared, dict) else {}
    # The shared execution's provenance (a full record), completed from the record below.
    provenance = cast(ProvenanceDocument, dict(base.get("provenance") or {}))
    provenance.update(
        {
            "repoPath": "",
            "runId": RunId(data["runId"]),
            "requestId": RequestId(data["requestId"]),
            "evalId": EvalId(data["evalId"]),
            "evalDefHash": data["evalDefHash"],
            "completedAt": record.completed_at,
        }
    )
    if "executionPaths" in data:
        provenance["executionPaths"] = copy.deepcopy(data["executionPaths"])
    mirror: ExecutionDocument = {
        **base,
        "id": mirror_id(record),
        "requestId": RequestId(data["requestId"]),
        "runId": RunId(data["runId"]),
        "evalId": EvalId(record.eval_id),
        "key": ReuseKey(record.key),
        "evalDefHash": data["evalDefHash"],
        "fingerprints": copy.deepcopy(data["fingerprints"]),
        "kinds": copy.deepcopy(data["kinds"]),
        "profile": base.get("profile")
        or cast(ProfileDocument, {"kind": record.kind, **data["options"]}),
        "status": ExecutionStatus(record.verdict),
        "result": base.get("result", copy.deepcopy(data["result"])),
        "error": None,
        "errorCode": None,
        "provenance": provenance,
        "usage": base.get("usage", copy.deepcopy(data["usage"])),
        "toolCalls": base.get("toolCalls", []),
        "producer": copy.deepcopy(data.get("producer")),
        "startedAt": record.started_at,
        "completedAt": record.completed_at,
        "origin": {
            "storeUrl": store_url,
            "publisher": record.publisher,
            "publishedAt": record.published_at,
        },
    }
    if record.reviewer is not None:
        mirror["reviewer"] = record.reviewer
    return mirror


def mirror_id(record: RemoteRecord) -> ExecutionId:
    """A mirror's local execution ID: the store's, marked as a mirror."""
    return ExecutionId(MIRROR_PREFIX + record.execution_id)


def mirror_record(record: RemoteRecord, store_url: str) -> ExecutionRecord:
    """``mirror_execution`` as a settled execution row: no owner (pid and start time 0)."""
    backend = record.data["options"].get("backend")
    return ExecutionRecord(
        id=mirror_id(record),
        key=ReuseKey(record.key),
        eval_def_hash=str(record.data["evalDefHash"]),
        status=ExecutionStatus(record.verdict),
        owner_pid=0,
        owner_start_time=0.0,
        backend=backend if isinstance(backend, str) else None,
        completed_at=record.completed_at,
        data=execution_from_json(mirror_execution(record, store_url)),
    )
