"""Remote review records (schema 2): what a client publishes, checks, and mirrors locally.

A record is one GREEN/RED verdict of one reuse key, as the team review store keeps it
(docs/review-store.md, "Client"). Three jobs live here, all pure:

- ``build_record``: project a local execution into a record. The *summary* share keeps the
  owner fields of an Agent/Human result, a runtime result reduced to
  ``{verdict, exitCode, durationMs, truncated}``, and usage reduced to
  ``{turn, attempt, usage}`` per attempt; it never carries argv, stdout, stderr, the tool
  audit or the repository path. The *full* share adds ``execution``: the whole execution
  JSON minus ``provenance.repoPath``.
- ``validate_record``: every check a client makes before it trusts a record from the store.
  The store is shared and a publisher may be careless or hostile, so the record's key is
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
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from domain.declarations.model import ArtifactKind
from domain.identifiers import is_identifier
from domain.reviews.reuse.fingerprints import SCRIPT_OUTPUT_CHARACTERS, SCRIPT_OUTPUT_MAX_CHARS
from domain.reviews.reuse.keys import reuse_key
from domain.reviews.rfc3339 import normalize_rfc3339
from ports.review_store import SHARE_MODES
from ports.state import ExecutionRecord
from ports.statuses import PROFILE_KINDS, VERDICTS, ProfileKind

RECORD_SCHEMA = 2
SUMMARY_RECORD_MAX_BYTES = 256 * 1024
"""Largest serialized record without ``execution`` (compact UTF-8 JSON)."""
FULL_RECORD_MAX_BYTES = 16 * 1024 * 1024
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

_HEX64 = re.compile(r"[0-9a-f]{64}")
_ID = re.compile(rf"[A-Za-z0-9._:-]{{1,{ID_MAX_CHARS}}}")
_FINGERPRINT = re.compile(f"[{SCRIPT_OUTPUT_CHARACTERS}]{{1,{SCRIPT_OUTPUT_MAX_CHARS}}}")
_PUBLISHER = re.compile(rf"[A-Za-z0-9._-]{{1,{PUBLISHER_MAX_CHARS}}}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


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
    data: Mapping[str, Any]


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


def summary_usage(usage: Any) -> list[dict[str, Any]]:
    """``{turn, attempt, usage}`` per attempt; provider error texts stay local."""
    if not isinstance(usage, list):
        return []
    return [
        {name: copy.deepcopy(attempt[name]) for name in USAGE_FIELDS if name in attempt}
        for attempt in usage
        if isinstance(attempt, Mapping)
    ]


def record_options(profile: Mapping[str, Any]) -> dict[str, Any]:
    """The profile's backend settings; never a runtime command or its args."""
    names = OPTION_TEXT_FIELDS + OPTION_COUNT_FIELDS
    return {name: profile[name] for name in names if profile.get(name) is not None}


