"""The review store server's request rules: lookup bodies, record envelopes, timestamps."""

from __future__ import annotations

from typing import Any

import pytest

from artifactize.domain.reviews.remote.server_admission import (
    EXECUTION_ID_MAX_CHARS,
    FULL_RECORD_MAX_BYTES,
    SUMMARY_RECORD_MAX_BYTES,
    Refusal,
    StoreRequestError,
    check_record,
    parse_lookup_keys,
    stored_timestamp,
)
from artifactize.ports.review_store import LOOKUP_KEYS_MAX

KEY = "ab" * 32


def record(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schema": 2,
        "key": KEY,
        "verdict": "GREEN",
        "result": {"verdict": "GREEN"},
        "profile": {"kind": "agent"},
        "executionId": "execution-run-abc123-1",
        "completedAt": "2026-01-02T03:04:05.123456789Z",
    }
    base.update(changes)
    return base


def refusal(call: Any) -> StoreRequestError:
    with pytest.raises(StoreRequestError) as caught:
        call()
    return caught.value


class TestLookupKeys:
    def test_keys_at_the_limit_are_accepted_in_order_once_each(self) -> None:
        keys = [f"{i:064x}" for i in range(LOOKUP_KEYS_MAX)]
        assert parse_lookup_keys({"keys": keys}) == keys
        assert parse_lookup_keys({"keys": [KEY, "0" * 64, KEY]}) == [KEY, "0" * 64]

    def test_one_key_past_the_limit_is_refused(self) -> None:
        keys = [f"{i:064x}" for i in range(LOOKUP_KEYS_MAX + 1)]
        error = refusal(lambda: parse_lookup_keys({"keys": keys}))
        assert error.kind is Refusal.INVALID
        assert f"{LOOKUP_KEYS_MAX + 1} entries" in error.message

    @pytest.mark.parametrize(
        ("body", "needle"),
        [
            ([KEY], "must be a JSON object"),
            ({}, "keys must be an array"),
            ({"keys": KEY}, "keys must be an array"),
            ({"keys": [], "limit": 3}, "Unknown field in the lookup body: limit"),
            ({"keys": ["AB" * 32]}, "keys[0] is not a reuse key"),
            ({"keys": [KEY, "a" * 63]}, "keys[1] is not a reuse key"),
            ({"keys": [KEY, "a" * 65]}, "keys[1] is not a reuse key"),
            ({"keys": [7]}, "keys[0] is not a reuse key"),
        ],
    )
    def test_malformed_bodies_are_invalid(self, body: object, needle: str) -> None:
        error = refusal(lambda: parse_lookup_keys(body))
        assert error.kind is Refusal.INVALID
        assert needle in error.message

    def test_object_keys_of_the_old_client_are_gone(self) -> None:
        error = refusal(lambda: parse_lookup_keys({"keys": [{"hash": "x", "fp": "y"}]}))
        assert error.kind is Refusal.GONE
        assert "Upgrade artifactize" in error.message


