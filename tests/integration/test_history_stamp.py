"""The history's stamp (state revision 5): real SQLite, the triggers of the migration.

Every write to ``executions`` that could change what a Run reuses sets a new random value;
a reuse's ``touch`` (a row of ``record_uses``, folded into ``last_used`` alone) does not; an upgraded state gets one; a state
made again by ``repair`` has its own."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import sqlalchemy as sa

from artifactize.adapters.sqlite import history, recovery
from artifactize.adapters.sqlite.state import SqliteStateStore, SqliteStateStores
from artifactize.adapters.sqlite.state_files import STATE_FILE
from tests.integration.test_schema_migrations import rebuild
from tests.integration.test_sqlite_state import execution

UNTOUCHED = "last_used"  # the one column a reuse writes


def _open(state: Path) -> SqliteStateStore:
    store = SqliteStateStores().open(str(state), create=True)
    assert isinstance(store, SqliteStateStore)
    return store


def _sql(state: Path, statement: str, *values: object) -> list[tuple[object, ...]]:
    with sqlite3.connect(state / STATE_FILE) as db:
        return db.execute(statement, values).fetchall()


def test_every_write_that_could_change_a_reuse_moves_the_stamp(tmp_path: Path) -> None:
    store = _open(tmp_path)
    seen = [store.history_stamp()]
    assert seen[0].startswith(store.state_id() + ":")

    def moved() -> bool:
        now = store.history_stamp()
        fresh = now not in seen
        seen.append(now)
        return fresh

    store.insert_execution(execution("one", None))
    assert moved()
    _sql(tmp_path, "UPDATE executions SET status = 'ERROR', completed_at = 'x' WHERE id = 'one'")
    assert moved()
    _sql(tmp_path, "UPDATE executions SET data = '{}' WHERE id = 'one'")
    assert moved()
    store.latest_of_keys(["k" * 64], touch=True)  # a lookup that finds nothing writes nothing
    assert not moved()
    _sql(tmp_path, "DELETE FROM executions WHERE id = 'one'")
    assert moved()
    store.close()


def test_a_touch_leaves_the_stamp(tmp_path: Path) -> None:
    store = _open(tmp_path)
    store.insert_execution(execution("one", None))
    _sql(
        tmp_path,
        "UPDATE executions SET key = ?, status = 'GREEN', completed_at = 't', bytes = 1,"
        " last_used = 't' WHERE id = 'one'",
        "k" * 64,
    )
    stamp = store.history_stamp()
    assert set(store.latest_of_keys(["k" * 64], touch=True)) == {"k" * 64}
    ((noted,),) = _sql(tmp_path, "SELECT used FROM record_uses WHERE execution_id = 'one'")
    assert noted != "t"  # touched: the use noted beside the record (revision 7)
    assert store.history_stamp() == stamp
    engine = sa.create_engine(f"sqlite:///{tmp_path / STATE_FILE}")
    with engine.begin() as connection:
        history.fold_uses(connection)  # what a look for the least recently used does first
    engine.dispose()
    assert _sql(tmp_path, "SELECT last_used FROM executions") == [(noted,)]
    assert _sql(tmp_path, "SELECT * FROM record_uses") == []
    assert store.history_stamp() == stamp
    store.close()


def test_the_update_trigger_names_every_column_but_last_used(tmp_path: Path) -> None:
    """A column added to ``executions`` later must be named by a new revision's trigger,
    or a write to it alone would leave a plan standing."""
    store = _open(tmp_path)
    store.close()
    columns = {str(row[1]) for row in _sql(tmp_path, "PRAGMA table_info(executions)")}
    (sql,) = _sql(tmp_path, "SELECT sql FROM sqlite_master WHERE name = 'history_stamp_update'")
    found = re.search(r"UPDATE OF (.*?) ON executions", str(sql[0]))
    assert found is not None
    named = {name.strip().strip('"') for name in found.group(1).split(",")}
    assert named == columns - {UNTOUCHED}


def test_an_upgraded_state_has_a_stamp_and_a_repaired_one_another(tmp_path: Path) -> None:
    """``doctor --repair`` copies the rows into a new state: the state id comes along, the
    stamp does not (a recovered history may have lost records a plan counted on)."""
    old = rebuild("state-v1.sql", tmp_path / "old" / STATE_FILE)
    store = _open(tmp_path / "old")
    before = store.history_stamp()
    store.close()
    _open(tmp_path / "new").close()
    target = tmp_path / "new" / STATE_FILE
    recovery._copy(str(old), str(target), recovery.Recovery(str(old), str(target)))
    again = _open(tmp_path / "new")
    after = again.history_stamp()
    again.close()
    assert after.split(":")[0] == before.split(":")[0]  # the same state id, copied
    assert after != before  # but a history of its own
