"""The review store adapter on real SQLite files and a real PostgreSQL server: tokens, records,
lookups, LRU caps and leases. Every contract test runs on both engines (``engine``); the
file rules (symlinks, FIFOs, WAL) are SQLite's own."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from artifactize.adapters.review_store.database import (
    STORE_BYTES_MAX,
    STORE_FILE,
    STORE_MIGRATIONS,
    STORE_RECORDS_MAX,
    SqlReviewStoreDb,
    open_review_store_db,
)
from artifactize.adapters.review_store.tokens import TOKEN_NAME_MAX_CHARS
from artifactize.ports.review_store import Principal
from artifactize.ports.store_server_storage import ReviewStoreDbError, StoreEntry, TokenRequestError
from tests.fakes.processes import TickingClock
from tests.support import postgres
from tests.support.postgres import PostgresServer
from tests.support.query_plans import table_scans

STORE_SCHEMA_VERSION = len(STORE_MIGRATIONS.order)
MakeStore = Callable[..., SqlReviewStoreDb]
postgresql_server = postgres.postgresql_server

START_NS = 1_800_000_000 * 1_000_000_000
STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z")
TOKEN = re.compile(r"azt_[A-Za-z0-9_-]{43}")


def ticking_clock() -> TickingClock:
    """Every reading is one second after the previous one (the first is START_NS): a
    deterministic LRU order."""
    return TickingClock(datetime.fromtimestamp(START_NS // 1_000_000_000 - 1, UTC))


def open_store(
    state: Path,
    *,
    max_records: int = STORE_RECORDS_MAX,
    max_bytes: int = STORE_BYTES_MAX,
    database: str | None = None,
) -> SqlReviewStoreDb:
    clock = ticking_clock()
    store = open_review_store_db(
        str(state),
        create=True,
        database=database,
        clock=clock,
        max_records=max_records,
        max_bytes=max_bytes,
    )
    assert store is not None
    return store


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """None (the default SQLite file under the state directory) or a fresh PostgreSQL
    database's URL."""
    if request.param == "sqlite":
        yield None
        return
    server: PostgresServer = request.getfixturevalue("postgresql_server")
    name = server.create_database()
    try:
        yield server.url(name)
    finally:
        server.drop_database(name)


@pytest.fixture
def make_store(tmp_path: Path, database: str | None) -> Iterator[Callable[..., SqlReviewStoreDb]]:
    """Open the engine's store with chosen caps (a fresh one per test)."""
    opened: list[SqlReviewStoreDb] = []

    def make(**caps: int) -> SqlReviewStoreDb:
        store = open_store(tmp_path / "state", database=database, **caps)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: Callable[..., SqlReviewStoreDb]) -> SqlReviewStoreDb:
    return make_store()


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
        with pytest.raises(
            ReviewStoreDbError,
            match=f"Unsupported review store schema version {STORE_SCHEMA_VERSION + 1}",
        ):
            open_review_store_db(str(newer), create=True)
        with pytest.raises(ReviewStoreDbError, match="not an artifactize review store"):
            open_review_store_db(str(foreign), create=False)

    def test_caps_must_be_positive(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="max_records"):
            open_review_store_db(str(tmp_path), create=True, max_records=0)
        assert (STORE_RECORDS_MAX, STORE_BYTES_MAX) == (100_000, 4 * 1024**3)


