"""A passed check of the state file is remembered beside it (``<state>.checked``) and trusted
while the database and its WAL keep their identities; any write, a file put in its place, a
garbled page whose times were set back, a young file, or ``doctor`` checks again in full.
Real SQLite files; ``quick_check`` counted."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from artifactize.adapters.file_index import RACY_MARGIN_NS
from artifactize.adapters.sqlite import integrity
from artifactize.adapters.sqlite.integrity import (
    CHECKED_SUFFIX,
    StateDamaged,
    check_state_integrity,
    forget_all_checked,
)
from tests.integration.faults.conftest import FaultRepo

PAGE_SIZE = 4096


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The databases ``quick_check`` ran on; each test starts as a new process would."""
    ran: list[str] = []
    real = integrity.quick_check

    def counted(database: str) -> list[str]:
        ran.append(database)
        return real(database)

    monkeypatch.setattr(integrity, "quick_check", counted)
    forget_all_checked()
    yield ran
    forget_all_checked()


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """No racy margin: a file just written counts as settled (one test keeps the real one)."""
    monkeypatch.setattr(integrity, "RACY_MARGIN_NS", 0)


def _state(tmp_path: Path, *, wal: bool = False) -> str:
    database = str(tmp_path / "state.sqlite")
    connection = sqlite3.connect(database)
    if wal:
        connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("CREATE TABLE t (x TEXT)")
    connection.executemany("INSERT INTO t VALUES (?)", [("row" * 50,)] * 500)
    connection.commit()
    connection.close()
    return database


def _again(database: str, *, full: bool = False) -> None:
    """The check as the next process makes it."""
    forget_all_checked()
    check_state_integrity(database, full=full)


@pytest.mark.usefixtures("settled")
def test_a_passed_check_is_remembered_while_the_files_are_the_same(
    tmp_path: Path, checks: list[str]
) -> None:
    database = _state(tmp_path)
    check_state_integrity(database)
    assert len(checks) == 1 and Path(database + CHECKED_SUFFIX).is_file()
    _again(database)
    _again(database)
    assert len(checks) == 1  # remembered: no page read again
    _again(database, full=True)  # doctor's check
    assert len(checks) == 2


@pytest.mark.usefixtures("settled")
def test_a_write_to_the_state_checks_again(tmp_path: Path, checks: list[str]) -> None:
    database = _state(tmp_path)
    check_state_integrity(database)
    with sqlite3.connect(database) as connection:
        connection.execute("INSERT INTO t VALUES ('more')")
    _again(database)
    assert len(checks) == 2


@pytest.mark.usefixtures("settled")
def test_pages_in_the_wal_are_checked_every_time_and_an_emptied_wal_is_not(
    tmp_path: Path, checks: list[str]
) -> None:
    """The WAL holds pages of the state until they are checkpointed. While it has any, the
    check is not remembered (SQLite's read-only open of a WAL moves its change time, so the
    identities after the check differ from those before it); once a checkpoint emptied it,
    it is, and a WAL emptied again (its times moved, as each closing process does) holds no
    page: still remembered."""
    database = _state(tmp_path, wal=True)
    check_state_integrity(database)
    writer = sqlite3.connect(database)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute("INSERT INTO t VALUES ('in the wal')")
        writer.commit()
        assert os.path.getsize(database + "-wal") > 0
        _again(database)
        _again(database)
        assert len(checks) == 3
        writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        writer.close()
    _again(database)  # the checkpoint wrote the state: checked, and now remembered
    assert len(checks) == 4
    Path(database + "-wal").write_bytes(b"")
    _again(database)
    assert len(checks) == 4


@pytest.mark.usefixtures("settled")
def test_a_garbled_page_whose_times_were_set_back_is_checked_and_refused(
    tmp_path: Path, checks: list[str]
) -> None:
    """Hostile: a page overwritten in place, then the file's times put back as they were.
    Its change time cannot be put back, so the remembered check no longer holds."""
    database = _state(tmp_path)
    check_state_integrity(database)
    before = os.stat(database)
    with open(database, "r+b") as file:
        file.seek(2 * PAGE_SIZE)
        file.write(os.urandom(PAGE_SIZE))
    os.utime(database, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(StateDamaged, match="quick_check"):
        _again(database)
    assert len(checks) == 2


@pytest.mark.usefixtures("settled")
def test_a_file_put_in_its_place_is_checked(tmp_path: Path, checks: list[str]) -> None:
    database = _state(tmp_path)
    check_state_integrity(database)
    shutil.copy2(database, database + ".copy")
    os.replace(database + ".copy", database)  # the same bytes, another inode
    _again(database)
    assert len(checks) == 2


def test_a_young_state_is_not_remembered(tmp_path: Path, checks: list[str]) -> None:
    """Within the racy margin a later write could leave the identity as it was."""
    database = _state(tmp_path)
    check_state_integrity(database)
    assert not Path(database + CHECKED_SUFFIX).exists()
    _again(database)
    assert len(checks) == 2


@pytest.mark.usefixtures("settled")
@pytest.mark.parametrize(
    "kept", ["not json", json.dumps({"format": 99, "identities": []}), json.dumps([1, 2])]
)
def test_a_remembered_check_this_code_cannot_read_is_ignored(
    tmp_path: Path, checks: list[str], kept: str
) -> None:
    database = _state(tmp_path)
    Path(database + CHECKED_SUFFIX).write_text(kept, encoding="utf-8")
    check_state_integrity(database)
    assert len(checks) == 1
    _again(database)
    assert len(checks) == 1  # rewritten by the check that passed


@pytest.mark.usefixtures("settled")
def test_a_state_home_that_cannot_be_written_is_checked_every_time(
    tmp_path: Path, checks: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    database = _state(tmp_path)

    def refused(*_args: object, **_kwargs: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(Path, "replace", refused)
    check_state_integrity(database)
    _again(database)
    assert len(checks) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["state.sqlite"]  # no temporary left


def test_doctor_checks_in_full_what_a_remembered_check_would_pass(
    tmp_path: Path, checks: list[str]
) -> None:
    """A damage that moved no identity (a failing disk under an untouched file, forged here
    by remembering the garbled file's own identities) passes a remembered check; ``doctor``
    checks in full and names it."""
    repo = FaultRepo(tmp_path, tmp_path / "state")
    assert repo.run("verify", "r/ok").returncode == 0
    database = str(repo.state / "state.sqlite")
    with open(database, "r+b") as file:
        file.seek(PAGE_SIZE)
        file.write(os.urandom(PAGE_SIZE))
    time.sleep(RACY_MARGIN_NS / 1e9 + 0.1)
    identities = integrity._identities(integrity._stats(database))
    assert identities is not None
    Path(database + CHECKED_SUFFIX).write_text(
        json.dumps({"format": integrity.CHECKED_FORMAT, "identities": identities}), "utf-8"
    )
    _again(database)  # trusted: not read
    assert checks == []
    done = repo.run("doctor")
    assert done.returncode != 0
    assert f"The state {database} is damaged (quick_check" in done.stdout + done.stderr
