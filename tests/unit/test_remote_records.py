"""Remote review records (reviews-and-store.md §5.2): build, validate, mirror.

Keys are computed here by hashing the documented v2 bytes by hand, so a record the domain
accepts really carries the key its inputs produce.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from artifactize.domain.reviews.remote.records import (
    FULL_RECORD_MAX_BYTES,
    ID_MAX_CHARS,
    LABEL_MAX_BYTES,
    PUBLISHER_MAX_CHARS,
    SUMMARY_RECORD_MAX_BYTES,
    RecordError,
    RemoteRecord,
    build_record,
    mirror_execution,
    mirror_record,
    record_bytes,
    validate_record,
)
from artifactize.kernel.timestamps import normalize_rfc3339
from tests.support.remote_records import (
    DEF_HASH,
    FINGERPRINTS,
    KINDS,
    PIN,
    REPO,
    STORE,
    execution,
    key_of,
)


def summary(**changes: Any) -> Any:
    return build_record(execution(**changes), KINDS, "summary")


def full(**changes: Any) -> Any:
    return build_record(execution(**changes), KINDS, "full")


def rekeyed(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its key (and its execution's key) recomputed from its own inputs."""
    record["key"] = key_of(record["evalDefHash"], record["fingerprints"], record["kinds"])
    if "execution" in record:
        record["execution"]["key"] = record["key"]
        record["execution"]["fingerprints"] = copy.deepcopy(record["fingerprints"])
    return record


def accepted(raw: Any) -> RemoteRecord:
    checked = validate_record(raw)
    assert isinstance(checked, RemoteRecord), checked
    return checked


def refused(raw: Any, *words: str) -> str:
    checked = validate_record(raw)
    assert isinstance(checked, str), "the record was accepted"
    for word in words:
        assert word in checked
    return checked


# --- build -------------------------------------------------------------------------------


def test_summary_round_trip() -> None:
    record = summary()
    checked = accepted(record)
    assert checked.key == key_of(DEF_HASH, FINGERPRINTS, KINDS)
    assert (checked.execution_id, checked.eval_id, checked.verdict, checked.kind) == (
        "execution-run-Hq2b9X-1",
        "doc/review",
        "GREEN",
        "agent",
    )
    assert checked.producer_name == "alice@host"
    assert record["schema"] == 2
    assert record["kinds"] == KINDS
    assert record["profile"] == {"kind": "agent"}
    assert record["options"] == {"backend": "openai", "model": "m1", "timeoutMs": 240000}
    assert record["result"] == {"verdict": "GREEN", "notes": "fine"}
    assert record["usage"] == [
        {"turn": 1, "attempt": 1, "usage": {}},
        {"turn": 1, "attempt": 2, "usage": {"inputTokens": 5, "outputTokens": 2}},
    ]
    assert "execution" not in record


def test_summary_never_carries_repo_path_tool_audit_or_errors() -> None:
    text = json.dumps(summary())
    for secret in (REPO, "repoPath", "SECRET-OUT", "toolCalls", "503 upstream"):
        assert secret not in text


def test_runtime_summary_is_reduced_and_carries_no_argv() -> None:
    record = summary(
        profile={"kind": "runtime", "command": "make", "args": ["--secret-flag"], "timeoutMs": 9},
        result={
            "verdict": "GREEN",
            "exitCode": 0,
            "durationMs": 12,
            "truncated": False,
            "stdout": "SECRET-STDOUT",
            "stderr": "SECRET-STDERR",
            "argv": ["make"],
        },
        usage=None,
    )
    assert record["result"] == {
        "verdict": "GREEN",
        "exitCode": 0,
        "durationMs": 12,
        "truncated": False,
    }
    assert record["options"] == {"timeoutMs": 9}
    assert record["usage"] == []
    text = json.dumps(record)
    assert "SECRET" not in text and "--secret-flag" not in text and "make" not in text
    accepted(record)


