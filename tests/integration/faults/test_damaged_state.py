"""A damaged state file: one garbled page of a real state, swept over its pages, under the
commands that open it; a 0-byte and a non-SQLite state.sqlite. Each is refused (exit 2,
the path named, the way to recover) and not one byte of it, nor of its WAL, is written."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import time
from pathlib import Path

import pytest

from artifactize.adapters.sqlite.integrity import EMPTY_FILE_GRACE_SECONDS
from tests.integration.faults.conftest import FaultRepo
from tests.support.hostile import record_counts, scale

PAGE_SIZE = 4096
COMMANDS = (("run", "list"), ("--json", "status"), ("verify", "r/ok"))
CI_PAGES = 4  # pages garbled per command in CI (spread over the file); the soak takes all


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def companions(database: Path) -> dict[str, str | None]:
    """The WAL's content (an empty or missing WAL holds nothing), and the file's."""
    wal = Path(f"{database}-wal")
    return {
        "db": digest(database),
        "wal": digest(wal) if wal.exists() and wal.stat().st_size else None,
    }


def assert_refused(repo: FaultRepo, args: tuple[str, ...], why: str) -> None:
    database = repo.state / "state.sqlite"
    before = companions(database)
    done = repo.run(*args)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Traceback" not in out
    assert f"The state {database} is damaged ({why}" in out
    assert "artifactize doctor" in out
    assert companions(database) == before


@pytest.fixture(scope="module")
def verified(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real state for the module: the state folder of a ``verify r/ok`` that passed."""
    root = tmp_path_factory.mktemp("verified")
    source = FaultRepo(root, root / "state")
    done = source.run("verify", "r/ok")
    assert done.returncode == 0, done.stderr
    return source.state


@pytest.fixture
def good_state(repo: FaultRepo, verified: Path) -> bytes:
    """This test's own copy of the module's state folder, and its state file's bytes."""
    shutil.copytree(verified, repo.state, symlinks=True)
    return (repo.state / "state.sqlite").read_bytes()


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_a_garbled_page_is_refused_and_never_written(
    repo: FaultRepo, good_state: bytes, args: tuple[str, ...]
) -> None:
    pages = len(good_state) // PAGE_SIZE
    chosen = range(pages) if scale() > 1 else range(0, pages, max(1, pages // CI_PAGES))
    database = repo.state / "state.sqlite"
    tried = 0
    for page in chosen:
        for suffix in ("-wal", "-shm"):
            Path(f"{database}{suffix}").unlink(missing_ok=True)
        garbled = bytearray(good_state)
        noise = random.Random(page).randbytes(PAGE_SIZE)
        garbled[page * PAGE_SIZE : (page + 1) * PAGE_SIZE] = noise
        database.write_bytes(bytes(garbled))
        why = "it is not an SQLite database" if page == 0 else "quick_check: "
        assert_refused(repo, args, why)
        tried += 1
    record_counts(f"garbled state page under {' '.join(args)} (failures: accepted)", tried, 0)


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_an_empty_state_is_refused_not_replaced(
    repo: FaultRepo, good_state: bytes, args: tuple[str, ...]
) -> None:
    database = repo.state / "state.sqlite"
    database.write_bytes(b"")
    old = time.time() - EMPTY_FILE_GRACE_SECONDS - 1
    os.utime(database, (old, old))
    assert_refused(repo, args, "it is empty: 0 bytes")
    assert database.read_bytes() == b""


def test_a_file_that_is_not_sqlite_is_refused(repo: FaultRepo, good_state: bytes) -> None:
    database = repo.state / "state.sqlite"
    database.write_text("not a database\n" * 100, "utf-8")
    assert_refused(repo, ("verify", "r/ok"), "it is not an SQLite database")
