"""Schema migrations on open: a state and a store made before migrations existed (dumps of
files today's code wrote, ``fixtures/migrations/*-v1.sql``) are upgraded in place; a
database of a newer artifactize is refused and left byte for byte as it was; a failing
migration leaves nothing behind; the head revisions match the tables the code uses; replicas
opening one PostgreSQL database together migrate it once."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from artifactize.adapters.review_store.database import (
    STORE_FILE,
    STORE_MIGRATIONS,
    open_review_store_db,
)
from artifactize.adapters.review_store.database_schema import metadata as store_metadata
from artifactize.adapters.schema_migrations import VERSION_TABLE, Migrations, SchemaVersionError
from artifactize.adapters.sqlite import recovery
from artifactize.adapters.sqlite.connection import (
    BEGIN_IMMEDIATE,
    BEGIN_MODE_OPTION,
    STATE_MIGRATIONS,
    create_engine,
    migrate_sqlite,
)
from artifactize.adapters.sqlite.schema import metadata as state_metadata
from artifactize.adapters.sqlite.state import SqliteStateStores
from artifactize.adapters.sqlite.state_files import STATE_FILE
from artifactize.ports.state import StateError
from artifactize.ports.store_server_storage import ReviewStoreDbError
from tests.support import postgres

FIXTURES = Path(__file__).parent / "fixtures" / "migrations"
REPO = Path(__file__).resolve().parents[2]
postgresql_server = postgres.postgresql_server
postgresql_url = postgres.postgresql_url


def rebuild(dump: str, target: Path) -> Path:
    """The SQLite file ``dump`` (an iterdump of a file today's code made) describes."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(target) as raw:
        raw.executescript((FIXTURES / dump).read_text())
    return target


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def query(database: str, statement: str) -> list[Any]:
    engine = sa.create_engine(database)
    try:
        with engine.connect() as connection:
            return list(connection.exec_driver_sql(statement).all())
    finally:
        engine.dispose()


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


class TestStateUpgrades:
    def test_a_state_made_by_todays_code_is_upgraded_and_keeps_its_data(
        self, tmp_path: Path
    ) -> None:
        database = rebuild("state-v1.sql", tmp_path / "state" / STATE_FILE)
        before_id = query(sqlite_url(database), "SELECT value FROM state_meta")
        runs = query(sqlite_url(database), "SELECT id FROM runs")
        assert runs and before_id
        stores = SqliteStateStores()
        state = stores.open(str(tmp_path / "state"), create=False)
        assert state is not None
        assert state.state_id() == before_id[0][0]
        assert sorted(run.id for run in state.list_runs(None, 100, 0)) == sorted(r[0] for r in runs)
        state.close()
        url = sqlite_url(database)
        assert query(url, f"SELECT version_num FROM {VERSION_TABLE}") == [(STATE_MIGRATIONS.head,)]
        assert query(url, "PRAGMA user_version") == [(len(STATE_MIGRATIONS.order),)]

    def test_a_watcher_upgrades_an_older_state_before_it_reads(self, tmp_path: Path) -> None:
        """The monitor and the doctor's check open the state read-only; an older state is
        upgraded first by a short writable open, as by any other command (read-only, the
        upgrade failed as "attempt to write a readonly database", which the doctor reported
        as a state it could not open)."""
        database = rebuild("state-v1.sql", tmp_path / "state" / STATE_FILE)
        runs = query(sqlite_url(database), "SELECT id FROM runs")
        state = SqliteStateStores().open(str(tmp_path / "state"), create=False, read_only=True)
        assert state is not None
        try:
            assert sorted(run.id for run in state.list_runs(None, 100, 0)) == sorted(
                r[0] for r in runs
            )
        finally:
            state.close()
        url = sqlite_url(database)
        assert query(url, f"SELECT version_num FROM {VERSION_TABLE}") == [(STATE_MIGRATIONS.head,)]

    def test_runs_upgraded_to_revision_three_list_in_the_same_order(self, tmp_path: Path) -> None:
        """Revision 3 copies each Run's ``createdAt`` into its column: the lists order by
        it now, and must list an upgraded state's Runs and requests as before."""
        database = rebuild("state-v1.sql", tmp_path / "state" / STATE_FILE)
        with sqlite3.connect(database) as raw:  # a newer Run, then an older one inserted last
            for run_id, created in (
                ("run-newer", "2026-12-05T00:00:00.000000000Z"),
                ("run-older", "2026-01-01T00:00:00.000000000Z"),
            ):
                raw.execute(
                    "INSERT INTO runs SELECT ?, repo, status,"
                    " json_set(data, '$.id', ?, '$.createdAt', ?) FROM runs LIMIT 1",
                    (run_id, run_id, created),
                )
                raw.execute(
                    "INSERT INTO requests SELECT ? || '-1', ?, eval_id, ordinal, execution_id,"
                    " status, claimed_by, claimed_at,"
                    " json_set(data, '$.id', ? || '-1', '$.runId', ?) FROM requests LIMIT 1",
                    (run_id, run_id, run_id, run_id),
                )
        url = sqlite_url(database)
        saved = query(url, "SELECT id, json_extract(data, '$.createdAt') FROM runs")
        newest_first = [
            run_id for run_id, _ in sorted(saved, key=lambda row: str(row[1]), reverse=True)
        ]
        assert len(set(created for _, created in saved)) == len(saved) > 1
        state = SqliteStateStores().open(str(tmp_path / "state"), create=False)
        assert state is not None
        try:
            assert [run.id for run in state.list_runs(None, 100, 0)] == newest_first
            listed = [r.run_id for r in state.all_requests()]
            assert listed == sorted(listed, key=newest_first.index)
            assert all(
                run.data.definitions == {"evals": {}, "artifacts": {}}
                for run in state.list_runs(None, 100, 0)
            )
        finally:
            state.close()
        columns = query(url, "SELECT id, created_at, json_extract(data, '$.createdAt') FROM runs")
        assert all(column == extracted for _, column, extracted in columns)

    def test_a_repaired_older_state_has_what_its_migrations_would_fill(
        self, tmp_path: Path
    ) -> None:
        """``doctor --repair`` copies the columns both files have into a new state at the
        head revision: a Run from before revision 3 gets its ``created_at`` as that
        migration gives it."""
        old = rebuild("state-v1.sql", tmp_path / "old" / STATE_FILE)
        created = SqliteStateStores().open(str(tmp_path / "new"), create=True)
        assert created is not None
        created.close()
        target = tmp_path / "new" / STATE_FILE
        copied = recovery.Recovery(damaged=str(old), database=str(target))
        recovery._copy(str(old), str(target), copied)  # the copy step of a repair
        assert copied.copied["runs"] == 1
        assert query(
            sqlite_url(target),
            "SELECT created_at IS NOT NULL AND created_at = json_extract(data, '$.createdAt')"
            " FROM runs",
        ) == [(1,)]

    def test_a_newer_state_is_refused_and_untouched(self, tmp_path: Path) -> None:
        stores = SqliteStateStores()
        stores.open(str(tmp_path / "state"), create=True).close()  # type: ignore[union-attr]
        database = tmp_path / "state" / STATE_FILE
        with sqlite3.connect(database) as raw:
            raw.execute(f"UPDATE {VERSION_TABLE} SET version_num = 'state_9999'")
        before = digest(database)
        for create in (True, False):
            with pytest.raises(StateError, match="schema revision state_9999, which this"):
                stores.open(str(tmp_path / "state"), create=create)
        assert digest(database) == before


class TestStoreUpgrades:
    def test_a_store_made_by_todays_code_is_upgraded_and_keeps_its_data(
        self, tmp_path: Path
    ) -> None:
        database = rebuild("review-store-v1.sql", tmp_path / "state" / STORE_FILE)
        store = open_review_store_db(str(tmp_path / "state"), create=False)
        assert store is not None
        assert [token.name for token in store.list_tokens()] == ["ci"]
        keys = [f"{n:064x}" for n in range(3)]
        found = store.lookup(keys)
        assert len(found) == 3
        assert store.acquire_lease(keys[0], "h", "ci", 5).granted  # the new table works
        # revision 4 counted the records already stored
        assert store.totals() == (3, sum(len(text.encode()) for text in found))
        store.close()
        url = sqlite_url(database)
        assert query(url, f"SELECT version_num FROM {VERSION_TABLE}") == [(STORE_MIGRATIONS.head,)]
        assert query(url, "PRAGMA user_version") == [(len(STORE_MIGRATIONS.order),)]

    def test_a_newer_store_is_refused_and_untouched(self, tmp_path: Path) -> None:
        state = tmp_path / "state"
        open_review_store_db(str(state), create=True).close()  # type: ignore[union-attr]
        with sqlite3.connect(state / STORE_FILE) as raw:
            raw.execute(f"UPDATE {VERSION_TABLE} SET version_num = 'store_9999'")
        before = digest(state / STORE_FILE)
        with pytest.raises(ReviewStoreDbError, match="a newer artifactize migrated it"):
            open_review_store_db(str(state), create=True)
        assert digest(state / STORE_FILE) == before

    def test_a_postgresql_store_at_revision_one_is_upgraded(self, postgresql_url: str) -> None:
        engine = sa.create_engine(postgresql_url)
        with engine.connect() as connection, connection.begin():
            upgrade_to(STORE_MIGRATIONS, connection, STORE_MIGRATIONS.first)
        engine.dispose()
        assert query(postgresql_url, f"SELECT version_num FROM {VERSION_TABLE}") == [
            (STORE_MIGRATIONS.first,)
        ]
        store = open_review_store_db("unused", create=False, database=postgresql_url)
        assert store is not None
        store.close()
        assert query(postgresql_url, f"SELECT version_num FROM {VERSION_TABLE}") == [
            (STORE_MIGRATIONS.head,)
        ]

    def test_a_newer_postgresql_store_is_refused_and_untouched(self, postgresql_url: str) -> None:
        open_review_store_db("unused", create=True, database=postgresql_url).close()  # type: ignore[union-attr]
        engine = sa.create_engine(postgresql_url)
        with engine.begin() as connection:
            connection.exec_driver_sql(f"UPDATE {VERSION_TABLE} SET version_num = 'store_9999'")
        engine.dispose()
        tables = query(postgresql_url, "SELECT tablename FROM pg_tables ORDER BY 1")
        with pytest.raises(ReviewStoreDbError, match="schema revision store_9999"):
            open_review_store_db("unused", create=True, database=postgresql_url)
        assert query(postgresql_url, "SELECT tablename FROM pg_tables ORDER BY 1") == tables

    def test_a_foreign_postgresql_database_is_refused(self, postgresql_url: str) -> None:
        engine = sa.create_engine(postgresql_url)
        with engine.begin() as connection:
            connection.exec_driver_sql("CREATE TABLE other (x int)")
        engine.dispose()
        with pytest.raises(ReviewStoreDbError, match="is not an artifactize review store"):
            open_review_store_db("unused", create=True, database=postgresql_url)

    def test_replicas_opening_together_migrate_once(self, postgresql_url: str) -> None:
        racers = 4
        barrier = threading.Barrier(racers)
        failures: list[BaseException] = []

        def open_one() -> None:
            barrier.wait()
            try:
                store = open_review_store_db("unused", create=True, database=postgresql_url)
                assert store is not None
                store.close()
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=open_one) for _ in range(racers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert failures == []
        assert query(postgresql_url, f"SELECT version_num FROM {VERSION_TABLE}") == [
            (STORE_MIGRATIONS.head,)
        ]


def upgrade_to(migrations: Migrations, connection: sa.Connection, destination: str) -> None:
    """Run the revisions up to ``destination`` only (a database an older release made)."""
    from alembic.operations import Operations
    from alembic.runtime.migration import MigrationContext

    def steps(revision: Any, _context: Any) -> Any:
        return migrations.script._upgrade_revs(destination, revision)

    context = MigrationContext.configure(connection, opts={"fn": steps})
    with Operations.context(context):
        context.run_migrations()


@pytest.fixture
def broken_migrations(tmp_path: Path) -> Iterator[Migrations]:
    """The state's revisions plus one that creates a table and then fails."""
    location = tmp_path / "broken"
    shutil.copytree(STATE_MIGRATIONS.location / "versions", location / "versions")
    (location / "versions" / "state_9999_broken.py").write_text(
        "import sqlalchemy as sa\n"
        "from alembic import op\n"
        "revision = 'state_9999'\n"
        f"down_revision = {STATE_MIGRATIONS.head!r}\n"
        "def upgrade():\n"
        "    op.create_table('half', sa.Column('x', sa.Integer))\n"
        "    raise RuntimeError('migration failed halfway')\n"
    )
    yield Migrations(location, "state", (*STATE_MIGRATIONS.order, "state_9999"))


def test_a_failing_migration_leaves_the_database_as_it_was(
    tmp_path: Path, broken_migrations: Migrations
) -> None:
    database = rebuild("state-v1.sql", tmp_path / "state" / STATE_FILE)
    before = query(sqlite_url(database), "SELECT name FROM sqlite_master ORDER BY 1")
    engine = create_engine(str(database), create=False)  # the state's own engine
    with pytest.raises(RuntimeError, match="halfway"), engine.connect() as connection:
        connection.execution_options(**{BEGIN_MODE_OPTION: BEGIN_IMMEDIATE})
        connection.begin()
        version = connection.exec_driver_sql("PRAGMA user_version").scalar_one()
        migrate_sqlite(
            connection,
            version,
            broken_migrations,
            str(database),
            create=False,
            foreign=lambda found: SchemaVersionError(str(found)),
        )
    engine.dispose()
    assert query(sqlite_url(database), "SELECT name FROM sqlite_master ORDER BY 1") == before
    assert query(sqlite_url(database), "PRAGMA user_version") == [(1,)]


def _differences(migrations: Migrations, url: str, metadata: sa.MetaData) -> list[Any]:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection)
            found = compare_metadata(context, metadata)
    finally:
        engine.dispose()
    # PostgreSQL's storage-order column stands in for SQLite's implicit rowid (revision 1).
    return [d for d in found if not (d[0] == "remove_column" and d[3].name == "rowid")]