@pytest.mark.parametrize("share", ["summary", "full"])
def test_execution_paths_travel_in_both_share_modes(share: str) -> None:
    record: Any = build_record(execution(), KINDS, share)
    assert record["executionPaths"] == {"lint_doc": {"bin/lint": PIN}}
    if share == "full":
        assert record["execution"]["provenance"]["executionPaths"] == record["executionPaths"]
    accepted(record)


def test_full_share_holds_the_execution_minus_repo_path() -> None:
    record = full()
    assert REPO not in json.dumps(record)
    shared = record["execution"]
    assert "repoPath" not in shared["provenance"]
    assert shared["toolCalls"][0]["result"] == "SECRET-OUT"  # full means full
    assert shared["usage"][0]["error"] == "503 upstream overloaded"
    assert accepted(record).key == record["key"]


def test_build_does_not_change_the_execution() -> None:
    original = execution()
    kept = copy.deepcopy(original)
    build_record(original, KINDS, "full")
    assert original == kept


@pytest.mark.parametrize(
    ("changes", "kinds", "share", "words"),
    [
        ({"status": "ERROR"}, KINDS, "summary", "only GREEN or RED"),
        ({"key": None}, KINDS, "summary", "no reuse key"),
        ({"id": "remote-execution-x"}, KINDS, "summary", "not re-published"),
        ({"origin": {"storeUrl": STORE}}, KINDS, "summary", "not re-published"),
        ({}, {"doc": "folder"}, "summary", "no Artifact kind for lib"),
        ({}, KINDS, "everything", "share must be"),
        ({"completedAt": None}, KINDS, "summary", "`completedAt`"),
    ],
)
def test_build_refuses(
    changes: dict[str, Any], kinds: dict[str, str], share: str, words: str
) -> None:
    with pytest.raises(RecordError, match=words):
        build_record(execution(**changes), kinds, share)


# --- validation: identity of the key -------------------------------------------------------


def test_a_tampered_key_is_refused() -> None:
    record = summary()
    record["key"] = "d" * 64
    refused(record, "`key` does not match the key recomputed")


def test_a_fingerprint_changed_without_the_key_is_refused() -> None:
    record = summary()
    record["fingerprints"]["lib"] = "v1.3"
    refused(record, "does not match the key recomputed")
    assert isinstance(validate_record(rekeyed(record)), RemoteRecord)


def test_a_kind_changed_without_the_key_is_refused() -> None:
    record = summary()
    record["kinds"]["lib"] = "folder"
    refused(record, "does not match the key recomputed")


def test_a_definition_hash_changed_without_the_key_is_refused() -> None:
    record = summary()
    record["evalDefHash"] = "e" * 64
    refused(record, "does not match the key recomputed")


