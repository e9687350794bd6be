"""Opening the SQLite state file: file checks, the engine, and schema creation.

Why the care:

* The state is shared by every artifactize process of a user, so the first opens may race.
  The schema and ``PRAGMA user_version`` are written in one ``BEGIN IMMEDIATE`` transaction
  (a racer either sees nothing or the whole schema), and SQLITE_BUSY during that start-up
  (switching to WAL can refuse without waiting) is retried every
  OPEN_RETRY_INTERVAL_SECONDS for up to OPEN_RETRY_SECONDS.
* ``state.sqlite`` and its ``-wal``/``-shm`` companions must be regular files. They are
  checked with ``lstat`` (a symlink is refused, never followed; a FIFO would block SQLite)
  before SQLite opens them and again once the companions exist.
* Readers (``create=False``) open the file with ``mode=rw``, which never creates it.
  Watchers (``read_only=True``: the monitor, the doctor's check) open it with ``mode=ro``
  and ``PRAGMA query_only``: they cannot write even by mistake. A state at an older
  revision is upgraded for them first, by one short writable open (``behind_head``), as
  any other command's first open would.
* The schema is made and upgraded by Alembic revisions (``adapters/sqlite/migrations``,
  run by ``schema_migrations``) inside that same first transaction: an open either finds
  the head revision, or upgrades to it, or (a newer or foreign file) refuses and writes
  nothing.

Every transaction is begun by us (the driver's own BEGIN is disabled): ``BEGIN IMMEDIATE``
for writes, so a writer takes the lock up front and waits on ``busy_timeout`` instead of
failing on a read-to-write upgrade; ``BEGIN DEFERRED`` for reads.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import sqlite3
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event

from artifactize.adapters.schema_migrations import Migrations, SchemaVersionError
from artifactize.adapters.sqlite.migrations import REVISIONS as STATE_REVISIONS
from artifactize.adapters.sqlite.schema import STATE_ID_NAME, state_meta
from artifactize.adapters.sqlite.storage_faults import storage_fault
from artifactize.ports.state import StateError

BUSY_TIMEOUT_SECONDS = 5.0
# Each connection's page cache, at most (SQLite's default is 2 MiB). A Run's writes land
# all over the index of its requests by execution and over the executions it marks used:
# with 2 MiB an all-reused Run at 10,000 Artifacts read the same pages from the file again
# and again. Pages are held only as they are read.
PAGE_CACHE_KIB = 16 * 1024
# A new state is made whole under a name of its own, then linked in place
# (``create_state_file``); one such file older than this was left by a creation that was
# killed, and the next creation removes it.
STALE_CREATION_SECONDS = 600.0
CREATION_INFIX = ".new-"
OPEN_RETRY_INTERVAL_SECONDS = 0.02
OPEN_RETRY_SECONDS = 5.0
PRIVATE_DIRECTORY_MODE = 0o700
STATE_MIGRATIONS = Migrations(Path(__file__).parent / "migrations", "state", STATE_REVISIONS)

# Execution option read by the ``begin`` hook: how the next transaction begins.
BEGIN_MODE_OPTION = "artifactize_begin"
BEGIN_IMMEDIATE = "IMMEDIATE"
BEGIN_DEFERRED = "DEFERRED"

_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_PRIMARY_CODE_MASK = 0xFF

_T = TypeVar("_T")


def make_private_directory(state_dir: str) -> None:
    """Create ``state_dir`` (mode 0700; missing parents with default modes) unless it is
    already a directory."""
    directory = Path(state_dir)
    try:
        if directory.is_dir():
            return
        directory.absolute().parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # a concurrent first open made it
            directory.mkdir(PRIVATE_DIRECTORY_MODE)
        if not directory.is_dir():
            raise StateError(f"State directory is not a directory: {state_dir}")
    except OSError as error:
        raise StateError(f"Cannot create state directory {state_dir}: {error.strerror}") from error


def create_engine(database: str, *, create: bool, read_only: bool = False) -> sa.Engine:
    """A pooled engine on ``database``; ``create=False`` never creates the file;
    ``read_only`` connections can neither create nor write it."""
    mode = "ro" if read_only else "rwc" if create else "rw"
    uri = f"file:{urllib.parse.quote(str(Path(database).absolute()))}?mode={mode}"

    def connect() -> sqlite3.Connection:
        # isolation_level=None: the driver emits no BEGIN of its own; the hook below does.
        return sqlite3.connect(
            uri,
            uri=True,
            timeout=BUSY_TIMEOUT_SECONDS,
            isolation_level=None,
            check_same_thread=False,
        )

    engine = sa.create_engine("sqlite+pysqlite://", creator=connect, poolclass=sa.pool.QueuePool)

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute("PRAGMA foreign_keys = ON")
        dbapi_connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        # WAL with synchronous=NORMAL: a commit no longer waits for an fsync (the WAL is
        # synced at checkpoints). The file stays consistent after any crash; a power loss
        # may forget the last commits, which only costs re-running those evals. A Run
        # commits several times per eval, and the fsync was most of its per-eval cost.
        dbapi_connection.execute("PRAGMA synchronous = NORMAL")
        dbapi_connection.execute(f"PRAGMA cache_size = {-PAGE_CACHE_KIB}")
        # Statement journals and sorts in memory: SQLite keeps, for each statement of a
        # transaction that could fail half-way, the pages it changes in a journal of its
        # own, which spilled to a temporary file (47,000 writes of 4 KiB for one Run of
        # 14,000 requests at 10,000 Artifacts). ``VACUUM`` sets it back to a file first
        # (its copy of the whole database would be held in memory).
        dbapi_connection.execute("PRAGMA temp_store = MEMORY")
        if read_only:
            dbapi_connection.execute("PRAGMA query_only = ON")

    @event.listens_for(engine, "begin")
    def _begin(connection: sa.Connection) -> None:
        mode = connection.get_execution_options().get(BEGIN_MODE_OPTION, BEGIN_DEFERRED)
        connection.exec_driver_sql(f"BEGIN {mode}")

    return engine


def is_busy(error: BaseException) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED, raw or wrapped by SQLAlchemy."""
    original = getattr(error, "orig", error)
    code = getattr(original, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & _PRIMARY_CODE_MASK in (_SQLITE_BUSY, _SQLITE_LOCKED)
    return False


def retry_busy(action: Callable[[], _T]) -> _T:
    """Run ``action``, retrying on SQLITE_BUSY for up to OPEN_RETRY_SECONDS."""
    deadline = time.monotonic() + OPEN_RETRY_SECONDS
    while True:
        try:
            return action()
        except (sa.exc.OperationalError, sqlite3.OperationalError) as error:
            if not is_busy(error) or time.monotonic() >= deadline:
                raise
        time.sleep(OPEN_RETRY_INTERVAL_SECONDS)


@contextlib.contextmanager
def schema_transaction(
    engine: sa.Engine, *, create: bool, wal_refused: Callable[[str], Exception]
) -> Iterator[tuple[sa.Connection, int]]:
    """(a connection, the file's ``user_version``) in the transaction a first open checks
    (and with ``create``, makes) the schema in.

    With ``create`` the file is first switched to WAL (outside any transaction: SQLite cannot
    enter WAL inside one; ``wal_refused(mode)`` is raised when SQLite keeps another mode) and
    the transaction begins IMMEDIATE; without, it begins DEFERRED and writes nothing."""
    with engine.connect() as connection:
        if create:
            driver = connection.connection.driver_connection
            assert driver is not None
            mode = driver.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise wal_refused(str(mode))
        begin = BEGIN_IMMEDIATE if create else BEGIN_DEFERRED
        connection.execution_options(**{BEGIN_MODE_OPTION: begin})
        with connection.begin():
            version = int(connection.exec_driver_sql("PRAGMA user_version").scalar_one())
            yield connection, version


def has_tables(connection: sa.Connection) -> bool:
    """Whether the database holds any table or index of its user (SQLite's own excepted)."""
    count = connection.exec_driver_sql(
        "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
    ).scalar_one()
    return bool(count)


def _foreign(database: str, version: int) -> StateError:
    return StateError(
        f"{database} is not an artifactize state (user_version {version}); "
        "move it away or choose another state directory."
    )


def migrate_sqlite(
    connection: sa.Connection,
    version: int,
    migrations: Migrations,
    database: str,
    *,
    create: bool,
    foreign: Callable[[int], Exception],
) -> bool:
    """Bring an SQLite file to the head revision inside the open's transaction.

    ``version`` is the file's ``user_version``. False for an empty file opened without
    ``create`` (nothing is written then). A file of a newer artifactize raises
    SchemaVersionError before anything is written; a file that is not ours raises
    ``foreign(version)``."""
    if version > len(migrations.order):
        raise SchemaVersionError(
            f"Unsupported {migrations.label} schema version {version} in {database}: a newer "
            "artifactize wrote it. Upgrade artifactize; the database was left unchanged."
        )
    current = migrations.current(connection)
    if current is not None:
        migrations.check_known(current, database)
    elif version == 0:
        if has_tables(connection):
            raise foreign(version)
        if not create:
            return False
    elif version == migrations.ordinal(migrations.first):
        migrations.stamp(connection, migrations.first)  # made before migrations existed
        current = migrations.first
    else:
        raise foreign(version)
    if migrations.upgrade(connection, current):
        connection.exec_driver_sql(f"PRAGMA user_version = {migrations.ordinal(migrations.head)}")
    return True


def _read_state_id(connection: sa.Connection, database: str) -> str:
    value = connection.execute(
        sa.select(state_meta.c.value).where(state_meta.c.name == STATE_ID_NAME)
    ).scalar_one_or_none()
    if not isinstance(value, str) or not value:
        raise StateError(f"Corrupt state {database}: it has no state id.")
    return value


def _initialize_once(engine: sa.Engine, database: str, create: bool) -> str | None:
    def wal_refused(mode: str) -> StateError:
        return StateError(f"Cannot use WAL journal mode for {database} (got {mode}).")

    transaction = schema_transaction(engine, create=create, wal_refused=wal_refused)
    with transaction as (connection, version):
        try:
            ready = migrate_sqlite(
                connection,
                version,
                STATE_MIGRATIONS,
                database,
                create=create,
                foreign=lambda found: _foreign(database, found),
            )
        except SchemaVersionError as error:
            raise StateError(str(error)) from None
        if not ready:
            return None  # an empty database: no data yet, and readers write nothing
        if version == 0:  # just created: a new state gets its id
            connection.execute(
                sa.insert(state_meta).values(name=STATE_ID_NAME, value=str(uuid.uuid4()))
            )
        return _read_state_id(connection, database)


def behind_head(database: str) -> bool:
    """Whether an existing state file is at an older schema revision than this program's
    (``PRAGMA user_version`` is the revision's ordinal), read without writing anything."""
    uri = f"file:{urllib.parse.quote(str(Path(database).absolute()))}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as raw:
            ordinal = int(raw.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error as error:
        raise StateError(storage_fault("open state", database, error)) from error
    return 0 < ordinal < len(STATE_MIGRATIONS.order)


def initialize(engine: sa.Engine, database: str, *, create: bool) -> str | None:
    """Check (and with ``create``, make) the schema; the state id, or None for an empty
    database opened without ``create``."""
    try:
        return retry_busy(lambda: _initialize_once(engine, database, create))
    except (sa.exc.DBAPIError, sqlite3.Error) as error:
        raise StateError(storage_fault("open state", database, error)) from error


def create_state_file(database: str) -> None:
    """Make the state file ``database`` whole, or not at all, unless it exists.

    SQLite creates a database file empty and writes it at its first commit: a ``kill -9``
    of the first command between the two left a 0-byte ``state.sqlite``, which every later
    command refuses as damaged (a state emptied by a crash is not silently taken as a new
    one: ``adapters.sqlite.integrity``). So the file is made under a name of its own in the
    same folder, its schema and id committed and its connection closed (its log written
    into it), then linked to its name, which never replaces a file a racing command made
    first (on Windows, a rename, which never replaces one either). A file system without
    hard links gets the file created in place, as before."""
    target = Path(database)
    if target.is_symlink() or target.exists():
        return
    _remove_stale_creations(target)
    temporary = target.with_name(
        f"{target.name}{CREATION_INFIX}{os.getpid()}-{secrets.token_hex(4)}"
    )
    try:
        engine = create_engine(str(temporary), create=True)
        try:
            initialize(engine, database, create=True)  # messages name the state's file
        finally:
            engine.dispose()
        if os.name == "nt":
            temporary.rename(target)
        else:
            target.hardlink_to(temporary)
    except FileExistsError:
        pass  # a racing first command made it: it is the state
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV):
            raise StateError(storage_fault("create state", database, error)) from error
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                temporary.with_name(temporary.name + suffix).unlink()


def _remove_stale_creations(target: Path) -> None:
    """Remove what creations killed more than ``STALE_CREATION_SECONDS`` ago left."""
    try:
        left = [
            p for p in target.parent.iterdir() if p.name.startswith(target.name + CREATION_INFIX)
        ]
    except OSError:
        return
    for path in left:
        with contextlib.suppress(OSError):
            if path.lstat().st_mtime < time.time() - STALE_CREATION_SECONDS:
                path.unlink()
