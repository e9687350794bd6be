"""The review store server's storage: ``<state-dir>/review-store.sqlite`` via SQLAlchemy Core.

The server process and ``artifactize server token …`` commands use the file at the same
time, so every operation is one short transaction; writes begin IMMEDIATE (they take the
write lock up front and wait up to the busy timeout instead of failing on a lock upgrade),
in WAL mode readers never wait for writers. File checks, the engine and busy retries come
from ``sqlite_open``; the schema is in ``review_store_schema``.

Choices beyond the port:

* LRU eviction runs in the inserting transaction, so no reader ever sees the store above its
  caps. It deletes in ``(last_used, key, rowid)`` order and skips the record just inserted,
  even if that one alone is over the byte cap.
* A lookup reads without a write lock; only when it found something does it take one to
  mark the returned records as used. A record deleted in between is simply not bumped.
* Readers (``create=False``) never create the file: a missing or empty store has no data.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from adapters.review_store.database_schema import (
    STORE_SCHEMA_VERSION,
    entries,
    entry_rowid,
    metadata,
)
from adapters.review_store.database_schema import tokens as tokens_table
from adapters.review_store.tokens import (
    check_scopes,
    check_token_name,
    new_token,
    same_hash,
    token_hash,
)
from adapters.sqlite.connection import (
    BEGIN_DEFERRED,
    BEGIN_IMMEDIATE,
    BEGIN_MODE_OPTION,
    check_state_files,
    create_engine,
    has_tables,
    make_private_directory,
    retry_busy,
    schema_transaction,
)
from adapters.system_clock import SystemClock
from ports.clock import Clock
from ports.review_store import Principal
from ports.state import StateError
from ports.store_server_storage import (
    IssuedToken,
    ReviewStoreDbError,
    Revocation,
    StoreEntry,
    TokenInfo,
    TokenRequestError,
)
from ports.timestamps import timestamp

__all__ = [
    "STORE_BYTES_MAX",
    "STORE_FILE",
    "STORE_RECORDS_MAX",
    "SqliteReviewStoreDb",
    "open_review_store_db",
    "store_file",
]

STORE_FILE = "review-store.sqlite"
STORE_RECORDS_MAX = 100_000
STORE_BYTES_MAX = 4 * 1024 * 1024 * 1024
# SQLite caps bound parameters per statement; deletes and bumps go in chunks of this size.
SQL_CHUNK = 500


def store_file(state_dir: str) -> str:
    return str(Path(state_dir) / STORE_FILE)


def _check_files(database: str) -> bool:
    try:
        return check_state_files(database)
    except StateError as error:
        raise ReviewStoreDbError(str(error)) from None


def open_review_store_db(
    state_dir: str,
    *,
    create: bool,
    max_records: int = STORE_RECORDS_MAX,
    max_bytes: int = STORE_BYTES_MAX,
    clock: Clock | None = None,
) -> SqliteReviewStoreDb | None:
    """Open (with ``create``, make) the store of ``state_dir``. Without ``create``, None
    when there is no store yet; nothing is written then."""
    for name, value in (("max_records", max_records), ("max_bytes", max_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    database = store_file(state_dir)
    if create:
        try:
            make_private_directory(state_dir)
        except StateError as error:
            raise ReviewStoreDbError(str(error)) from None
    if not _check_files(database) and not create:
        return None
    engine = create_engine(database, create=create)
    try:
        ready = retry_busy(lambda: _initialize(engine, database, create))
    except (sa.exc.DBAPIError, sqlite3.Error) as error:
        engine.dispose()
        original = getattr(error, "orig", error)
        raise ReviewStoreDbError(f"Cannot open the review store {database}: {original}") from None
    except ReviewStoreDbError:
        engine.dispose()
        raise
    if not ready:
        engine.dispose()
        return None
    _check_files(database)  # the -wal and -shm companions exist now
    return SqliteReviewStoreDb(engine, database, max_records, max_bytes, clock or SystemClock())


def _initialize(engine: sa.Engine, database: str, create: bool) -> bool:
    """Check (with ``create``, make) the schema; False for an empty file opened to read."""

    def wal_refused(mode: str) -> ReviewStoreDbError:
        return ReviewStoreDbError(f"Cannot use WAL journal mode for {database} ({mode}).")

    transaction = schema_transaction(engine, create=create, wal_refused=wal_refused)
    with transaction as (connection, version):
        if version == STORE_SCHEMA_VERSION:
            return True
        if version > STORE_SCHEMA_VERSION:
            raise ReviewStoreDbError(
                f"Unsupported review store schema version {version} in {database}; "
                "a newer artifactize wrote it."
            )
        if version != 0 or has_tables(connection):
            raise ReviewStoreDbError(
                f"{database} is not an artifactize review store (user_version {version}); "
                "move it away or choose another state directory."
            )
        if not create:
            return False
        metadata.create_all(connection, checkfirst=False)
        connection.exec_driver_sql(f"PRAGMA user_version = {STORE_SCHEMA_VERSION}")
        return True


def _chunks(values: Sequence[int]) -> Iterator[Sequence[int]]:
    for start in range(0, len(values), SQL_CHUNK):
        yield values[start : start + SQL_CHUNK]


class SqliteReviewStoreDb:
    """The ``ReviewStoreDb`` port on one SQLite file; safe to share between threads."""

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

    def _now(self) -> str:
        return timestamp(self._clock.now())

    @contextmanager
    def _transaction(self, mode: str) -> Iterator[sa.Connection]:
        try:
            with self._engine.connect() as connection:
                connection.execution_options(**{BEGIN_MODE_OPTION: mode})
                with connection.begin():
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
            purged = 0
            if purge:
                purged = connection.execute(
                    sa.delete(entries).where(entries.c.publisher == name)
                ).rowcount
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
        size = len(entry.data.encode("utf-8"))
        statement = (
            sqlite_insert(entries)
            .values(
                key=entry.key,
                execution_id=entry.execution_id,
                publisher=entry.publisher,
                completed_at=entry.completed_at,
                bytes=size,
                last_used=self._now(),
                data=entry.data,
            )
            .on_conflict_do_nothing(index_elements=["key", "execution_id"])
        )
        with self._transaction(BEGIN_IMMEDIATE) as connection:
            result = connection.execute(statement)
            if result.rowcount != 1:
                return False
            inserted = result.lastrowid
            self._evict(connection, keep=int(inserted))
        return True

    def _evict(self, connection: sa.Connection, keep: int) -> int:
        """Delete least recently used records (never ``keep``) until within both caps."""
        count, total = connection.execute(
            sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(entries.c.bytes), 0))
        ).one()
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
            connection.execute(sa.delete(entries).where(entry_rowid.in_(chunk)))
        return len(doomed)

    def remove(self, key: str) -> bool:
        with self._transaction(BEGIN_IMMEDIATE) as connection:
            deleted = connection.execute(sa.delete(entries).where(entries.c.key == key)).rowcount
        return deleted > 0

    def count_entries(self) -> int:
        """How many records the store holds (for tests and status output)."""
        with self._transaction(BEGIN_DEFERRED) as connection:
            return int(
                connection.execute(sa.select(sa.func.count()).select_from(entries)).scalar_one()
            )

    def close(self) -> None:
        self._engine.dispose()