# --- validation: one rule at a time ----------------------------------------------------------


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(record: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = record
        for part in parents:
            target = target[part]
        target[last] = value

    return change


def _drop(name: str) -> Callable[[dict[str, Any]], None]:
    return lambda record: record.pop(name)


INVALID: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("unknown top-level field", _set("comment", "hi"), 'unknown field "comment"'),
    ("unknown option", _set("options.temperature", 1), 'unknown field "options.temperature"'),
    ("missing field", _drop("usage"), "field `usage` is missing"),
    ("schema 1", _set("schema", 1), "`schema` must be 2"),
    ("schema true", _set("schema", True), "`schema` must be 2"),
    ("uppercase key", _set("key", "A" * 64), "`key` must be 64 lowercase hex"),
    ("short hash", _set("evalDefHash", "b" * 63), "`evalDefHash` must be 64"),
    ("verdict mismatch", _set("verdict", "RED"), "`result.verdict` must equal `verdict`"),
    ("verdict unknown", _set("verdict", "AMBER"), "`verdict` must be GREEN or RED"),
    ("result not object", _set("result", "GREEN"), "`result` must be an object"),
    ("evalId shape", _set("evalId", "doc"), "`evalId` must be ARTIFACT/EVAL"),
    ("evalId bad name", _set("evalId", "doc/-x"), "`evalId` must be ARTIFACT/EVAL"),
    ("runId charset", _set("runId", "run X"), "`runId` must be 1-200"),
    ("requestId empty", _set("requestId", ""), "`requestId` must be 1-200"),
    ("mirror id", _set("executionId", "remote-execution-x"), "names a mirror"),
    ("profile kind", _set("profile", {"kind": "robot"}), "field `profile` must be"),
    ("profile extra", _set("profile", {"kind": "agent", "model": "m"}), "field `profile` must"),
    ("option type", _set("options.timeoutMs", "fast"), "`options.timeoutMs` must be a non-neg"),
    ("option negative", _set("options.timeoutMs", -1), "`options.timeoutMs` must be a non-neg"),
    (
        "usage error kept",
        _set("usage", [{"turn": 1, "attempt": 1, "usage": {}, "error": "x"}]),
        "`usage[0]` must have exactly",
    ),
    (
        "usage counter",
        _set("usage", [{"turn": 1, "attempt": 1, "usage": {"t": 1.5}}]),
        "must be a non-negative integer",
    ),
    ("completedAt", _set("completedAt", "yesterday"), "`completedAt` must be an RFC 3339"),
    ("startedAt", _set("startedAt", "2026-01-02 03:04:05Z"), "`startedAt` must be an RFC"),
    ("producer extra", _set("producer.host", "h"), 'unknown field "producer.host"'),
    ("producer name", _set("producer.name", ""), "`producer.name` must be 1-200"),
    ("reviewer control", _set("reviewer", "al\x1bice"), "`reviewer` must be 1-200"),
    ("reviewer blank", _set("reviewer", "   "), "`reviewer` must be 1-200"),
    ("publisher", _set("publisher", "a b"), "`publisher` must be 1-64"),
    ("publishedAt", _set("publishedAt", "2026-13-01T00:00:00Z"), "`publishedAt` must be"),
    ("pins not hex", _set("executionPaths", {"lint_doc": {"bin/lint": "x"}}), "64 lowercase hex"),
    ("pins not object", _set("executionPaths", ["bin/lint"]), "`executionPaths` must be an"),
    ("no fingerprints", _set("fingerprints", {}), "at least one Artifact"),
    ("bad name", _set("fingerprints", {"-doc": "v1"}), "invalid Artifact name"),
    ("fingerprint space", _set("fingerprints.lib", "v 1"), "fingerprint of `lib` must be"),
    ("fingerprint empty", _set("fingerprints.lib", ""), "fingerprint of `lib` must be"),
    ("kinds set", _set("kinds", {"doc": "folder"}), "`kinds` must name exactly"),
    ("kind value", _set("kinds.lib", "dir"), "kind of `lib` must be folder or file"),
]


@pytest.mark.parametrize(("name", "change", "words"), INVALID, ids=[i[0] for i in INVALID])
def test_each_rule(name: str, change: Callable[[dict[str, Any]], None], words: str) -> None:
    record = summary(reviewer="alice")
    accepted(record)
    change(record)
    refused(record, words)


def test_a_record_that_is_not_an_object_or_not_json() -> None:
    refused([], "must be a JSON object")
    record = summary()
    record["result"]["score"] = float("nan")
    refused(record, "not plain JSON")


def test_a_field_name_from_the_store_is_escaped_and_bounded() -> None:
    record = summary()
    record["\x1b[31m" + "x" * 100] = 1
    problem = refused(record, "unknown field")
    assert "\x1b" not in problem and "x" * 65 not in problem


def test_runtime_result_with_extra_fields_is_refused() -> None:
    record = summary(
        profile={"kind": "runtime", "command": "c", "args": []},
        result={"verdict": "GREEN", "exitCode": 0},
    )
    accepted(record)
    record["result"]["stdout"] = "leak"
    refused(record, 'unknown field "result.stdout"')