def build_record(
    execution: Mapping[str, Any], kinds: Mapping[str, str], share: str
) -> dict[str, Any]:
    """The schema-2 record of a completed GREEN/RED keyed execution (its saved JSON).

    ``kinds`` gives the Artifact kind of every name in the execution's ``fingerprints``.
    Raises ``RecordError`` for an execution that cannot be published. The record is not
    validated here: run ``validate_record`` on it (the size limit is checked there).
    """
    identifier = _need(execution, "id")
    if share not in SHARE_MODES:
        raise RecordError(f"share must be one of {', '.join(SHARE_MODES)}, not {share!r}")
    status = execution.get("status")
    if status not in VERDICTS:
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
    provenance = execution.get("provenance") or {}
    record: dict[str, Any] = {
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
    producer = execution.get("producer")
    if isinstance(producer, Mapping):
        record["producer"] = {name: producer[name] for name in PRODUCER_FIELDS if name in producer}
    if provenance.get("executionPaths"):
        record["executionPaths"] = copy.deepcopy(dict(provenance["executionPaths"]))
    if share == "full":
        record["execution"] = full_execution(execution)
    return record


def full_execution(execution: Mapping[str, Any]) -> dict[str, Any]:
    """The execution JSON as shared in full: everything but the local repository path."""
    shared = copy.deepcopy(dict(execution))
    provenance = shared.get("provenance")
    if isinstance(provenance, dict):
        provenance.pop("repoPath", None)
    return shared


def _need(execution: Mapping[str, Any], name: str) -> Any:
    if execution.get(name) is None:
        raise RecordError(f"execution {execution.get('id')!s} has no `{name}`")
    return execution[name]


def record_bytes(record: Mapping[str, Any]) -> int:
    """The size of ``record`` as compact UTF-8 JSON; raises ValueError if it is not JSON."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return len(text.encode("utf-8"))


# --- validation ----------------------------------------------------------------------------


def validate_record(raw: Any) -> RemoteRecord | str:
    """The record when every client check passes, else the first problem found.

    The problem names the field and the rule, never echoes a value, and is meant for
    "Ignoring an invalid remote review record: <problem>".
    """
    try:
        return _validate(raw)
    except _Invalid as problem:
        return str(problem)


def _validate(raw: Any) -> RemoteRecord:
    if not isinstance(raw, dict):
        raise _Invalid("a record must be a JSON object")
    _check_size(raw)
    unknown = sorted(name for name in raw if name not in REQUIRED_FIELDS + OPTIONAL_FIELDS)
    if unknown:
        raise _Invalid(f"unknown field {_shown(unknown[0])}")
    missing = [name for name in REQUIRED_FIELDS if name not in raw]
    if missing:
        raise _Invalid(f"field `{missing[0]}` is missing")
    if type(raw["schema"]) is not int or raw["schema"] != RECORD_SCHEMA:
        raise _Invalid(f"field `schema` must be {RECORD_SCHEMA}")
    for name in ("key", "evalDefHash"):
        _hex(raw[name], name)
    _check_fingerprints(raw["fingerprints"], raw["kinds"])
    verdict = raw["verdict"]
    if verdict not in VERDICTS:
        raise _Invalid("field `verdict` must be GREEN or RED")
    _check_eval_id(raw["evalId"])
    for name in ("runId", "requestId", "executionId"):
        _id(raw[name], name)
    if raw["executionId"].startswith(MIRROR_PREFIX):
        raise _Invalid("field `executionId` names a mirror; mirrors are never published")
    kind = _check_profile(raw["profile"])
    _check_options(raw["options"])
    _check_result(raw["result"], verdict, kind)
    _check_usage(raw["usage"], "usage")
    started = None if raw["startedAt"] is None else _time(raw["startedAt"], "startedAt")
    completed = _time(raw["completedAt"], "completedAt")
    reviewer = None if raw.get("reviewer") is None else _label(raw["reviewer"], "reviewer")
    producer_name = _check_producer(raw.get("producer"))
    if "executionPaths" in raw:
        _check_execution_paths(raw["executionPaths"], "executionPaths")
    publisher = raw.get("publisher")
    if publisher is not None and not (
        isinstance(publisher, str) and _PUBLISHER.fullmatch(publisher)
    ):
        raise _Invalid(f"field `publisher` must be 1-{PUBLISHER_MAX_CHARS} of [A-Za-z0-9._-]")
    published = raw.get("publishedAt")
    published = None if published is None else _time(published, "publishedAt")
    _check_key(raw)
    if "execution" in raw:
        _check_execution(raw["execution"], raw, kind)
    return RemoteRecord(
        key=raw["key"],
        execution_id=raw["executionId"],
        eval_id=raw["evalId"],
        verdict=verdict,
        kind=kind,
        completed_at=completed,
        started_at=started,
        publisher=publisher,
        published_at=published,
        reviewer=reviewer,
        producer_name=producer_name,
        data=raw,
    )


def _shown(name: str) -> str:
    """A name from the store, escaped (no terminal control) and bounded."""
    cut = name[:SHOWN_NAME_MAX_CHARS] + ("…" if len(name) > SHOWN_NAME_MAX_CHARS else "")
    return json.dumps(cut, ensure_ascii=True)


def _check_size(raw: Mapping[str, Any]) -> None:
    try:
        size = record_bytes(raw)
    except (ValueError, TypeError):
        raise _Invalid("the record is not plain JSON") from None
    full = raw.get("execution") is not None
    limit = FULL_RECORD_MAX_BYTES if full else SUMMARY_RECORD_MAX_BYTES
    if size > limit:
        which = "with" if full else "without"
        raise _Invalid(f"the record has {size} bytes; the limit {which} `execution` is {limit}")


def _hex(value: Any, name: str) -> None:
    if not (isinstance(value, str) and _HEX64.fullmatch(value)):
        raise _Invalid(f"field `{name}` must be 64 lowercase hex characters")


def _id(value: Any, name: str) -> None:
    if not (isinstance(value, str) and _ID.fullmatch(value)):
        raise _Invalid(f"field `{name}` must be 1-{ID_MAX_CHARS} of [A-Za-z0-9._:-]")


def _object(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Invalid(f"field `{name}` must be an object")
    return value


def _check_fingerprints(fingerprints: Any, kinds: Any) -> None:
    _object(fingerprints, "fingerprints")
    _object(kinds, "kinds")
    if not fingerprints:
        raise _Invalid("field `fingerprints` must name at least one Artifact")
    for name, value in fingerprints.items():
        if not is_identifier(name):
            raise _Invalid(f"field `fingerprints` has an invalid Artifact name {_shown(name)}")
        if not (isinstance(value, str) and _FINGERPRINT.fullmatch(value)):
            raise _Invalid(
                f"fingerprint of `{name}` must be 1-{SCRIPT_OUTPUT_MAX_CHARS} of "
                f"[{SCRIPT_OUTPUT_CHARACTERS}]"
            )
    if set(kinds) != set(fingerprints):
        raise _Invalid("field `kinds` must name exactly the Artifacts of `fingerprints`")
    for name, value in kinds.items():
        if value not in ARTIFACT_KINDS:
            raise _Invalid(f"kind of `{name}` must be {' or '.join(ARTIFACT_KINDS)}")


def _check_eval_id(value: Any) -> None:
    parts = value.split("/") if isinstance(value, str) else []
    if len(parts) != 2 or not all(is_identifier(part) for part in parts):
        raise _Invalid("field `evalId` must be ARTIFACT/EVAL, two identifiers")


def _check_profile(profile: Any) -> str:
    _object(profile, "profile")
    if set(profile) != {"kind"} or profile["kind"] not in PROFILE_KINDS:
        raise _Invalid(f'field `profile` must be {{"kind": {" | ".join(PROFILE_KINDS)}}}')
    return str(profile["kind"])


def _label(value: Any, name: str) -> str:
    if not (
        isinstance(value, str)
        and value.strip()
        and len(value.encode("utf-8", "replace")) <= LABEL_MAX_BYTES
        and not _CONTROL.search(value)
    ):
        raise _Invalid(
            f"field `{name}` must be 1-{LABEL_MAX_BYTES} bytes of text without control characters"
        )
    return value


def _count(value: Any, name: str) -> None:
    if type(value) is not int or value < 0:
        raise _Invalid(f"field `{name}` must be a non-negative integer")


def _check_options(options: Any) -> None:
    _object(options, "options")
    for name, value in options.items():
        if name in OPTION_TEXT_FIELDS:
            _label(value, f"options.{name}")
        elif name in OPTION_COUNT_FIELDS:
            _count(value, f"options.{name}")
        else:
            raise _Invalid(f"unknown field {_shown('options.' + name)}")


def _check_result(result: Any, verdict: str, kind: str) -> None:
    _object(result, "result")
    if result.get("verdict") != verdict:
        raise _Invalid("field `result.verdict` must equal `verdict`")
    if kind == ProfileKind.RUNTIME:
        extra = sorted(name for name in result if name not in RUNTIME_RESULT_FIELDS)
        if extra:
            raise _Invalid(f"unknown field {_shown('result.' + extra[0])} of a runtime result")


def _check_usage(usage: Any, name: str) -> None:
    if not isinstance(usage, list):
        raise _Invalid(f"field `{name}` must be a list")
    for index, attempt in enumerate(usage):
        where = f"{name}[{index}]"
        _object(attempt, where)
        if set(attempt) != set(USAGE_FIELDS):
            raise _Invalid(f"field `{where}` must have exactly {', '.join(USAGE_FIELDS)}")
        _count(attempt["turn"], f"{where}.turn")
        _count(attempt["attempt"], f"{where}.attempt")
        for counter, value in _object(attempt["usage"], f"{where}.usage").items():
            _count(value, f"{where}.usage.{_shown(counter)}")


def _check_producer(producer: Any) -> str | None:
    if producer is None:
        return None
    _object(producer, "producer")
    extra = sorted(name for name in producer if name not in PRODUCER_FIELDS)
    if extra:
        raise _Invalid(f"unknown field {_shown('producer.' + extra[0])}")
    name = _label(producer.get("name"), "producer.name")
    _label(producer.get("version"), "producer.version")
    if producer.get("session") is not None:
        _label(producer["session"], "producer.session")
    return name


def _check_execution_paths(paths: Any, name: str) -> None:
    for tool, pins in _object(paths, name).items():
        if not tool:
            raise _Invalid(f"field `{name}` has an empty tool name")
        for path, digest in _object(pins, f"{name}.{_shown(tool)}").items():
            if not path or not (isinstance(digest, str) and _HEX64.fullmatch(digest)):
                raise _Invalid(
                    f"field `{name}.{_shown(tool)}` must map paths to 64 lowercase hex digests"
                )


def _time(value: Any, name: str) -> str:
    normalized = normalize_rfc3339(value) if isinstance(value, str) else None
    if normalized is None:
        raise _Invalid(f"field `{name}` must be an RFC 3339 timestamp")
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


def mirror_execution(record: RemoteRecord, store_url: str) -> dict[str, Any]:
    """The local execution JSON that stands for ``record`` (id ``remote-<executionId>``).

    Self-contained: result, profile, provenance (with an empty repository path and the
    execution-path pins), usage, producer, reviewer, and ``origin`` naming the store, the
    publisher and the publication time. A full record contributes its tool audit and
    complete usage. Times are normalized to nine fractional digits.
    """
    data = record.data
    shared = data.get("execution")
    base: dict[str, Any] = copy.deepcopy(shared) if isinstance(shared, dict) else {}
    provenance: dict[str, Any] = dict(base.get("provenance") or {})
    provenance.update(
        {
            "repoPath": "",
            "runId": data["runId"],
            "requestId": data["requestId"],
            "evalId": data["evalId"],
            "evalDefHash": data["evalDefHash"],
            "completedAt": record.completed_at,
        }
    )
    if "executionPaths" in data:
        provenance["executionPaths"] = copy.deepcopy(data["executionPaths"])
    mirror = {
        **base,
        "id": MIRROR_PREFIX + record.execution_id,
        "requestId": data["requestId"],
        "runId": data["runId"],
        "evalId": record.eval_id,
        "key": record.key,
        "evalDefHash": data["evalDefHash"],
        "fingerprints": copy.deepcopy(data["fingerprints"]),
        "kinds": copy.deepcopy(data["kinds"]),
        "profile": base.get("profile") or {"kind": record.kind, **data["options"]},
        "status": record.verdict,
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


def mirror_record(record: RemoteRecord, store_url: str) -> ExecutionRecord:
    """``mirror_execution`` as a settled execution row: no owner (pid and start time 0)."""
    backend = record.data["options"].get("backend")
    return ExecutionRecord(
        id=MIRROR_PREFIX + record.execution_id,
        key=record.key,
        eval_def_hash=str(record.data["evalDefHash"]),
        status=record.verdict,
        owner_pid=0,
        owner_start_time=0.0,
        backend=backend if isinstance(backend, str) else None,
        completed_at=record.completed_at,
        data=mirror_execution(record, store_url),
    )