class TestTokens:
    def test_a_token_is_returned_once_and_only_its_hash_is_kept(
        self, tmp_path: Path, database: str | None
    ) -> None:
        store = open_store(tmp_path / "state", database=database)
        issued = store.add_token("alice", ["publish", "read", "publish"])
        assert TOKEN.fullmatch(issued.token)
        assert issued.scopes == ("read", "publish")
        assert STAMP.fullmatch(issued.created_at)
        digest = hashlib.sha256(issued.token.encode()).hexdigest()
        engine = sa.create_engine(database or f"sqlite:///{tmp_path / 'state' / STORE_FILE}")
        with engine.connect() as raw:
            assert raw.execute(sa.text("SELECT hash, name FROM tokens")).all() == [
                (digest, "alice")
            ]
            rows = raw.execute(sa.text("SELECT * FROM tokens")).all()
        engine.dispose()
        store.close()
        assert issued.token not in repr(rows)
        if database is None:
            everything = b"".join(p.read_bytes() for p in (tmp_path / "state").iterdir())
            assert issued.token.encode() not in everything

    def test_tokens_differ(self, store: SqlReviewStoreDb) -> None:
        assert store.add_token("a", ["read"]).token != store.add_token("b", ["read"]).token

    def test_authenticate(self, store: SqlReviewStoreDb) -> None:
        issued = store.add_token("alice", ["read", "human"])
        assert store.authenticate(issued.token) == Principal("alice", ("read", "human"))
        assert store.authenticate(issued.token + "x") is None
        assert store.authenticate(issued.token[:-1]) is None
        assert store.authenticate("") is None
        store.revoke_token("alice", purge=False)
        assert store.authenticate(issued.token) is None

    def test_name_limits(self, store: SqlReviewStoreDb) -> None:
        longest = "n" * TOKEN_NAME_MAX_CHARS
        assert store.add_token(longest, ["read"]).name == longest
        for bad in ("n" * (TOKEN_NAME_MAX_CHARS + 1), "", "a b", "a/b", "ä", "a\n"):
            with pytest.raises(TokenRequestError, match="Invalid token name"):
                store.add_token(bad, ["read"])
        assert store.add_token("A.b_c-9", ["read"]).name == "A.b_c-9"

    def test_scope_rules(self, store: SqlReviewStoreDb) -> None:
        with pytest.raises(TokenRequestError, match="at least one scope"):
            store.add_token("a", [])
        with pytest.raises(TokenRequestError, match="Unknown scope 'admin'"):
            store.add_token("a", ["read", "admin"])
        assert store.list_tokens() == []

    def test_names_are_never_reused(self, store: SqlReviewStoreDb) -> None:
        store.add_token("ci", ["read"])
        with pytest.raises(TokenRequestError, match="already used"):
            store.add_token("ci", ["publish"])
        store.revoke_token("ci", purge=False)
        with pytest.raises(TokenRequestError, match="already used"):
            store.add_token("ci", ["publish"])

    def test_list_shows_no_secret(self, store: SqlReviewStoreDb) -> None:
        issued = store.add_token("b", ["publish"])
        store.add_token("a", ["read"])
        listed = store.list_tokens()
        assert [t.name for t in listed] == ["a", "b"]
        assert listed[1].scopes == ("publish",)
        assert listed[1].revoked_at is None
        assert issued.token not in repr(listed)
        assert hashlib.sha256(issued.token.encode()).hexdigest() not in repr(listed)

    def test_revoke_is_repeatable_and_keeps_the_first_time(self, store: SqlReviewStoreDb) -> None:
        with pytest.raises(TokenRequestError, match="No token is named 'ghost'"):
            store.revoke_token("ghost", purge=False)
        store.add_token("ci", ["publish"])
        first = store.revoke_token("ci", purge=False)
        again = store.revoke_token("ci", purge=True)
        assert STAMP.fullmatch(first.revoked_at)
        assert again.revoked_at == first.revoked_at
        assert store.list_tokens()[0].revoked_at == first.revoked_at

    def test_purge_deletes_only_that_publishers_records(self, store: SqlReviewStoreDb) -> None:
        store.add_token("bad", ["publish"])
        store.put(entry(key(1), "e1", publisher="bad"))
        store.put(entry(key(2), "e2", publisher="bad"))
        store.put(entry(key(1), "e3", publisher="good"))
        assert store.revoke_token("bad", purge=True).purged_entries == 2
        assert executions(store.lookup([key(1), key(2)])) == ["e3"]


