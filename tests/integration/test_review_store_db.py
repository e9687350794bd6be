"""The review store's SQLite adapter on real files: tokens, records, lookups, LRU caps."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.review_store.database import (
    STORE_BYTES_MAX,
    STORE_FILE,
    STORE_RECORDS_MAX,
    SqliteReviewStoreDb,
    open_review_store_db,
)
from adapters.review_store.database_schema import STORE_SCHEMA_VERSION
from adapters.review_store.tokens import TOKEN_NAME_MAX_CHARS
from ports.review_store import Principal
from ports.store_server_storage import ReviewStoreDbError, StoreEntry, TokenRequestError
from tests.fakes.processes import TickingClock

START_NS = 1_800_000_000 * 1_000_000_000
STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z")
TOKEN = re.compile(r"azt_[A-Za-z0-9_-]{43}")


def ticking_clock() -> TickingClock:
    """Every reading is one second after the previous one (the first is START_NS): a
    deterministic LRU order."""
    return TickingClock(datetime.fromtimestamp(START_NS // 1_000_000_000 - 1, UTC))


def open_store(
    state: Path, *, max_records: int = STORE_RECORDS_MAX, max_bytes: int = STORE_BYTES_MAX
) -> SqliteReviewStoreDb:
    clock = ticking_clock()
    store = open_review_store_db(
        str(state),
        create=True,
        clock=clock,
        max_records=max_records,
        max_bytes=max_bytes,
    )
    assert store is not None
    return store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteReviewStoreDb]:
    opened = open_store(tmp_path / "state")
    yield opened
    opened.close()


def entry(key: str, execution_id: str, *, publisher: str = "ci", done: str = "", pad: int = 0):
    completed = done or "2026-01-02T03:04:05.000000000Z"
    data = json.dumps({"key": key, "executionId": execution_id, "pad": "x" * pad})
    return StoreEntry(key, execution_id, publisher, completed, data)


def key(n: int) -> str:
    return f"{n:064x}"


def executions(found: list[str]) -> list[str]:
    return [json.loads(text)["executionId"] for text in found]


class TestOpening:
    def test_readers_never_create_the_store(self, tmp_path: Path) -> None:
        state = tmp_path / "state"
        assert open_review_store_db(str(state), create=False) is None
        assert not state.exists()
        state.mkdir()
        assert open_review_store_db(str(state), create=False) is None
        assert list(state.iterdir()) == []

    def test_creates_a_wal_database_of_our_version(self, tmp_path: Path) -> None:
        state = tmp_path / "state"
        open_store(state).close()
        assert oct(state.stat().st_mode & 0o777) == "0o700"
        with sqlite3.connect(state / STORE_FILE) as raw:
            assert raw.execute("PRAGMA user_version").fetchone()[0] == STORE_SCHEMA_VERSION
            assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            tables = {row[0] for row in raw.execute("SELECT name FROM sqlite_master")}
        assert {"tokens", "entries", "entries_by_key", "entries_by_last_use"} <= tables
        assert "entries_by_publisher" in tables
        reopened = open_review_store_db(str(state), create=False)
        assert reopened is not None
        reopened.close()

    def test_a_symlink_is_refused_not_followed(self, tmp_path: Path) -> None:
        state = tmp_path / "state"
        state.mkdir()
        target = tmp_path / "elsewhere.sqlite"
        target.write_bytes(b"")
        (state / STORE_FILE).symlink_to(target)
        with pytest.raises(ReviewStoreDbError, match="must be regular files"):
            open_review_store_db(str(state), create=True)
        assert target.read_bytes() == b""

    def test_a_fifo_is_refused_without_blocking(self, tmp_path: Path) -> None:
        state = tmp_path / "state"
        state.mkdir()
        os.mkfifo(state / f"{STORE_FILE}-wal")
        with pytest.raises(ReviewStoreDbError, match="must be regular files"):
            open_review_store_db(str(state), create=True)

    def test_a_newer_or_foreign_database_is_refused(self, tmp_path: Path) -> None:
        newer, foreign = tmp_path / "newer", tmp_path / "foreign"
        for state in (newer, foreign):
            state.mkdir()
        with sqlite3.connect(newer / STORE_FILE) as raw:
            raw.execute(f"PRAGMA user_version = {STORE_SCHEMA_VERSION + 1}")
        with sqlite3.connect(foreign / STORE_FILE) as raw:
            raw.execute("CREATE TABLE other (x)")
        with pytest.raises(ReviewStoreDbError, match="Unsupported review store schema version 2"):
            open_review_store_db(str(newer), create=True)
        with pytest.raises(ReviewStoreDbError, match="not an artifactize review store"):
            open_review_store_db(str(foreign), create=False)

    def test_caps_must_be_positive(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="max_records"):
            open_review_store_db(str(tmp_path), create=True, max_records=0)
        assert (STORE_RECORDS_MAX, STORE_BYTES_MAX) == (100_000, 4 * 1024**3)


class TestTokens:
    def test_a_token_is_returned_once_and_only_its_hash_is_kept(
        self, store: SqliteReviewStoreDb, tmp_path: Path
    ) -> None:
        issued = store.add_token("alice", ["publish", "read", "publish"])
        assert TOKEN.fullmatch(issued.token)
        assert issued.scopes == ("read", "publish")
        assert STAMP.fullmatch(issued.created_at)
        store.close()
        digest = hashlib.sha256(issued.token.encode()).hexdigest()
        with sqlite3.connect(tmp_path / "state" / STORE_FILE) as raw:
            assert raw.execute("SELECT hash FROM tokens").fetchall() == [(digest,)]
        everything = b"".join(p.read_bytes() for p in (tmp_path / "state").iterdir())
        assert issued.token.encode() not in everything

    def test_tokens_differ(self, store: SqliteReviewStoreDb) -> None:
        assert store.add_token("a", ["read"]).token != store.add_token("b", ["read"]).token

    def test_authenticate(self, store: SqliteReviewStoreDb) -> None:
        issued = store.add_token("alice", ["read", "human"])
        assert store.authenticate(issued.token) == Principal("alice", ("read", "human"))
        assert store.authenticate(issued.token + "x") is None
        assert store.authenticate(issued.token[:-1]) is None
        assert store.authenticate("") is None
        store.revoke_token("alice", purge=False)
        assert store.authenticate(issued.token) is None

    def test_name_limits(self, store: SqliteReviewStoreDb) -> None:
        longest = "n" * TOKEN_NAME_MAX_CHARS
        assert store.add_token(longest, ["read"]).name == longest
        for bad in ("n" * (TOKEN_NAME_MAX_CHARS + 1), "", "a b", "a/b", "ä", "a\n"):
            with pytest.raises(TokenRequestError, match="Invalid token name"):
                store.add_token(bad, ["read"])
        assert store.add_token("A.b_c-9", ["read"]).name == "A.b_c-9"

    def test_scope_rules(self, store: SqliteReviewStoreDb) -> None:
        with pytest.raises(TokenRequestError, match="at least one scope"):
            store.add_token("a", [])
        with pytest.raises(TokenRequestError, match="Unknown scope 'admin'"):
            store.add_token("a", ["read", "admin"])
        assert store.list_tokens() == []

    def test_names_are_never_reused(self, store: SqliteReviewStoreDb) -> None:
        store.add_token("ci", ["read"])
        with pytest.raises(TokenRequestError, match="already used"):
            store.add_token("ci", ["publish"])
        store.revoke_token("ci", purge=False)
        with pytest.raises(TokenRequestError, match="already used"):
            store.add_token("ci", ["publish"])

    def test_list_shows_no_secret(self, store: SqliteReviewStoreDb) -> None:
        issued = store.add_token("b", ["publish"])
        store.add_token("a", ["read"])
        listed = store.list_tokens()
        assert [t.name for t in listed] == ["a", "b"]
        assert listed[1].scopes == ("publish",)
        assert listed[1].revoked_at is None
        assert issued.token not in repr(listed)
        assert hashlib.sha256(issued.token.encode()).hexdigest() not in repr(listed)

    def test_revoke_is_repeatable_and_keeps_the_first_time(
        self, store: SqliteReviewStoreDb
    ) -> None:
        with pytest.raises(TokenRequestError, match="No token is named 'ghost'"):
            store.revoke_token("ghost", purge=False)
        store.add_token("ci", ["publish"])
        first = store.revoke_token("ci", purge=False)
        again = store.revoke_token("ci", purge=True)
        assert STAMP.fullmatch(first.revoked_at)
        assert again.revoked_at == first.revoked_at
        assert store.list_tokens()[0].revoked_at == first.revoked_at

    def test_purge_deletes_only_that_publishers_records(self, store: SqliteReviewStoreDb) -> None:
        store.add_token("bad", ["publish"])
        store.put(entry(key(1), "e1", publisher="bad"))
        store.put(entry(key(2), "e2", publisher="bad"))
        store.put(entry(key(1), "e3", publisher="good"))
        assert store.revoke_token("bad", purge=True).purged_entries == 2
        assert executions(store.lookup([key(1), key(2)])) == ["e3"]


class TestEntries:
    def test_put_is_idempotent_per_key_and_execution(self, store: SqliteReviewStoreDb) -> None:
        assert store.put(entry(key(1), "e1", pad=1)) is True
        assert store.put(entry(key(1), "e1", pad=9)) is False
        assert json.loads(store.lookup([key(1)])[0])["pad"] == "x"
        assert store.put(entry(key(2), "e1")) is True
        assert store.count_entries() == 2

    def test_lookup_returns_the_latest_completed_then_the_last_stored(
        self, store: SqliteReviewStoreDb
    ) -> None:
        store.put(entry(key(1), "late", done="2026-01-03T00:00:00.000000000Z"))
        store.put(entry(key(1), "early", done="2026-01-02T00:00:00.000000000Z"))
        store.put(entry(key(2), "first", done="2026-01-02T00:00:00.000000000Z"))
        store.put(entry(key(2), "second", done="2026-01-02T00:00:00.000000000Z"))
        found = store.lookup([key(3), key(2), key(1), key(2)])
        assert executions(found) == ["second", "late"]
        assert store.lookup([]) == []

    def test_remove(self, store: SqliteReviewStoreDb) -> None:
        store.put(entry(key(1), "e1"))
        store.put(entry(key(1), "e2"))
        store.put(entry(key(2), "e3"))
        assert store.remove(key(1)) is True
        assert store.remove(key(1)) is False
        assert executions(store.lookup([key(1), key(2)])) == ["e3"]


class TestLeastRecentlyUsed:
    def test_record_cap_at_the_limit_and_one_past(self, tmp_path: Path) -> None:
        store = open_store(tmp_path / "s", max_records=3)
        for n in (1, 2, 3):
            store.put(entry(key(n), f"e{n}"))
        assert store.count_entries() == 3
        store.lookup([key(1)])  # key 1 was used: key 2 is now the least recently used
        store.put(entry(key(4), "e4"))
        assert store.count_entries() == 3
        assert executions(store.lookup([key(n) for n in (1, 2, 3, 4)])) == ["e1", "e3", "e4"]
        store.close()

    def test_byte_cap_at_the_limit_and_one_past(self, tmp_path: Path) -> None:
        size = len(entry(key(1), "e1", pad=100).data.encode())
        store = open_store(tmp_path / "s", max_bytes=2 * size + 1)
        store.put(entry(key(1), "e1", pad=100))
        store.put(entry(key(2), "e2", pad=101))  # exactly at the cap
        assert store.count_entries() == 2
        store.put(entry(key(3), "e3", pad=0))  # past it: the least recently used goes
        assert executions(store.lookup([key(1), key(2), key(3)])) == ["e2", "e3"]
        store.close()

    def test_the_record_just_stored_is_never_evicted(self, tmp_path: Path) -> None:
        store = open_store(tmp_path / "s", max_bytes=50, max_records=5)
        store.put(entry(key(1), "small"))
        store.put(entry(key(2), "huge", pad=500))
        assert executions(store.lookup([key(1), key(2)])) == ["huge"]
        store.close()

    def test_a_duplicate_put_evicts_nothing(self, tmp_path: Path) -> None:
        store = open_store(tmp_path / "s", max_records=1)
        store.put(entry(key(1), "e1"))
        assert store.put(entry(key(1), "e1")) is False
        assert store.count_entries() == 1
        store.close()
