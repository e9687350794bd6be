"""Waiting Human requests in the team store: one contract, every backend.

The same scenario runs through the HTTP client (``HttpRemoteStore``) against the real store
server on SQLite, on PostgreSQL, and against the stdlib fake the other tests use
(``tests/support/fake_review_store.py``), so the fake answers as the real store does:
announce, renew, withdraw, list by repository in byte order of request ID, page with a
cursor, the page limit at 500 and one past, and the scopes. The server's own checks
(invalid announcements, sizes) and expiry run on the real backends only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from artifactize.adapters.review_store.database import SqlReviewStoreDb, open_review_store_db
from artifactize.adapters.review_store.http_client import HttpRemoteStore
from artifactize.adapters.utc_timestamps import utc_now
from artifactize.domain.reviews.remote.waiting_requests import (
    ANNOUNCEMENT_MAX_BYTES,
    LIST_LIMIT_MAX,
    WAITING_SECONDS,
    read_listing,
)
from artifactize.entrypoints.listen_address import bind, parse_listen
from artifactize.entrypoints.store_server import StoreServer, create_app
from artifactize.entrypoints.web.team import (
    TEAM_PAGE_SIZE,
    TEAM_REQUESTS_MAX,
    TRUNCATED,
    TeamInbox,
)
from artifactize.ports.review_store import FailureMode, RemoteFailure, RemoteSettings
from artifactize.ports.store_server_storage import WaitingEntry
from tests.fakes.processes import TickingClock
from tests.support import postgres
from tests.support.fake_review_store import FakeReviewStore
from tests.support.postgres import PostgresServer

postgresql_server = postgres.postgresql_server


@dataclass(frozen=True)
class Backend:
    url: str
    tokens: dict[str, str]  # role -> token: "all" (read, publish), "reader", "publisher"
    real: bool


def serve_real(db: SqlReviewStoreDb) -> Iterator[str]:
    server = StoreServer(create_app(db, now=utc_now), bind(parse_listen("127.0.0.1:0")))
    ready = threading.Event()
    thread = threading.Thread(
        target=lambda: anyio.run(server.serve, lambda _server: ready.set()), daemon=True
    )
    thread.start()
    try:
        assert ready.wait(15)
        yield server.url + "/"
    finally:
        server.stop()
        thread.join(10)


@pytest.fixture(params=["fake", "sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "fake":
        fake_tokens: dict[str, tuple[str, tuple[str, ...]]] = {
            "tok-all": ("ci", ("read", "publish")),
            "tok-r": ("laptop", ("read",)),
            "tok-p": ("writer", ("publish",)),
        }
        with FakeReviewStore(fake_tokens) as fake:
            yield Backend(
                fake.url, {"all": "tok-all", "reader": "tok-r", "publisher": "tok-p"}, False
            )
        return
    database: str | None = None
    name: str | None = None
    server: PostgresServer | None = None
    if request.param == "postgresql":
        server = request.getfixturevalue("postgresql_server")
        name = server.create_database()
        database = server.url(name)
    db = open_review_store_db(str(tmp_path / "store"), create=True, database=database)
    assert db is not None
    tokens = {
        "all": db.add_token("ci", ["read", "publish"]).token,
        "reader": db.add_token("laptop", ["read"]).token,
        "publisher": db.add_token("writer", ["publish"]).token,
    }
    try:
        for url in serve_real(db):
            yield Backend(url, tokens, True)
    finally:
        db.close()
        if server is not None and name is not None:
            server.drop_database(name)


def call(backend: Backend, role: str, method: str, *args: Any) -> Any:
    async def main() -> Any:
        store = HttpRemoteStore(RemoteSettings(backend.url, "summary", backend.tokens[role], "env"))
        try:
            return await getattr(store, method)(*args)
        finally:
            await store.aclose()

    return anyio.run(main)


def refused(backend: Backend, role: str, method: str, *args: Any) -> RemoteFailure:
    with pytest.raises(RemoteFailure) as caught:
        call(backend, role, method, *args)
    return caught.value


def said(request_id: str, repository: str = "shop", **extra: Any) -> dict[str, Any]:
    return {
        "repository": repository,
        "requestId": request_id,
        "runId": request_id.rsplit("-", 1)[0],
        "evalId": "doc/signoff",
        "key": "a" * 64,
        "title": "Signed off",
        "createdAt": "2026-05-01T10:00:00.000000000Z",
        "claim": None,
        "machine": "bob@build-7",
        **extra,
    }


def ids(page: Any) -> list[str]:
    return [item["requestId"] for item in page.requests]


def test_announce_list_page_withdraw(backend: Backend) -> None:
    for request_id, repository in (("r2-1", "shop"), ("R1-1", "shop"), ("r3-1", "other")):
        assert call(backend, "all", "announce_waiting", request_id, said(request_id, repository))
    page = call(backend, "reader", "list_waiting", "shop", None, 100)
    assert ids(page) == ["R1-1", "r2-1"] and page.next is None  # byte order: upper case first
    everything = call(backend, "reader", "list_waiting", None, None, LIST_LIMIT_MAX)
    assert ids(everything) == ["R1-1", "r2-1", "r3-1"]
    checked = read_listing(page.requests[0])
    assert not isinstance(checked, str), checked
    assert (checked.publisher, checked.machine, checked.repository) == ("ci", "bob@build-7", "shop")
    first = call(backend, "reader", "list_waiting", "shop", None, 1)
    assert ids(first) == ["R1-1"] and first.next == "R1-1"
    second = call(backend, "reader", "list_waiting", "shop", first.next, 1)
    assert ids(second) == ["r2-1"] and second.next is None
    # A renewal replaces the announcement (a claim taken meanwhile shows).
    claim = {"reviewer": "alice", "claimedAt": "2026-05-01T10:05:00.000000000Z"}
    assert call(backend, "all", "announce_waiting", "r2-1", said("r2-1", claim=claim))
    [renewed] = [
        item
        for item in call(backend, "reader", "list_waiting", "shop", None, 100).requests
        if item["requestId"] == "r2-1"
    ]
    assert renewed["claim"] == claim
    assert call(backend, "publisher", "withdraw_waiting", "R1-1") is True
    assert call(backend, "publisher", "withdraw_waiting", "R1-1") is False
    assert ids(call(backend, "reader", "list_waiting", "shop", None, 100)) == ["r2-1"]
    assert ids(call(backend, "reader", "list_waiting", "nothing-here", None, 100)) == []


def test_the_page_limit_at_500_and_one_past(backend: Backend) -> None:
    assert ids(call(backend, "reader", "list_waiting", None, None, LIST_LIMIT_MAX)) == []
    problem = refused(backend, "reader", "list_waiting", None, None, LIST_LIMIT_MAX + 1)
    assert (problem.mode, problem.status) == (FailureMode.CLOSED, 400)
    assert str(LIST_LIMIT_MAX) in problem.message


def test_scopes(backend: Backend) -> None:
    problem = refused(backend, "reader", "announce_waiting", "r1-1", said("r1-1"))
    assert (problem.status, problem.mode) == (403, FailureMode.CLOSED)
    assert "publish scope" in problem.message
    problem = refused(backend, "publisher", "list_waiting", None, None, 10)
    assert problem.status == 403 and "read scope" in problem.message
    assert refused(backend, "reader", "withdraw_waiting", "r1-1").status == 403


def test_a_request_id_that_is_not_one_is_never_sent(backend: Backend) -> None:
    problem = refused(backend, "all", "announce_waiting", "../whoami", said("x-1"))
    assert problem.mode is FailureMode.CLOSED and "request ID" in problem.message


# --- the real backends only: the server's checks and expiry ----------------------------------


def put_raw(backend: Backend, request_id: str, content: bytes) -> httpx2.Response:
    with httpx2.Client() as client:
        return client.put(
            f"{backend.url}v1/waiting/{request_id}",
            content=content,
            headers={"authorization": f"Bearer {backend.tokens['all']}"},
        )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"repository": ""}, "repository"),
        ({"requestId": "other-1"}, "requestId"),
        ({"key": "nope"}, "key"),
        ({"createdAt": "yesterday"}, "createdAt"),
        ({"claim": {"reviewer": "a"}}, "claim"),
        ({"title": "line\nbreak"}, "title"),
        ({"extra": 1}, "extra"),
    ],
)
def test_the_server_refuses_an_invalid_announcement(
    backend: Backend, change: dict[str, Any], field: str
) -> None:
    if not backend.real:
        pytest.skip("the fake checks only the request ID")
    import json

    answer = put_raw(backend, "r1-1", json.dumps(said("r1-1", **change)).encode())
    assert answer.status_code == 400 and field in answer.json()["error"]


def test_an_announcement_at_the_size_limit_and_one_past(backend: Backend) -> None:
    if not backend.real:
        pytest.skip("the fake has no size limit")
    import json

    base = json.dumps(said("r1-1", title="t"), separators=(",", ":")).encode()
    pad = ANNOUNCEMENT_MAX_BYTES - len(base)
    at_limit = base.replace(b'"title":"t"', b'"title":"t"' + b" " * pad)
    assert len(at_limit) == ANNOUNCEMENT_MAX_BYTES
    assert put_raw(backend, "r1-1", at_limit).status_code == 200
    assert put_raw(backend, "r1-1", at_limit + b" ").status_code == 413


def test_announcements_expire_by_the_store_clock(tmp_path: Path) -> None:
    """Every reading of the ticking clock is one second later: an announcement of 2 s is
    listed on the next reading and gone on the one after."""
    clock = TickingClock(datetime(2026, 5, 1, tzinfo=UTC))
    db = open_review_store_db(str(tmp_path / "store"), create=True, clock=clock)
    assert db is not None
    try:
        entry = WaitingEntry("r1-1", "shop", "ci", "2026-05-01T00:00:00.000000000Z", "{}")
        db.announce_waiting(entry, 2)
        assert [e.request_id for e in db.list_waiting(None, None, 10)] == ["r1-1"]
        assert db.list_waiting(None, None, 10) == []
        assert db.withdraw_waiting("r1-1") is False  # expired: not a live one
    finally:
        db.close()


def test_a_revoked_token_s_announcements_leave_at_once(tmp_path: Path) -> None:
    db = open_review_store_db(str(tmp_path / "store"), create=True)
    assert db is not None
    try:
        db.add_token("ci", ["publish"])
        entry = WaitingEntry("r1-1", "shop", "ci", "2026-05-01T00:00:00.000000000Z", "{}")
        db.announce_waiting(entry, WAITING_SECONDS)
        db.revoke_token("ci", purge=False)
        assert db.list_waiting(None, None, 10) == []
    finally:
        db.close()


# --- the web inbox's listing: every page, bounded ------------------------------------------


@pytest.mark.parametrize("count", [TEAM_REQUESTS_MAX, TEAM_REQUESTS_MAX + 1])
def test_the_inbox_lists_at_most_1000_announcements(count: int) -> None:
    with FakeReviewStore({"tok": ("laptop", ("read",))}) as fake:
        for n in range(count):
            request_id = f"run-{n:05d}-1"
            fake.waiting[request_id] = said(request_id) | {
                "publisher": "ci",
                "expiresAt": "2999-01-01T00:00:00Z",
            }

        async def main() -> TeamInbox:
            store = HttpRemoteStore(RemoteSettings(fake.url, "summary", "tok", "env"))
            inbox = TeamInbox(store, "/src/shop", lambda: 0.0)
            try:
                await inbox.refresh()
            finally:
                await store.aclose()
            return inbox

        inbox = anyio.run(main)
    assert len(inbox.requests) == TEAM_REQUESTS_MAX
    assert len(fake.seen) == TEAM_REQUESTS_MAX // TEAM_PAGE_SIZE  # no page past the bound
    assert all("repository=shop" in seen.path for seen in fake.seen)
    truncated = count > TEAM_REQUESTS_MAX
    assert (inbox.notice == TRUNCATED.format(limit=TEAM_REQUESTS_MAX)) is truncated
    assert truncated or inbox.notice is None
