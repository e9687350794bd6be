"""``artifactize doctor --repair`` on a real state with many Runs, one of its pages garbled
(swept over the file's pages): the damaged file is kept aside byte for byte, the new state
passes quick_check and every command reads it again, with the Runs that lived elsewhere."""

from __future__ import annotations

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


def test_repair_recovers_what_can_be_read(repo: FaultRepo, many_runs: bytes) -> None:
    pages = len(many_runs) // PAGE_SIZE
    chosen = range(1, pages) if scale() > 1 else range(1, pages, max(1, pages // CI_PAGES))
    database = repo.state / "state.sqlite"
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