class TestRecordEnvelope:
    def test_a_valid_record_yields_its_indexed_fields(self) -> None:
        checked = check_record(KEY, record(), 100)
        assert (checked.key, checked.execution_id, checked.profile_kind) == (
            KEY,
            "execution-run-abc123-1",
            "agent",
        )
        assert checked.completed_at == "2026-01-02T03:04:05.123456789Z"

    @pytest.mark.parametrize(
        ("changes", "needle"),
        [
            ({"schema": 1}, "schema must be 2"),
            ({"schema": "2"}, "schema must be 2"),
            ({"schema": True}, "schema must be 2"),
            ({"schema": 2.0}, "schema must be 2"),
            ({"key": "cd" * 32}, "key must equal"),
            (
                {"verdict": "YELLOW", "result": {"verdict": "YELLOW"}},
                "verdict must be GREEN or RED",
            ),
            ({"result": {"verdict": "RED"}}, "result.verdict must equal verdict"),
            ({"result": "GREEN"}, "result.verdict must equal verdict"),
            ({"profile": {"kind": "robot"}}, "profile.kind must be"),
            ({"profile": None}, "profile.kind must be"),
            ({"executionId": ""}, "executionId must be"),
            ({"executionId": "e" * (EXECUTION_ID_MAX_CHARS + 1)}, "executionId must be"),
            ({"executionId": 5}, "executionId must be"),
            ({"completedAt": "yesterday"}, "completedAt must be"),
            ({"completedAt": "2026-02-30T00:00:00Z"}, "completedAt must be"),
            ({"completedAt": "2026-01-02T03:04:05"}, "completedAt must be"),
        ],
    )
    def test_envelope_violations_are_invalid(self, changes: dict[str, Any], needle: str) -> None:
        error = refusal(lambda: check_record(KEY, record(**changes), 100))
        assert error.kind is Refusal.INVALID
        assert needle in error.message

    def test_missing_fields_are_invalid(self) -> None:
        for field in ("schema", "key", "verdict", "result", "profile", "executionId"):
            broken = record()
            del broken[field]
            assert refusal(lambda b=broken: check_record(KEY, b, 100)).kind is Refusal.INVALID

    def test_execution_id_at_the_limit_is_accepted(self) -> None:
        long_id = "e" * EXECUTION_ID_MAX_CHARS
        assert check_record(KEY, record(executionId=long_id), 100).execution_id == long_id

    def test_a_bad_path_key_or_a_non_object_is_invalid(self) -> None:
        assert refusal(lambda: check_record("A" * 64, record(), 100)).kind is Refusal.INVALID
        assert refusal(lambda: check_record(KEY, [record()], 100)).kind is Refusal.INVALID

    def test_summary_size_limit_at_and_one_past(self) -> None:
        check_record(KEY, record(), SUMMARY_RECORD_MAX_BYTES)
        error = refusal(lambda: check_record(KEY, record(), SUMMARY_RECORD_MAX_BYTES + 1))
        assert error.kind is Refusal.TOO_LARGE
        assert str(SUMMARY_RECORD_MAX_BYTES) in error.message

    def test_full_records_may_be_larger(self) -> None:
        full = record(execution={"id": "x"})
        check_record(KEY, full, FULL_RECORD_MAX_BYTES)
        error = refusal(lambda: check_record(KEY, full, FULL_RECORD_MAX_BYTES + 1))
        assert error.kind is Refusal.TOO_LARGE
        # ``execution: null`` is a summary record.
        nulled = record(execution=None)
        assert refusal(lambda: check_record(KEY, nulled, SUMMARY_RECORD_MAX_BYTES + 1)).kind is (
            Refusal.TOO_LARGE
        )


class TestStoredTimestamp:
    @pytest.mark.parametrize(
        ("text", "stored"),
        [
            ("2026-01-02T03:04:05Z", "2026-01-02T03:04:05.000000000Z"),
            ("2026-01-02t03:04:05.5z", "2026-01-02T03:04:05.500000000Z"),
            ("2026-01-02T03:04:05.123456789Z", "2026-01-02T03:04:05.123456789Z"),
            ("2026-01-02T03:04:05.1234567891Z", "2026-01-02T03:04:05.123456789Z"),
            ("2026-01-02T03:04:05+02:00", "2026-01-02T01:04:05.000000000Z"),
            ("2026-01-01T23:30:00-01:00", "2026-01-02T00:30:00.000000000Z"),
            ("0999-01-01T00:00:00Z", "0999-01-01T00:00:00.000000000Z"),
        ],
    )
    def test_normalizes_to_utc_with_nine_digits(self, text: str, stored: str) -> None:
        assert stored_timestamp(text) == stored

    @pytest.mark.parametrize(
        "text",
        [
            None,
            5,
            "",
            "2026-01-02 03:04:05Z",
            "2026-01-02T03:04:60Z",
            "2026-13-02T03:04:05Z",
            "2026-01-02T03:04:05+24:00",
            "2026-01-02T03:04:05.Z",
            "0000-01-01T00:00:00Z",
            "２０２６-01-02T03:04:05Z",
        ],
    )
    def test_refuses_what_is_not_rfc_3339(self, text: object) -> None:
        assert stored_timestamp(text) is None
