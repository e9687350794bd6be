"""The process-group journal on its own: what a sweep kills, and what it never touches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from artifactize.adapters.posix.group_journal import GroupJournal, default_journal_directory
from artifactize.ports.sessions import ProcessIdentity


def identity(pid: int) -> ProcessIdentity:
    return ProcessIdentity(pid, psutil.Process(pid).create_time())


def write_record(
    directory: Path, name: str, owner: ProcessIdentity, leader: ProcessIdentity
) -> Path:
    path = directory / name
    record = {
        "owner": {"pid": owner.pid, "createTime": owner.create_time},
        "leader": {"pid": leader.pid, "createTime": leader.create_time},
    }
    path.write_text(json.dumps(record))
    return path


@pytest.fixture
def journal(tmp_path: Path) -> GroupJournal:
    found = GroupJournal(str(tmp_path / "groups"))
    found.ready()
    return found


def sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )


def dead_identity() -> ProcessIdentity:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    found = identity(child.pid)
    child.wait()
    return found


def test_a_dead_owners_group_is_killed_and_its_record_dropped(journal: GroupJournal) -> None:
    group = sleeper()
    try:
        record = write_record(
            Path(journal.directory), "group-1.json", dead_identity(), identity(group.pid)
        )
        counts = journal.sweep()
        assert (counts.swept, counts.unconfirmed) == (1, 0)
        assert group.wait(timeout=10) == -9
        assert not record.exists()
    finally:
        group.kill()
        group.wait()


def test_a_live_owners_group_is_left_alone(journal: GroupJournal) -> None:
    group = sleeper()
    try:
        me = identity(os.getpid())
        record = write_record(Path(journal.directory), "group-2.json", me, identity(group.pid))
        assert journal.sweep().swept == 0
        assert group.poll() is None and record.exists()
    finally:
        group.kill()
        group.wait()


def test_a_reused_pid_is_never_signalled(journal: GroupJournal) -> None:
    """The leader's pid now names another process (another start time): nothing is sent."""
    bystander = sleeper()
    try:
        reused = ProcessIdentity(bystander.pid, identity(bystander.pid).create_time - 100)
        record = write_record(Path(journal.directory), "group-3.json", dead_identity(), reused)
        assert journal.sweep().swept == 1  # our group is gone: its id was free to reuse
        assert bystander.poll() is None and not record.exists()
    finally:
        bystander.kill()
        bystander.wait()


def test_admit_then_release(journal: GroupJournal) -> None:
    record = journal.admit(identity(os.getpid()))
    data = json.loads(Path(record).read_text())
    assert data["owner"]["pid"] == os.getpid() and data["leader"]["pid"] == os.getpid()
    assert oct(os.stat(record).st_mode & 0o777) == "0o600"
    journal.release(record)
    assert os.listdir(journal.directory) == []


def test_a_journal_directory_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "groups").symlink_to(target)
    with pytest.raises(OSError):
        GroupJournal(str(tmp_path / "groups")).ready()


def test_where_the_journal_lives(tmp_path: Path) -> None:
    home = str(tmp_path)
    assert default_journal_directory({}, home) == f"{home}/.cache/artifactize/process-groups"
    cache = {"XDG_CACHE_HOME": "/c"}
    assert default_journal_directory(cache, home) == "/c/artifactize/process-groups"
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    found = default_journal_directory({"XDG_RUNTIME_DIR": str(runtime)}, home)
    assert found == f"{runtime}/artifactize/process-groups"
    runtime.chmod(0o755)  # not private: never trusted
    assert default_journal_directory({"XDG_RUNTIME_DIR": str(runtime)}, home).startswith(home)
