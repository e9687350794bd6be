"""A store cannot be poisoned: PUT refuses what the bounded reader refuses, a record stored
before that rule is left out of lookups, and a client skips an invalid record with one
warning while keeping the rest of the batch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from artifactize.adapters.review_store.http_client import HttpRemoteStore
from artifactize.domain.reviews.remote.records import build_record, validate_record
from artifactize.domain.reviews.remote.sync import INVALID_RECORD, RemoteSync
from artifactize.ports.review_store import RemoteSettings
from artifactize.ports.store_server_storage import StoreEntry
from tests.integration.test_review_store_server import (
    Api,
    compact,
    error_of,
    fresh_key,
    lookup,
    put,
    record,
)
from tests.support.fake_review_store import Canned, FakeReviewStore
from tests.support.remote_records import KINDS, execution

POISONS = [
    ("infinite", ',"durationMs":1e400}'),
    ("nan", ',"durationMs":NaN}'),
    ("long-integer", ',"durationMs":' + "9" * 4301 + "}"),
    ("duplicate-key", ',"verdict":"RED"}'),
]


def poisoned(body: bytes, tail: str) -> bytes:
    return body[:-1] + tail.encode()


@pytest.mark.parametrize(("name", "tail"), POISONS, ids=[n for n, _ in POISONS])
def test_put_refuses_a_record_the_bounded_reader_refuses(api: Api, name: str, tail: str) -> None:
    key = fresh_key()
    message = error_of(put(api, "all", poisoned(compact(record(key)), tail), key=key), 400)
    assert message.startswith("The request body is not valid JSON: ")
    assert "set_int_max_str_digits" not in message
    assert lookup(api, "reader", {"keys": [key]}).json() == {"entries": []}


def test_deep_nesting_in_a_request_body_is_400(api: Api) -> None:
    key = fresh_key()
    body = compact(record(key))[:-1] + b',"x":' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    assert "nesting deeper than 512" in error_of(put(api, "all", body, key=key), 400)
    deep_lookup = b'{"keys":' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    assert "nesting deeper" in error_of(lookup(api, "reader", deep_lookup), 400)


def test_a_poisoned_stored_record_is_left_out_of_lookups(api: Api) -> None:
    key, other = fresh_key(), fresh_key()
    assert put(api, "agents", record(other, executionId="good")).status_code == 201
    # A row written before PUT used the bounded reader (or by hand): Infinity inside.
    data = json.dumps({**record(key, executionId="bad"), "durationMs": float("inf")})
    assert "Infinity" in data
    api.running.store.put(StoreEntry(key, "bad", "agents", "2099-01-01T00:00:00.000000000Z", data))
    response = lookup(api, "reader", {"keys": [key, other]})
    assert response.status_code == 200 and "Infinity" not in response.text
    assert [e["executionId"] for e in response.json()["entries"]] == ["good"]


def test_the_client_skips_an_invalid_record_with_one_warning_and_keeps_the_batch(
    fake_store: FakeReviewStore,
) -> None:
    good = build_record(execution(), KINDS, "summary")
    bad_a = {**good, "executionId": "bad-a"}
    text_a = json.dumps(bad_a)[:-1] + ',"durationMs":1e400}'
    text_b = json.dumps({**good, "executionId": "bad-b"})[:-1] + ',"verdict":"RED"}'
    body = '{"entries":[' + ",".join([text_a, json.dumps(good), text_b]) + "]}"
    fake_store.script(Canned(raw=body.encode()))

    async def main() -> tuple[list[Any], list[str]]:
        store = HttpRemoteStore(RemoteSettings(fake_store.url, "summary", "tok-a", "env"))
        try:
            return list(await store.lookup([good["key"]])), []
        finally:
            await store.aclose()

    entries, _ = anyio.run(main)
    checked = [validate_record(entry) for entry in entries]
    assert [isinstance(c, str) for c in checked] == [True, False, True]
    assert (
        checked[0] == "the record is not JSON we accept: the number 1e400 is too large to be finite"
    )
    assert checked[2] == 'the record is not JSON we accept: duplicate key "verdict"'


def test_remote_sync_warns_once_per_invalid_record(
    fake_store: FakeReviewStore,
    tmp_path: Path,
) -> None:
    from artifactize.adapters.sqlite.state import SqliteStateStores

    good = build_record(execution(), KINDS, "summary")
    text_bad = json.dumps({**good, "executionId": "bad"})[:-1] + ',"durationMs":1e400}'
    body = '{"entries":[' + ",".join([text_bad, json.dumps(good)]) + "]}"
    fake_store.script(Canned(body={"principal": "alice", "scopes": ["read"]}))
    fake_store.script(Canned(raw=body.encode()))
    warnings: list[str] = []

    async def main() -> int:
        store = HttpRemoteStore(RemoteSettings(fake_store.url, "summary", "tok-a", "env"))
        sync = RemoteSync(store, warnings.append)
        state = SqliteStateStores().open(str(tmp_path / "state"), create=True)
        assert state is not None
        try:
            await sync.mirror([good["key"]], state, settled_at="2026-01-01T00:00:00.000000000Z")
            return sync.mirrored
        finally:
            await sync.aclose()

    assert anyio.run(main) == 1
    assert warnings == [
        INVALID_RECORD.format(
            problem="the record is not JSON we accept: the number 1e400 is too large to be finite"
        )
    ]