def test_agent_result_owner_fields_are_kept_as_is() -> None:
    owner = {"verdict": "RED", "reason": "typo", "lines": [1, 2], "detail": {"a": None}}
    record = summary(status="RED", result=owner)
    assert accepted(record).verdict == "RED"
    assert record["result"] == owner


# --- validation: limits at and one past --------------------------------------------------------


def _padded(record: dict[str, Any], target: int, holder: dict[str, Any]) -> dict[str, Any]:
    holder["pad"] = ""
    holder["pad"] = "x" * (target - record_bytes(record))
    assert record_bytes(record) == target
    return record


def test_summary_size_at_the_limit_and_one_past() -> None:
    record = summary()
    accepted(_padded(record, SUMMARY_RECORD_MAX_BYTES, record["result"]))
    refused(
        _padded(record, SUMMARY_RECORD_MAX_BYTES + 1, record["result"]),
        f"the limit without `execution` is {SUMMARY_RECORD_MAX_BYTES}",
    )


def test_full_size_at_the_limit_and_one_past() -> None:
    record = full()
    holder = record["execution"]["toolCalls"][0]
    accepted(_padded(record, FULL_RECORD_MAX_BYTES, holder))
    refused(
        _padded(record, FULL_RECORD_MAX_BYTES + 1, holder),
        f"the limit with `execution` is {FULL_RECORD_MAX_BYTES}",
    )


def test_id_length_at_the_limit_and_one_past() -> None:
    record = summary()
    record["runId"] = "r" * ID_MAX_CHARS
    accepted(record)
    record["runId"] = "r" * (ID_MAX_CHARS + 1)
    refused(record, "`runId` must be 1-200")


def test_fingerprint_length_at_the_limit_and_one_past() -> None:
    record = summary()
    record["fingerprints"]["lib"] = "f" * 128
    accepted(rekeyed(record))
    record["fingerprints"]["lib"] = "f" * 129
    refused(rekeyed(record), "fingerprint of `lib` must be 1-128")


def test_artifact_name_length_at_the_limit_and_one_past() -> None:
    record = summary()
    for length, ok in ((64, True), (65, False)):
        name = "n" * length
        record["fingerprints"] = {name: "v1"}
        record["kinds"] = {name: "file"}
        if ok:
            accepted(rekeyed(record))
        else:
            refused(rekeyed(record), "invalid Artifact name")


def test_label_length_at_the_limit_and_one_past() -> None:
    record = summary()
    record["reviewer"] = "é" * (LABEL_MAX_BYTES // 2)  # 2 bytes each: exactly the limit
    assert accepted(record).reviewer == record["reviewer"]
    record["reviewer"] += "a"
    refused(record, "`reviewer` must be 1-200 bytes")


def test_publisher_length_at_the_limit_and_one_past() -> None:
    record = summary()
    record["publisher"] = "p" * PUBLISHER_MAX_CHARS
    accepted(record)
    record["publisher"] += "p"
    refused(record, "`publisher` must be 1-64")


# --- validation: the full execution ------------------------------------------------------------


def test_a_mirror_inside_execution_is_refused() -> None:
    record = full()
    record["execution"]["origin"] = {"storeUrl": STORE, "publisher": "a", "publishedAt": None}
    refused(record, "`execution` is itself a mirror")


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        ("execution.id", "execution-other", "`execution.id` does not match `executionId`"),
        ("execution.status", "RED", "`execution.status` does not match `verdict`"),
        ("execution.completedAt", "2026-01-02T03:04:06.000000000Z", "`execution.completedAt`"),
        ("execution.result", {"verdict": "GREEN", "notes": "other"}, "`execution.result`"),
        ("execution.profile", {"kind": "human"}, "`execution.profile.kind`"),
        ("execution.usage", [], "`execution.usage` does not match"),
        ("execution.provenance.repoPath", REPO, "`execution.provenance.repoPath` must not"),
        ("execution.provenance.executionPaths", {}, "`execution.provenance.executionPaths`"),
        ("execution.provenance", None, "`execution.provenance` must be an object"),
        ("execution", "yes", "`execution` must be an object"),
    ],
)
def test_an_inconsistent_execution_is_refused(path: str, value: Any, words: str) -> None:
    record = full()
    _set(path, value)(record)
    refused(record, words)