class TestEntries:
    def test_put_is_idempotent_per_key_and_execution(self, store: SqlReviewStoreDb) -> None:
        assert store.put(entry(key(1), "e1", pad=1)) is True
        assert store.put(entry(key(1), "e1", pad=9)) is False
        assert json.loads(store.lookup([key(1)])[0])["pad"] == "x"
        assert store.put(entry(key(2), "e1")) is True
        assert store.count_entries() == 2

    def test_lookup_returns_the_latest_completed_then_the_last_stored(
        self, store: SqlReviewStoreDb
    ) -> None:
        store.put(entry(key(1), "late", done="2026-01-03T00:00:00.000000000Z"))
        store.put(entry(key(1), "early", done="2026-01-02T00:00:00.000000000Z"))
        store.put(entry(key(2), "first", done="2026-01-02T00:00:00.000000000Z"))
        store.put(entry(key(2), "second", done="2026-01-02T00:00:00.000000000Z"))
        found = store.lookup([key(3), key(2), key(1), key(2)])
        assert executions(found) == ["second", "late"]
        assert store.lookup([]) == []

    def test_remove(self, store: SqlReviewStoreDb) -> None:
        store.put(entry(key(1), "e1"))
        store.put(entry(key(1), "e2"))
        store.put(entry(key(2), "e3"))
        assert store.remove(key(1)) is True
        assert store.remove(key(1)) is False
        assert executions(store.lookup([key(1), key(2)])) == ["e3"]


class TestLeastRecentlyUsed:
    def test_record_cap_at_the_limit_and_one_past(self, make_store: MakeStore) -> None:
        store = make_store(max_records=3)
        for n in (1, 2, 3):
            store.put(entry(key(n), f"e{n}"))
        assert store.count_entries() == 3
        store.lookup([key(1)])  # key 1 was used: key 2 is now the least recently used
        store.put(entry(key(4), "e4"))
        assert store.count_entries() == 3
        assert executions(store.lookup([key(n) for n in (1, 2, 3, 4)])) == ["e1", "e3", "e4"]
        store.close()

    def test_byte_cap_at_the_limit_and_one_past(self, make_store: MakeStore) -> None:
        size = len(entry(key(1), "e1", pad=100).data.encode())
        store = make_store(max_bytes=2 * size + 1)
        store.put(entry(key(1), "e1", pad=100))
        store.put(entry(key(2), "e2", pad=101))  # exactly at the cap
        assert store.count_entries() == 2
        store.put(entry(key(3), "e3", pad=0))  # past it: the least recently used goes
        assert executions(store.lookup([key(1), key(2), key(3)])) == ["e2", "e3"]
        store.close()

    def test_the_record_just_stored_is_never_evicted(self, make_store: MakeStore) -> None:
        store = make_store(max_bytes=50, max_records=5)
        store.put(entry(key(1), "small"))
        store.put(entry(key(2), "huge", pad=500))
        assert executions(store.lookup([key(1), key(2)])) == ["huge"]
        store.close()

    def test_a_duplicate_put_evicts_nothing(self, make_store: MakeStore) -> None:
        store = make_store(max_records=1)
        store.put(entry(key(1), "e1"))
        assert store.put(entry(key(1), "e1")) is False
        assert store.count_entries() == 1
        store.close()

    def test_the_totals_follow_every_insert_and_delete(self, make_store: MakeStore) -> None:
        """``entry_totals``, which each put checks the caps against, equals the records'
        count and bytes after puts, a duplicate, evictions, a removal and a purge."""
        store = make_store(max_records=5)
        store.add_token("bad", ["publish"])

        def counted() -> tuple[int, int]:
            found = store.lookup([key(n) for n in range(10)])  # at most one per key here
            return len(found), sum(len(text.encode()) for text in found)

        for n in range(8):
            store.put(entry(key(n), f"e{n}", publisher="bad" if n % 3 else "ci", pad=10 * n))
            assert store.totals() == counted()
        assert store.totals()[0] == 5  # three evicted
        assert store.put(entry(key(7), "e7", pad=70)) is False  # a duplicate counts nothing
        assert store.remove(key(6)) is True
        assert store.totals() == counted()
        assert store.revoke_token("bad", purge=True).purged_entries == 3  # keys 4, 5, 7
        assert store.totals() == counted() == (1, store.totals()[1])
        store.close()

    def test_a_put_reads_no_record_but_the_ones_it_needs(
        self, make_store: MakeStore, database: str | None, tmp_path: Path
    ) -> None:
        """Below the caps, a put checks them from ``entry_totals``: no statement of it reads
        the records table whole (``count(*)`` and ``sum(bytes)`` over every record made a
        PUT's time grow with the store: 1.7 ms at the first of 10,000 records, 5.1 ms at
        the last)."""
        if database is not None:
            pytest.skip("planned by SQLite's EXPLAIN QUERY PLAN")
        store = make_store()
        for n in range(3):
            store.put(entry(key(n), f"e{n}"))
        scans = table_scans(
            tmp_path / "state" / "review-store.sqlite",
            lambda: store.put(entry(key(9), "e9")),
            ("entries", "entry_totals"),
        )
        assert scans == []
        store.close()


