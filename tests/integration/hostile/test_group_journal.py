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
from tests.support.processes import python_output_unless_blocked


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


def _record_text(owner: ProcessIdentity, leader: ProcessIdentity) -> str:
    return json.dumps(
        {
            "owner": {"pid": owner.pid, "createTime": owner.create_time},
            "leader": {"pid": leader.pid, "createTime": leader.create_time},
        }
    )


def test_a_record_cut_short_anywhere_is_skipped_and_signals_nothing(
    journal: GroupJournal,
) -> None:
    """Records are written in place: an owner killed while writing leaves a prefix. Every
    prefix of a dead owner's record naming a live leader is skipped (never parsed as a
    record, no traceback): the leader is not signalled."""
    bystander = sleeper()
    try:
        text = _record_text(dead_identity(), identity(bystander.pid))
        directory = Path(journal.directory)
        for cut in range(len(text)):
            (directory / f"group-{cut}-cut.json").write_text(text[:cut])
        assert journal.sweep().swept == 0
        assert bystander.poll() is None
        assert len(os.listdir(directory)) == len(text)  # every prefix kept, none removed
    finally:
        bystander.kill()
        bystander.wait()


def test_planted_entries_at_record_names_are_skipped(journal: GroupJournal, tmp_path: Path) -> None:
    """A link at a record's name (to a record a dead owner would have written, naming a live
    leader), a folder, and a file larger than any record: each is skipped, not followed or
    read whole, and the leader lives."""
    bystander = sleeper()
    try:
        outside = tmp_path / "outside.json"
        outside.write_text(_record_text(dead_identity(), identity(bystander.pid)))
        directory = Path(journal.directory)
        (directory / "group-1-link.json").symlink_to(outside)
        (directory / "group-2-folder.json").mkdir()
        (directory / "group-3-large.json").write_text(" " * 8192 + outside.read_text())
        assert journal.sweep().swept == 0
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_a_fifo_planted_at_a_record_name_does_not_hang_the_sweep(tmp_path: Path) -> None:
    """A FIFO named like a record (no writer ever comes): the sweep opens it without
    blocking and skips it. Run in a child process, so that a sweep that blocks fails this
    test instead of hanging the suite."""
    directory = tmp_path / "groups"
    GroupJournal(str(directory)).ready()
    os.mkfifo(directory / "group-1-fifo.json")
    code = (
        "import sys; from artifactize.adapters.posix.group_journal import GroupJournal; "
        "counts = GroupJournal(sys.argv[1]).sweep(); print(counts.swept, counts.unconfirmed)"
    )
    done = python_output_unless_blocked(code, str(directory), what="the sweep on a FIFO")
    assert done == (0, "0 0\n")