# --- mirrors ------------------------------------------------------------------------------------


def test_mirror_of_a_summary_record() -> None:
    record = summary()
    record.update(
        {
            "publisher": "ci",
            "publishedAt": "2026-01-02T05:00:00+02:00",
            "completedAt": "2026-01-02T05:04:05.5+02:00",
            "reviewer": "alice",
        }
    )
    mirror = mirror_execution(accepted(record), STORE)
    assert mirror["id"] == "remote-execution-run-Hq2b9X-1"
    assert mirror["status"] == "GREEN"
    assert mirror["result"] == {"verdict": "GREEN", "notes": "fine"}
    assert mirror["completedAt"] == "2026-01-02T03:04:05.500000000Z"
    assert mirror["origin"] == {
        "storeUrl": STORE,
        "publisher": "ci",
        "publishedAt": "2026-01-02T03:00:00.000000000Z",
    }
    assert mirror["provenance"] == {
        "repoPath": "",
        "runId": "run-Hq2b9X",
        "requestId": "run-Hq2b9X-1",
        "evalId": "doc/review",
        "evalDefHash": DEF_HASH,
        "completedAt": "2026-01-02T03:04:05.500000000Z",
        "executionPaths": {"lint_doc": {"bin/lint": PIN}},
    }
    assert mirror["profile"] == {
        "kind": "agent",
        "backend": "openai",
        "model": "m1",
        "timeoutMs": 240000,
    }
    assert mirror["reviewer"] == "alice"
    assert mirror["toolCalls"] == []
    assert mirror["kinds"] == KINDS


def test_mirror_of_a_full_record_keeps_the_audit_but_not_the_repo() -> None:
    mirror: Any = mirror_execution(accepted(full()), STORE)
    assert mirror["toolCalls"][0]["name"] == "read_doc"
    assert mirror["usage"][0]["error"] == "503 upstream overloaded"
    assert mirror["provenance"]["repoPath"] == ""
    assert mirror["provenance"]["executionPaths"] == {"lint_doc": {"bin/lint": PIN}}
    assert mirror["origin"]["storeUrl"] == STORE


def test_a_mirror_is_not_published_again() -> None:
    mirror = mirror_execution(accepted(summary()), STORE)
    with pytest.raises(RecordError, match="not re-published"):
        build_record(mirror, KINDS, "summary")


def test_mirror_record_has_no_owner() -> None:
    row = mirror_record(accepted(summary()), STORE)
    assert (row.id, row.owner_pid, row.owner_start_time, row.backend) == (
        "remote-execution-run-Hq2b9X-1",
        0,
        0.0,
        "openai",
    )
    assert row.completed_at == "2026-01-02T03:04:05.123456789Z"
    assert row.key == key_of(DEF_HASH, FINGERPRINTS, KINDS)


# --- timestamps -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-02T03:04:05Z", "2026-01-02T03:04:05.000000000Z"),
        ("2026-01-02t03:04:05.123456789z", "2026-01-02T03:04:05.123456789Z"),
        ("2026-01-02T00:30:00.1-01:00", "2026-01-02T01:30:00.100000000Z"),
        ("2026-01-01T00:30:00+01:00", "2025-12-31T23:30:00.000000000Z"),
        ("2026-01-02T03:04:05.1234567890Z", None),  # ten fractional digits
        ("2026-01-02T03:04:60Z", None),  # leap second
        ("2026-02-30T00:00:00Z", None),
        ("2026-01-02T03:04:05", None),  # no offset
        ("2026-01-02T03:04:05+24:00", None),
        ("0001-01-01T00:00:00+00:01", None),  # before year 1 in UTC
    ],
)
def test_rfc3339_normalization(text: str, expected: str | None) -> None:
    assert normalize_rfc3339(text) == expected