class TestLeases:
    def test_first_asker_wins_until_the_lease_expires(self, store: SqlReviewStoreDb) -> None:
        first = store.acquire_lease(key(1), "h1", "ci-a", 3)  # clock t0; expires t0+3
        assert first.granted and first.lease.holder == "h1"
        refused = store.acquire_lease(key(1), "h2", "ci-b", 3)  # t0+1: still live
        assert not refused.granted
        assert (refused.lease.holder, refused.lease.principal) == ("h1", "ci-a")
        assert refused.lease.expires_at == first.lease.expires_at
        assert store.acquire_lease(key(2), "h2", "ci-b", 3).granted  # other keys are free
        taken = store.acquire_lease(key(1), "h2", "ci-b", 3)  # t0+3: expired at this instant
        assert taken.granted and taken.lease.principal == "ci-b"

    def test_the_holder_renews_and_releases(self, store: SqlReviewStoreDb) -> None:
        first = store.acquire_lease(key(1), "h1", "ci", 2)
        renewed = store.acquire_lease(key(1), "h1", "ci", 2)
        assert renewed.granted
        assert renewed.lease.acquired_at == first.lease.acquired_at
        assert renewed.lease.expires_at > first.lease.expires_at
        assert [lease.key for lease in store.list_leases()] == [key(1)]
        assert store.release_lease(key(1), "h2") is False  # not the holder's
        assert store.release_lease(key(1), "h1") is True
        assert store.list_leases() == []
        assert store.acquire_lease(key(1), "h2", "ci", 2).granted

    def test_list_shows_only_live_leases(self, store: SqlReviewStoreDb) -> None:
        store.acquire_lease(key(1), "h1", "ci", 1)  # t0, expires t0+1
        store.acquire_lease(key(2), "h2", "ci", 100)  # t0+1
        assert [lease.key for lease in store.list_leases()] == [key(2)]  # t0+2


RACERS = 8


def race(action: Callable[[int], object]) -> list[object]:
    """Run ``action(i)`` in RACERS threads released together; their results in order."""
    barrier = threading.Barrier(RACERS)
    results: list[object] = [None] * RACERS

    def run(index: int) -> None:
        barrier.wait()
        results[index] = action(index)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


class TestTwoServersOnOneDatabase:
    """Two store objects on one database (what two ``server run`` processes hold), racing."""

    def test_first_writer_wins_per_key_and_execution(self, make_store: MakeStore) -> None:
        stores = [make_store(), make_store()]
        created = race(lambda i: stores[i % 2].put(entry(key(1), "e1", pad=i)))
        assert created.count(True) == 1
        assert stores[0].count_entries() == 1
        winner = created.index(True)
        assert json.loads(stores[1].lookup([key(1)])[0])["pad"] == "x" * winner

    def test_one_lease_per_key(self, make_store: MakeStore) -> None:
        stores = [make_store(), make_store()]
        answers = race(lambda i: stores[i % 2].acquire_lease(key(1), f"h{i}", "ci", 60))
        granted = [a for a in answers if getattr(a, "granted", False)]
        assert len(granted) == 1
        assert [lease.holder for lease in stores[1].list_leases()] == [
            granted[0].lease.holder  # type: ignore[attr-defined]
        ]

    def test_caps_hold_under_concurrent_inserts(self, make_store: MakeStore) -> None:
        stores = [make_store(max_records=5), make_store(max_records=5)]

        def publish(i: int) -> None:
            for n in range(4):
                stores[i % 2].put(entry(key(i * 10 + n), f"e{i}-{n}"))

        race(publish)
        assert stores[0].count_entries() == 5
        assert stores[1].count_entries() == 5

    def test_token_names_stay_unique(self, make_store: MakeStore) -> None:
        stores = [make_store(), make_store()]

        def add(i: int) -> str:
            try:
                return stores[i % 2].add_token("ci", ["read"]).name
            except TokenRequestError:
                return "refused"

        assert sorted(race(add)) == ["ci"] + ["refused"] * (RACERS - 1)  # type: ignore[type-var]
