"""The review store server's storage via SQLAlchemy Core: one SQLite file or PostgreSQL.

The database is ``<state-dir>/review-store.sqlite`` by default, or any
``sqlite:///PATH`` or ``postgresql+psycopg://…`` URL (``server … --database URL``). The
server process (several of them, on PostgreSQL) and ``artifactize server token …``
commands use it at the same time, so every operation is one short transaction, and writes
are serialized: on SQLite they begin IMMEDIATE (they take the write lock up front and wait
up to the busy timeout instead of failing on a lock upgrade; in WAL mode readers never wait
for writers); on PostgreSQL they first take one transaction-scoped advisory lock
(STORE_WRITE_LOCK), the same discipline, so "first writer wins" and the caps hold across
replicas exactly as on one file. Every query is written once; the dialect differences
(how a write transaction begins, the insert that skips duplicates, how the new row's
storage order is read back) stay in this module.

On open, Alembic revisions (``migrations/``) bring the schema to the head inside one
transaction (on PostgreSQL under STORE_MIGRATION_LOCK, so replicas starting together
migrate once); a database of a newer artifactize is refused and left untouched.

Choices beyond the port:

* LRU eviction runs in the inserting transaction, so no reader ever sees the store above its
  caps. It deletes in ``(last_used, key, rowid)`` order and skips the record just inserted,
  even if that one alone is over the byte cap.
* A lookup reads without a write lock; only when it found something does it take one to
  mark the returned records as used. A record deleted in between is simply not bumped.
* Readers (``create=False``) never create the store: a missing or empty store has no data.
* Leases expire by the store's clock (never a client's); an expired lease is free for the
  next asker, and expired rows are deleted whenever a lease is taken.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from artifactize.adapters.review_store.database_schema import (
    entries,
    entry_rowid,
    entry_totals,
    leases,
    waiting,
)
from artifactize.adapters.review_store.database_schema import tokens as tokens_table
from artifactize.adapters.review_store.migrations import REVISIONS as STORE_REVISIONS
from artifactize.adapters.review_store.tokens import (
    check_scopes,
    check_token_name,
    new_token,
    same_hash,
    token_hash,
)
from artifactize.adapters.schema_migrations import Migrations, SchemaVersionError
from artifactize.adapters.sqlite.connection import (
    BEGIN_DEFERRED,
    BEGIN_IMMEDIATE,
    BEGIN_MODE_OPTION,
    create_engine,
    make_private_directory,
    migrate_sqlite,
    retry_busy,
    schema_transaction,
)
from artifactize.adapters.sqlite.state_files import check_state_files
from artifactize.adapters.system_clock import SystemClock
from artifactize.kernel.timestamps import timestamp
from artifactize.ports.clock import Clock
from artifactize.ports.review_store import Principal
from artifactize.ports.state import StateError
from artifactize.ports.store_server_storage import (
    IssuedToken,
    Lease,
    LeaseAnswer,
    ReviewStoreDbError,
    Revocation,
    StoreEntry,
    TokenInfo,
    TokenRequestError,
    WaitingEntry,
)

__all__ = [
    "STORE_BYTES_MAX",
    "STORE_FILE",
    "STORE_MIGRATIONS",
    "STORE_RECORDS_MAX",
    "SqlReviewStoreDb",
    "SqliteReviewStoreDb",
    "open_review_store_db",
    "store_file",
]

STORE_FILE = "review-store.sqlite"
STORE_RECORDS_MAX = 100_000
STORE_BYTES_MAX = 4 * 1024 * 1024 * 1024
# SQLite caps bound parameters per statement; deletes and bumps go in chunks of this size.
SQL_CHUNK = 500
STORE_MIGRATIONS = Migrations(Path(__file__).parent / "migrations", "review store", STORE_REVISIONS)
# PostgreSQL advisory lock ids ("artf" + 1, "artf" + 2): writers, and schema migrations.
STORE_WRITE_LOCK = 0x61727466_01
STORE_MIGRATION_LOCK = 0x61727466_02
POSTGRESQL_DRIVER = "postgresql+psycopg"
POSTGRESQL_CONNECT_TIMEOUT_SECONDS = 10
# No database call waits forever: the server ends a statement after STATEMENT_TIMEOUT_MS;
# TCP keepalive finds a vanished server (a dropped network, a dead host) and
# tcp_user_timeout a connection whose sent data stays unacknowledged. (A stopped but living
# server still acknowledges at the TCP level: /v1/health has its own deadline for that.)
POSTGRESQL_STATEMENT_TIMEOUT_MS = 30_000
POSTGRESQL_KEEPALIVE_IDLE_SECONDS = 10
POSTGRESQL_KEEPALIVE_INTERVAL_SECONDS = 5
POSTGRESQL_KEEPALIVE_COUNT = 3
POSTGRESQL_TCP_USER_TIMEOUT_MS = 30_000
POSTGRESQL_CONNECTION_DEFAULTS: dict[str, Any] = {
    "options": f"-c statement_timeout={POSTGRESQL_STATEMENT_TIMEOUT_MS}",
    "keepalives": 1,
    "keepalives_idle": POSTGRESQL_KEEPALIVE_IDLE_SECONDS,
    "keepalives_interval": POSTGRESQL_KEEPALIVE_INTERVAL_SECONDS,
    "keepalives_count": POSTGRESQL_KEEPALIVE_COUNT,
    "tcp_user_timeout": POSTGRESQL_TCP_USER_TIMEOUT_MS,
}
SQLITE_DRIVERS = ("sqlite", "sqlite+pysqlite")
POSTGRESQL_DRIVERS = ("postgresql", POSTGRESQL_DRIVER)
URL_RULE = "use sqlite:///PATH or postgresql+psycopg://USER@HOST:PORT/DATABASE"


def store_file(state_dir: str) -> str:
    return str(Path(state_dir) / STORE_FILE)


def _check_files(database: str) -> bool:
    try:
        return check_state_files(database)
    except StateError as error:
        raise ReviewStoreDbError(str(error)) from None


def _positive_caps(max_records: int, max_bytes: int) -> None:
    for name, value in (("max_records", max_records), ("max_bytes", max_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _parse_url(database: str) -> sa.URL:
    """The SQLAlchemy URL of ``--database``; the error never repeats the URL (it may hold a
    password)."""
    try:
        url = sa.make_url(database)
    except (sa.exc.ArgumentError, ValueError):
        raise ReviewStoreDbError(f"Invalid --database URL: {URL_RULE}.") from None
    if url.drivername in SQLITE_DRIVERS:
        if not url.database or url.database == ":memory:" or url.query:
            raise ReviewStoreDbError(
                f"Invalid --database URL: a SQLite store needs a file path; {URL_RULE}."
            )
        return url
    if url.drivername in POSTGRESQL_DRIVERS:
        if not url.database:
            raise ReviewStoreDbError(
                f"Invalid --database URL: name the PostgreSQL database; {URL_RULE}."
            )
        return url.set(drivername=POSTGRESQL_DRIVER)
    raise ReviewStoreDbError(f"Unsupported --database URL scheme {url.drivername!r}: {URL_RULE}.")


def describe_database(state_dir: str, database: str | None) -> str:
    """Where the store lives, for messages: the file, or the URL without its password."""
    if database is None:
        return store_file(state_dir)
    url = _parse_url(database)
    if url.drivername in SQLITE_DRIVERS:
        return str(url.database)
    return url.render_as_string(hide_password=True)


def open_review_store_db(
    state_dir: str,
    *,
    create: bool,
    database: str | None = None,
    max_records: int = STORE_RECORDS_MAX,
    max_bytes: int = STORE_BYTES_MAX,
    clock: Clock | None = None,
) -> SqlReviewStoreDb | None:
    """Open (with ``create``, make) the store: ``database`` (a SQLAlchemy URL) or the file
    of ``state_dir``. Without ``create``, None when there is no store yet; nothing is
    written then. Older schemas are migrated; newer ones are refused."""
    _positive_caps(max_records, max_bytes)
    chosen_clock = clock or SystemClock()
    if database is not None:
        url = _parse_url(database)
        if url.drivername in POSTGRESQL_DRIVERS:
            return _open_postgresql(url, create, max_records, max_bytes, chosen_clock)
        path = str(url.database)
        directory = str(Path(path).absolute().parent)
    else:
        path, directory = store_file(state_dir), state_dir
    return _open_sqlite(path, directory, create, max_records, max_bytes, chosen_clock)


def _open_sqlite(
    path: str, directory: str, create: bool, max_records: int, max_bytes: int, clock: Clock
) -> SqlReviewStoreDb | None:
    if create:
        try:
            make_private_directory(directory)
        except StateError as error:
            raise ReviewStoreDbError(str(error)) from None
    if not _check_files(path) and not create:
        return None
    engine = create_engine(path, create=create)
    try:
        ready = retry_busy(lambda: _initialize_sqlite(engine, path, create))
    except (sa.exc.DBAPIError, sqlite3.Error) as error:
        engine.dispose()
        original = getattr(error, "orig", error)
        raise ReviewStoreDbError(f"Cannot open the review store {path}: {original}") from None
    except ReviewStoreDbError:
        engine.dispose()
        raise
    if not ready:
        engine.dispose()
        return None
    _check_files(path)  # the -wal and -shm companions exist now
    return SqlReviewStoreDb(engine, path, max_records, max_bytes, clock)


def _foreign(database: str, version: int) -> ReviewStoreDbError:
    return ReviewStoreDbError(
        f"{database} is not an artifactize review store (user_version {version}); "
        "move it away or choose another state directory."
    )


def _initialize_sqlite(engine: sa.Engine, database: str, create: bool) -> bool:
    """Check and migrate (with ``create``, make) the schema; False for an empty file opened
    to read."""

    def wal_refused(mode: str) -> ReviewStoreDbError:
        return ReviewStoreDbError(f"Cannot use WAL journal mode for {database} ({mode}).")

    transaction = schema_transaction(engine, create=create, wal_refused=wal_refused)
    with transaction as (connection, version):
        try:
            return migrate_sqlite(
                connection,
                version,
                STORE_MIGRATIONS,
                database,
                create=create,
                foreign=lambda found: _foreign(database, found),
            )
        except SchemaVersionError as error:
            raise ReviewStoreDbError(str(error)) from None


def _open_postgresql(
    url: sa.URL, create: bool, max_records: int, max_bytes: int, clock: Clock
) -> SqlReviewStoreDb | None:
    shown = url.render_as_string(hide_password=True)
    connect_args: dict[str, Any] = {}
    if "connect_timeout" not in url.query:
        connect_args["connect_timeout"] = POSTGRESQL_CONNECT_TIMEOUT_SECONDS
    for name, value in POSTGRESQL_CONNECTION_DEFAULTS.items():
        if name not in url.query:  # the URL's own settings win
            connect_args[name] = value
    engine = sa.create_engine(url, pool_pre_ping=True, connect_args=connect_args)
    try:
        with engine.connect() as connection, connection.begin():
            connection.execute(sa.select(sa.func.pg_advisory_xact_lock(STORE_MIGRATION_LOCK)))
            current = STORE_MIGRATIONS.current(connection)
            if current is None:
                if sa.inspect(connection).get_table_names():
                    raise ReviewStoreDbError(
                        f"{shown} is not an artifactize review store (it has tables but no "
                        "artifactize schema revision); choose another database."
                    )
                if not create:
                    engine.dispose()
                    return None
            else:
                STORE_MIGRATIONS.check_known(current, shown)
            STORE_MIGRATIONS.upgrade(connection, current)
    except SchemaVersionError as error:
        engine.dispose()
        raise ReviewStoreDbError(str(error)) from None
    except sa.exc.DBAPIError as error:
        engine.dispose()
        raise ReviewStoreDbError(f"Cannot open the review store {shown}: {error.orig}") from None
    except ReviewStoreDbError:
        engine.dispose()
        raise
    return SqlReviewStoreDb(engine, shown, max_records, max_bytes, clock)


def _add_to_totals(connection: sa.Connection, records: int, size: int) -> tuple[int, int]:
    """Change ``entry_totals`` by ``records`` and ``size`` bytes (in the caller's
    transaction, with the write it counts); the totals after. (No ``RETURNING``: SQLite has
    it from 3.35, and Python 3.11 may be linked with an older one.)"""
    connection.execute(
        sa.update(entry_totals)
        .where(entry_totals.c.id == 1)
        .values(records=entry_totals.c.records + records, bytes=entry_totals.c.bytes + size)
    )
    row = connection.execute(
        sa.select(entry_totals.c.records, entry_totals.c.bytes).where(entry_totals.c.id == 1)
    ).one()
    return int(row.records), int(row.bytes)


def _delete_entries(connection: sa.Connection, where: sa.ColumnElement[bool]) -> int:
    """Delete the records ``where`` holds and take them out of ``entry_totals``; how many.
    Counted first, in the same transaction: the store's writers are serialized."""
    count, size = connection.execute(
        sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(entries.c.bytes), 0)).where(where)
    ).one()
    if not count:
        return 0
    connection.execute(sa.delete(entries).where(where))
    _add_to_totals(connection, -int(count), -int(size))
    return int(count)