def test_the_state_head_revision_matches_the_tables_the_code_uses(tmp_path: Path) -> None:
    stores = SqliteStateStores()
    stores.open(str(tmp_path / "state"), create=True).close()  # type: ignore[union-attr]
    url = sqlite_url(tmp_path / "state" / STATE_FILE)
    assert _differences(STATE_MIGRATIONS, url, state_metadata) == []


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_the_store_head_revision_matches_the_tables_the_code_uses(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    if engine == "sqlite":
        url = sqlite_url(tmp_path / "store.sqlite")
    else:
        url = request.getfixturevalue("postgresql_url")
    open_review_store_db("unused", create=True, database=url).close()  # type: ignore[union-attr]
    assert _differences(STORE_MIGRATIONS, url, store_metadata) == []


def test_the_listed_revisions_are_the_revision_files_in_order() -> None:
    assert STATE_MIGRATIONS.order == STATE_MIGRATIONS.script_order()
    assert STORE_MIGRATIONS.order == STORE_MIGRATIONS.script_order()


def test_an_open_at_the_head_revision_imports_no_alembic(tmp_path: Path) -> None:
    """Every command opens the state: at the head revision that must not cost Alembic."""
    code = (
        "import sys\n"
        "from adapters.sqlite.state import SqliteStateStores\n"
        "from adapters.review_store.database import open_review_store_db\n"
        f"SqliteStateStores().open({str(tmp_path)!r}, create=False).close()\n"
        f"open_review_store_db({str(tmp_path)!r}, create=False).close()\n"
        "print(any(name.startswith('alembic') for name in sys.modules))\n"
    )
    SqliteStateStores().open(str(tmp_path), create=True).close()  # type: ignore[union-attr]
    open_review_store_db(str(tmp_path), create=True).close()  # type: ignore[union-attr]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.stdout.strip() == "False", done.stderr
