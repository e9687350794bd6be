"""``artifactize doctor --repair`` on a real state with many Runs, one of its pages garbled
(swept over the file's pages): the damaged file is kept aside byte for byte, the new state
passes quick_check and every command reads it again, with the Runs that lived elsewhere."""

from __future__ import annotations

import contextlib
import json
import random
import sqlite3
from pathlib import Path

import pytest

from tests.integration.faults.conftest import FaultRepo
from tests.support.hostile import record_counts, scale

PAGE_SIZE = 4096
RUNS = 200  # copies of one real Run: about a hundred pages of runs
CI_PAGES = 4


@pytest.fixture
def many_runs(repo: FaultRepo) -> bytes:
    done = repo.run("--json", "verify", "r/ok")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["id"]
    database = repo.state / "state.sqlite"
    with sqlite3.connect(database) as connection:
        (repo_path, status, data) = connection.execute(
            "SELECT repo, status, data FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
        for number in range(RUNS):
            copy = f"run-copy{number:04d}"
            connection.execute(
                "INSERT INTO runs (id, repo, status, data) VALUES (?, ?, ?, ?)",
                (copy, repo_path, status, data.replace(run_id, copy)),
            )
    connection.close()
    checkpoint = sqlite3.connect(database)
    checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    checkpoint.close()
    return database.read_bytes()


def schema_pages(database: Path) -> set[int]:
    """The 0-based indexes of the pages that hold the schema (``sqlite_schema``): with one of
    them garbled SQLite reads no table at all, so no copy recovers anything. The first page
    never was swept; since state revision 6 the schema also spans two leaf pages."""
    with contextlib.closing(sqlite3.connect(database)) as connection:
        rows = connection.execute("SELECT pageno FROM dbstat WHERE name = 'sqlite_schema'")
        return {int(pageno) - 1 for (pageno,) in rows}


def test_repair_recovers_what_can_be_read(repo: FaultRepo, many_runs: bytes) -> None:
    pages = len(many_runs) // PAGE_SIZE
    database = repo.state / "state.sqlite"
    schema = schema_pages(database)
    assert 0 in schema
    spread = range(1, pages, max(1, pages // (CI_PAGES * scale())))  # spread over the file
    chosen = [page for page in spread if page not in schema]
    tried = failures = 0
    for page in chosen:
        for leftover in repo.state.glob("state.sqlite*"):
            leftover.unlink()
        garbled = bytearray(many_runs)
        garbled[page * PAGE_SIZE : (page + 1) * PAGE_SIZE] = random.Random(page).randbytes(
            PAGE_SIZE
        )
        database.write_bytes(bytes(garbled))
        assert repo.run("run", "list").returncode == 2  # refused first
        repaired = repo.run("--json", "doctor", "--repair")
        tried += 1
        try:
            assert repaired.returncode in (0, 1), repaired.stdout + repaired.stderr
            report = json.loads(repaired.stdout.splitlines()[0])["repair"]
            assert Path(report["damaged"]).read_bytes() == bytes(garbled)
            listed = repo.run("--json", "run", "list", "--limit", str(RUNS + 10))
            assert listed.returncode == 0, listed.stderr
            assert len(json.loads(listed.stdout)) == report["copied"]["runs"]
            assert repo.run("verify", "r/ok").returncode == 0
        except AssertionError:
            failures += 1
            raise
        finally:
            record_counts("doctor --repair of a garbled page (failures)", 1, failures)
    assert tried >= 1


def test_repair_of_a_sound_state_touches_nothing(repo: FaultRepo, many_runs: bytes) -> None:
    repaired = repo.run("--json", "doctor", "--repair")
    assert json.loads(repaired.stdout.splitlines()[0]) == {"repair": None}
    assert sorted(p.name for p in repo.state.glob("state.sqlite*"))[0] == "state.sqlite"
    assert not list(repo.state.glob("*.damaged-*"))