_Chunked = TypeVar("_Chunked")


def _entry_row(entry: StoreEntry, used: str) -> dict[str, Any]:
    return {
        "key": entry.key,
        "execution_id": entry.execution_id,
        "publisher": entry.publisher,
        "completed_at": entry.completed_at,
        "bytes": len(entry.data.encode("utf-8")),
        "last_used": used,
        "data": entry.data,
    }


def _chunks(values: Sequence[_Chunked]) -> Iterator[Sequence[_Chunked]]:
    for start in range(0, len(values), SQL_CHUNK):
        yield values[start : start + SQL_CHUNK]


class SqlReviewStoreDb:
    """The ``ReviewStoreDb`` port on SQLite or PostgreSQL; safe to share between threads."""

    def __init__(
        self,
        engine: sa.Engine,
        database: str,
        max_records: int,
        max_bytes: int,
        clock: Clock,
    ) -> None:
        self._engine = engine
        self.database = database
        self.max_records = max_records
        self.max_bytes = max_bytes
        self._clock = clock
        self.dialect = engine.dialect.name  # "sqlite" or "postgresql"
        # SQLite's busy handler is not a queue: under load a writer thread may keep losing
        # the lock until its busy timeout ends (a 503). This server's own writers line up
        # here first, so the busy timeout only arbitrates between processes.
        self._sqlite_writers = threading.Lock()

    def _now(self) -> str:
        return timestamp(self._clock.now())

    @contextmanager
    def _transaction(self, mode: str) -> Iterator[sa.Connection]:
        """One transaction; BEGIN_IMMEDIATE ones are serialized with every other writer."""
        queue = (
            self._sqlite_writers
            if self.dialect == "sqlite" and mode == BEGIN_IMMEDIATE
            else contextlib.nullcontext()
        )
        try:
            with queue, self._engine.connect() as connection:
                if self.dialect == "sqlite":
                    connection.execution_options(**{BEGIN_MODE_OPTION: mode})
                with connection.begin():
                    if mode == BEGIN_IMMEDIATE and self.dialect == "postgresql":
                        lock = sa.func.pg_advisory_xact_lock(STORE_WRITE_LOCK)
                        connection.execute(sa.select(lock))
                    yield connection
        except sa.exc.IntegrityError:
            raise
        except (sa.exc.DBAPIError, sqlite3.Error) as error:
            original = getattr(error, "orig", error)
            raise ReviewStoreDbError(f"Review store {self.database} failed: {original}") from None

    # Tokens

    def add_token(self, name: str, scopes: Sequence[str]) -> IssuedToken:
        name = check_token_name(name)
        chosen = check_scopes(scopes)
        token = new_token()
        created_at = self._now()
        try:
            with self._transaction(BEGIN_IMMEDIATE) as connection:
                connection.execute(
                    sa.insert(tokens_table).values(
                        name=name,
                        hash=token_hash(token),
                        scopes=json.dumps(list(chosen)),
                        created_at=created_at,
                        revoked_at=None,
                    )
                )
        except sa.exc.IntegrityError:
            raise TokenRequestError(
                f"Token name {name!r} is already used; names are never reused, "
                "not even those of revoked tokens."
            ) from None
        return IssuedToken(name, chosen, token, created_at)

    def list_tokens(self) -> list[TokenInfo]:
        columns = (
            tokens_table.c.name,
            tokens_table.c.scopes,
            tokens_table.c.created_at,
            tokens_table.c.revoked_at,
        )
        with self._transaction(BEGIN_DEFERRED) as connection:
            rows = connection.execute(sa.select(*columns).order_by(tokens_table.c.name)).all()
        return [
            TokenInfo(row.name, tuple(json.loads(row.scopes)), row.created_at, row.revoked_at)
            for row in rows
        ]

    def revoke_token(self, name: str, *, purge: bool) -> Revocation:
        with self._transaction(BEGIN_IMMEDIATE) as connection:
            revoked_at = connection.execute(
                sa.select(tokens_table.c.revoked_at).where(tokens_table.c.name == name)
            ).one_or_none()
            if revoked_at is None:
                raise TokenRequestError(f"No token is named {name!r}.")
            first = revoked_at[0]
            if first is None:
                first = self._now()
                connection.execute(
                    sa.update(tokens_table)
                    .where(tokens_table.c.name == name)
                    .values(revoked_at=first)
                )
            # A revoked token's announcements leave every inbox at once.
            connection.execute(sa.delete(waiting).where(waiting.c.publisher == name))
            purged = 0
            if purge:
                purged = _delete_entries(connection, entries.c.publisher == name)
        return Revocation(name, first, purged)

    def authenticate(self, token: str) -> Principal | None:
        digest = token_hash(token)
        with self._transaction(BEGIN_DEFERRED) as connection:
            row = connection.execute(
                sa.select(
                    tokens_table.c.name,
                    tokens_table.c.hash,
                    tokens_table.c.scopes,
                    tokens_table.c.revoked_at,
                ).where(tokens_table.c.hash == digest)
            ).one_or_none()
        if row is None or not same_hash(row.hash, digest) or row.revoked_at is not None:
            return None
        return Principal(row.name, tuple(json.loads(row.scopes)))

    # Entries

    def lookup(self, keys: Sequence[str]) -> list[str]:
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return []
        rank = (
            sa.func.row_number()
            .over(
                partition_by=entries.c.key,
                order_by=(entries.c.completed_at.desc(), entry_rowid.desc()),
            )
            .label("rank")
        )
        ranked = (
            sa.select(entries.c.key, entries.c.data, entry_rowid.label("row_id"), rank)
            .where(entries.c.key.in_(wanted))
            .subquery()
        )
        query = sa.select(ranked.c.key, ranked.c.data, ranked.c.row_id).where(ranked.c.rank == 1)
        with self._transaction(BEGIN_DEFERRED) as connection:
            rows = {row.key: row for row in connection.execute(query)}
        if rows:
            used = self._now()
            ids = [row.row_id for row in rows.values()]
            with self._transaction(BEGIN_IMMEDIATE) as connection:
                for chunk in _chunks(ids):
                    connection.execute(
                        sa.update(entries).where(entry_rowid.in_(chunk)).values(last_used=used)
                    )
        return [rows[key].data for key in wanted if key in rows]

    def put(self, entry: StoreEntry) -> bool:
        return self.put_many([entry])[0]

    def put_many(self, batch: Sequence[StoreEntry]) -> list[bool]:
        """Each entry stored as ``put`` stores it, in one transaction: one commit (one sync
        to disk) for the batch, and all of it or none of it. Writers are serialized, so the
        records already there are read first and the new ones inserted in one statement;
        the caps are then applied once, never evicting the last record stored."""
        used = self._now()
        with self._transaction(BEGIN_IMMEDIATE) as connection:
            known: set[tuple[str, str]] = set()
            keys = sorted({entry.key for entry in batch})
            for chunk in _chunks(keys):
                found = sa.select(entries.c.key, entries.c.execution_id).where(
                    entries.c.key.in_(chunk)
                )
                known.update((row.key, row.execution_id) for row in connection.execute(found))
            created: list[bool] = []
            rows: list[dict[str, Any]] = []
            for entry in batch:
                pair = (entry.key, entry.execution_id)
                created.append(pair not in known)
                if pair not in known:
                    known.add(pair)
                    rows.append(_entry_row(entry, used))
            if rows:
                self._insert(connection, rows)
                size = sum(row["bytes"] for row in rows)
                count, total = _add_to_totals(connection, len(rows), size)
                last = connection.execute(
                    sa.select(entry_rowid).where(
                        entries.c.key == rows[-1]["key"],
                        entries.c.execution_id == rows[-1]["execution_id"],
                    )
                ).scalar_one()
                self._evict(connection, int(last), count, total)
        return created

    def _insert(self, connection: sa.Connection, rows: list[dict[str, Any]]) -> None:
        """Insert ``rows``, none of which is stored yet (the caller read them under the
        writers' lock); a conflict would still leave the stored record as it was."""
        conflict = ["key", "execution_id"]
        if self.dialect == "postgresql":
            connection.execute(
                postgresql_insert(entries).on_conflict_do_nothing(index_elements=conflict), rows
            )
        else:
            connection.execute(
                sqlite_insert(entries).on_conflict_do_nothing(index_elements=conflict), rows
            )

    def _evict(self, connection: sa.Connection, keep: int, count: int, total: int) -> int:
        """Delete least recently used records (never ``keep``) until within both caps;
        ``count`` and ``total``: the store's records and bytes now (``entry_totals``)."""
        if count <= self.max_records and total <= self.max_bytes:
            return 0
        candidates = connection.execute(
            sa.select(entry_rowid.label("row_id"), entries.c.bytes)
            .where(entry_rowid != keep)
            .order_by(entries.c.last_used, entries.c.key, entry_rowid)
        )
        doomed: list[int] = []
        for row in candidates:
            if count <= self.max_records and total <= self.max_bytes:
                break
            doomed.append(row.row_id)
            count -= 1
            total -= row.bytes
        candidates.close()
        for chunk in _chunks(doomed):
            _delete_entries(connection, entry_rowid.in_(chunk))
        return len(doomed)

    def remove(self, key: str) -> bool:
        with self._transaction(BEGIN_IMMEDIATE) as connection:
            deleted = _delete_entries(connection, entries.c.key == key)
        return deleted > 0

    def count_entries(self) -> int:
        """How many records the store holds (for tests and status output)."""
        with self._transaction(BEGIN_DEFERRED) as connection:
            return int(
                connection.execute(sa.select(sa.func.count()).select_from(entries)).scalar_one()
            )

    def totals(self) -> tuple[int, int]:
        """``entry_totals``: the records and bytes the caps are checked against."""
        with self._transaction(BEGIN_DEFERRED) as connection:
            row = connection.execute(sa.select(entry_totals.c.records, entry_totals.c.bytes)).one()
            return int(row.records), int(row.bytes)

    # Leases

    def acquire_lease(self, key: str, holder: str, principal: str, seconds: int) -> LeaseAnswer:
        moment = self._clock.now()
        now = timestamp(moment)
        expires_at = timestamp(moment + timedelta(seconds=seconds))
        with self._transaction(BEGIN_IMMEDIATE) as connection:
            connection.execute(sa.delete(leases).where(leases.c.expires_at <= now))
            row = connection.execute(sa.select(leases).where(leases.c.key == key)).one_or_none()
            if row is not None and row.holder != holder:
                held = Lease(row.key, row.holder, row.principal, row.acquired_at, row.expires_at)
                return LeaseAnswer(False, held)
            if row is None:
                acquired_at = now
                connection.execute(
                    sa.insert(leases).values(
                        key=key,
                        holder=holder,
                        principal=principal,
                        acquired_at=now,
                        expires_at=expires_at,
                    )
                )
            else:  # the holder renews
                acquired_at = row.acquired_at
                connection.execute(
                    sa.update(leases).where(leases.c.key == key).values(expires_at=expires_at)
                )
        return LeaseAnswer(True, Lease(key, holder, principal, acquired_at, expires_at))

    def release_lease(self, key: str, holder: str) -> bool:
        with self._transaction(BEGIN_IMMEDIATE) as connection:
            deleted = connection.execute(
                sa.delete(leases).where(leases.c.key == key, leases.c.holder == holder)
            ).rowcount
        return deleted > 0

    def list_leases(self) -> list[Lease]:
        now = self._now()
        with self._transaction(BEGIN_DEFERRED) as connection:
            rows = connection.execute(
                sa.select(leases).where(leases.c.expires_at > now).order_by(leases.c.key)
            ).all()
        return [
            Lease(row.key, row.holder, row.principal, row.acquired_at, row.expires_at)
            for row in rows
        ]

    # Waiting Human requests

    def announce_waiting(self, entry: WaitingEntry, seconds: int) -> str:
        moment = self._clock.now()
        now = timestamp(moment)
        expires_at = timestamp(moment + timedelta(seconds=seconds))
        row = {
            "repository": entry.repository,
            "publisher": entry.publisher,
            "created_at": entry.created_at,
            "expires_at": expires_at,
            "data": entry.data,
        }
        with self._transaction(BEGIN_IMMEDIATE) as connection:
            connection.execute(sa.delete(waiting).where(waiting.c.expires_at <= now))
            updated = connection.execute(
                sa.update(waiting).where(waiting.c.request_id == entry.request_id).values(**row)
            ).rowcount
            if not updated:
                connection.execute(sa.insert(waiting).values(request_id=entry.request_id, **row))
        return expires_at

    def withdraw_waiting(self, request_id: str) -> bool:
        now = self._now()
        with self._transaction(BEGIN_IMMEDIATE) as connection:
            deleted = connection.execute(
                sa.delete(waiting).where(
                    waiting.c.request_id == request_id, waiting.c.expires_at > now
                )
            ).rowcount
            connection.execute(sa.delete(waiting).where(waiting.c.request_id == request_id))
        return deleted > 0

    def list_waiting(
        self, repository: str | None, after: str | None, limit: int
    ) -> list[WaitingEntry]:
        # Byte order on both engines (PostgreSQL's default collation is the locale's).
        order: sa.ColumnElement[str] = (
            waiting.c.request_id.collate("C")
            if self.dialect == "postgresql"
            else waiting.c.request_id
        )
        query = sa.select(waiting).where(waiting.c.expires_at > self._now())
        if repository is not None:
            query = query.where(waiting.c.repository == repository)
        if after is not None:
            query = query.where(order > after)
        query = query.order_by(order).limit(limit)
        with self._transaction(BEGIN_DEFERRED) as connection:
            rows = connection.execute(query).all()
        return [
            WaitingEntry(
                row.request_id,
                row.repository,
                row.publisher,
                row.created_at,
                row.data,
                row.expires_at,
            )
            for row in rows
        ]

    def ping(self) -> None:
        with self._transaction(BEGIN_DEFERRED) as connection:
            connection.execute(sa.select(1))

    def close(self) -> None:
        self._engine.dispose()


# The name from before PostgreSQL: the class serves both engines.
SqliteReviewStoreDb = SqlReviewStoreDb
