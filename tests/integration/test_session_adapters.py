"""Tool-session adapters with real processes: the launcher, the process table and the store.

Every test runs under a fixture that records each leader the adapters spawn and, afterwards,
asserts with psutil that it was reaped and that no live process of its group remains; the
module ends by asserting that no child process of ours is left at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import psutil
import pytest

from artifactize.adapters.posix.process_table import PsutilProcessTable
from artifactize.adapters.posix.session_process import PosixProcessLauncher
from artifactize.adapters.posix.session_store import PosixSessionStore
from artifactize.ports.process import ProcessSpec
from artifactize.ports.sessions import (
    JournalEntry,
    JournalRole,
    ProcessIdentity,
    ProcessLauncher,
    ProcessTable,
    RunningProcess,
    SessionStore,
)
from tests.support.processes import (
    descriptors_opened_since,
    live_group_members,
    open_descriptors,
    python_output_unless_blocked,
    record_spawns,
    wait_group_gone,
)

pytestmark = pytest.mark.anyio

PYTHON = sys.executable
BASE_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
SETTLE_SECONDS = 5.0  # what a reaped group's pipe readers may take to close their ends

LAUNCHER: ProcessLauncher = PosixProcessLauncher()
TABLE: ProcessTable = PsutilProcessTable()
STORE: SessionStore = PosixSessionStore()


def is_our_unreaped_child(pid: int) -> bool:
    return any(child.pid == pid for child in psutil.Process().children())


@pytest.fixture(scope="module", autouse=True)
def nothing_left_behind() -> Iterator[None]:
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    deadline = time.monotonic() + 2.0
    while True:
        left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert left == [], f"child processes left behind: {left}"


@pytest.fixture(autouse=True)
def spawned(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Record every leader the adapters spawn; afterwards nothing of theirs may be left."""
    pids = record_spawns(monkeypatch)
    yield pids
    unreaped = [pid for pid in pids if is_our_unreaped_child(pid)]
    survivors = {pgid: wait_group_gone(pgid) for pgid in pids}
    for pgid in unreaped:  # clean up after a failed test before reporting it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        os.waitpid(pgid, 0)
    assert unreaped == [], "a leader was not reaped"
    assert all(not members for members in survivors.values()), f"groups survived: {survivors}"


def python(code: str, *, stdin: bytes = b"", cwd: str | None = None) -> ProcessSpec:
    return ProcessSpec(
        argv=(PYTHON, "-c", code),
        cwd=cwd if cwd is not None else str(Path.cwd()),
        env=BASE_ENV,
        timeout_ms=10_000,
        stdin=stdin,
    )


# A grandchild in the harness's group that ignores SIGTERM and holds stdout and stderr open.
# It prints nothing: a test may close the leader's stdout after the leader's line, and a
# child still starting under load would then print into a closed pipe and die of it (a
# member the test expected would be missing).
STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
HARNESS = f"""
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", {STUBBORN!r}])
print("ready", flush=True)
time.sleep(60)
"""


class Observed:
    """A spawn observer that remembers what it saw and whether the leader was running."""

    def __init__(self) -> None:
        self.identities: list[ProcessIdentity] = []
        self.running_when_observed: list[bool] = []

    def __call__(self, identity: ProcessIdentity) -> None:
        self.identities.append(identity)
        process = psutil.Process(identity.pid)
        self.running_when_observed.append(
            process.create_time() == identity.create_time
            and process.status() != psutil.STATUS_ZOMBIE
        )


async def start(
    code: str, *, stdin: bytes = b"", cwd: str | None = None
) -> tuple[RunningProcess, Observed]:
    observed = Observed()
    process = await LAUNCHER.start(python(code, stdin=stdin, cwd=cwd), observed)
    return process, observed


# --- launcher: readiness and the group ------------------------------------------------------


async def test_ready_line_then_kill_group_leaves_nothing() -> None:
    process, observed = await start(HARNESS)
    assert observed.identities == [process.identity]
    pid = process.identity.pid
    assert process.identity.create_time == psutil.Process(pid).create_time()
    assert os.getpgid(pid) == pid and os.getsid(pid) == pid
    with anyio.fail_after(10):
        assert await process.ready_line() == b"ready\n"
        assert await process.ready_line() == b"ready\n"  # the same answer again
    members = live_group_members(pid)
    assert pid in members and len(members) == 2  # the leader and its stubborn child
    assert not process.has_exited()

    assert await process.kill_group()
    assert live_group_members(pid) == []
    assert not is_our_unreaped_child(pid)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert process.has_exited()
    assert await process.kill_group()  # idempotent


async def test_exit_before_printing_is_none() -> None:
    process, _ = await start("import sys; sys.exit(3)")
    with anyio.fail_after(10):
        assert await process.ready_line() is None
        await process.wait_exit()
    assert process.has_exited()
    assert is_our_unreaped_child(process.identity.pid)  # exited but not reaped: pid pinned
    assert await process.kill_group()
    assert not is_our_unreaped_child(process.identity.pid)


async def test_partial_line_then_exit_is_none() -> None:
    process, _ = await start("import sys; sys.stdout.write('almost'); sys.stdout.flush()")
    with anyio.fail_after(10):
        assert await process.ready_line() is None
    assert await process.kill_group()


async def test_leader_exit_without_newline_is_none_even_if_a_child_holds_stdout() -> None:
    code = f"""
import subprocess, sys
subprocess.Popen([sys.executable, "-c", {STUBBORN!r}])
sys.stdout.write("partial"); sys.stdout.flush()
"""
    process, _ = await start(code)
    with anyio.fail_after(10):
        assert await process.ready_line() is None
        await process.wait_exit()
    assert len(live_group_members(process.identity.pid)) == 1  # the child lives on
    assert await process.kill_group()


async def test_line_printed_right_before_exit_still_counts() -> None:
    process, _ = await start("print('ready')")
    with anyio.fail_after(10):
        await process.wait_exit()
        assert await process.ready_line() == b"ready\n"
    assert await process.kill_group()


async def test_overlong_ready_line_is_bounded() -> None:
    process, _ = await start(
        "import sys, time; sys.stdout.write('x' * 1_000_000 + '\\nrest'); sys.stdout.flush(); "
        "time.sleep(60)"
    )
    with anyio.fail_after(10):
        line = await process.ready_line()
    assert line is not None and line.endswith(b"\n") and len(line) == 64 * 1024 + 1
    assert await process.kill_group()


async def test_output_after_readiness_is_drained() -> None:
    code = """
import sys
print("ready", flush=True)
chunk = b"y" * 1024 * 1024
for _ in range(10):
    sys.stdout.buffer.write(chunk); sys.stdout.flush()
    sys.stderr.buffer.write(chunk); sys.stderr.flush()
"""
    process, _ = await start(code)
    with anyio.fail_after(10):
        assert await process.ready_line() == b"ready\n"
        await process.wait_exit()  # it finished writing: nothing blocked it
    assert await process.kill_group()


async def test_stderr_before_readiness_does_not_block_it() -> None:
    code = """
import sys, time
sys.stderr.buffer.write(b"e" * 4 * 1024 * 1024); sys.stderr.flush()
print("ready", flush=True)
time.sleep(60)
"""
    process, _ = await start(code)
    with anyio.fail_after(10):
        assert await process.ready_line() == b"ready\n"
    assert await process.kill_group()


async def test_stdin_cwd_and_env_are_the_given_ones(tmp_path: Path) -> None:
    code = """
import hashlib, json, os, sys, time
data = sys.stdin.buffer.read()
print(json.dumps([hashlib.sha256(data).hexdigest(), os.getcwd(), sorted(os.environ)]), flush=True)
time.sleep(60)
"""
    envelope = b'{"args": {}}' * 20_000  # more than a pipe buffer
    process, _ = await start(code, stdin=envelope, cwd=str(tmp_path))
    with anyio.fail_after(10):
        line = await process.ready_line()
    assert line is not None
    digest, cwd, env = json.loads(line)
    assert digest == hashlib.sha256(envelope).hexdigest()
    assert cwd == str(tmp_path)
    assert set(env) <= {*BASE_ENV, "LC_CTYPE"}  # nothing inherited (Python may add LC_CTYPE)
    assert await process.kill_group()


async def test_harness_that_never_reads_stdin_is_fine() -> None:
    process, _ = await start("print('ready', flush=True); import time; time.sleep(60)")
    process2, _ = await start("import time; time.sleep(60)", stdin=b"x" * 1024 * 1024)
    with anyio.fail_after(10):
        assert await process.ready_line() == b"ready\n"
    assert await process.kill_group()
    assert await process2.kill_group()
    assert await process2.ready_line() is None  # killed before readiness


async def test_leader_exit_after_readiness_then_kill_group_gets_the_rest() -> None:
    code = f"""
import subprocess, sys
subprocess.Popen([sys.executable, "-c", {STUBBORN!r}])
print("ready", flush=True)
"""
    process, _ = await start(code)
    with anyio.fail_after(10):
        assert await process.ready_line() == b"ready\n"
        await process.wait_exit()
    assert len(live_group_members(process.identity.pid)) == 1
    assert await process.kill_group()
    assert live_group_members(process.identity.pid) == []


async def test_ready_line_can_be_cancelled() -> None:
    process, _ = await start("import time; time.sleep(60)")
    with anyio.move_on_after(0.1) as scope:
        await process.ready_line()
    assert scope.cancelled_caught
    assert await process.kill_group()


async def test_wait_and_kill_from_another_threads_event_loop() -> None:
    process, _ = await start(HARNESS)
    with anyio.fail_after(10):
        assert await process.ready_line() == b"ready\n"
    results: list[bool] = []

    def other_loop() -> None:
        async def cleanup() -> None:
            results.append(await process.kill_group())
            await process.wait_exit()

        anyio.run(cleanup)

    thread = threading.Thread(target=other_loop)
    thread.start()
    with anyio.fail_after(10):
        await process.wait_exit()  # this loop sees the exit the other one caused
    await anyio.to_thread.run_sync(thread.join)
    assert results == [True]
    assert await process.kill_group()


async def test_concurrent_kill_group_calls_agree() -> None:
    process, _ = await start(HARNESS)
    with anyio.fail_after(10):
        assert await process.ready_line() == b"ready\n"
    results: list[bool] = []

    async def kill() -> None:
        results.append(await process.kill_group())

    async with anyio.create_task_group() as tasks:
        for _ in range(3):
            tasks.start_soon(kill)
    assert results == [True, True, True]


async def test_no_pipe_thread_or_descriptor_is_left() -> None:
    warm, _ = await start("print(1)")
    await warm.ready_line()
    await warm.kill_group()
    before_fds, before_threads = open_descriptors(), set(threading.enumerate())
    for code in (HARNESS, "import sys; sys.exit(1)", "import time; time.sleep(60)"):
        process, _ = await start(code, stdin=b"data")
        with anyio.move_on_after(0.5):
            await process.ready_line()
        assert await process.kill_group()
    # The group is reaped; its pipes' readers close their ends as they see the end of the
    # stream, which a loaded machine may run a moment later: wait (bounded) for them.
    with anyio.move_on_after(SETTLE_SECONDS):
        while descriptors_opened_since(before_fds) or set(threading.enumerate()) - before_threads:
            await anyio.sleep(0.01)
    assert descriptors_opened_since(before_fds) == set()
    assert set(threading.enumerate()) - before_threads == set()


# --- launcher: spawn failures and the observer ------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [("/nonexistent/program",), ("artifactize-no-such-program",), (PYTHON, "a\0b")],
)
async def test_spawn_failure_raises_oserror(argv: tuple[str, ...]) -> None:
    observed = Observed()
    spec = ProcessSpec(argv=argv, cwd=str(Path.cwd()), env=BASE_ENV, timeout_ms=1)
    with pytest.raises(OSError):
        await LAUNCHER.start(spec, observed)
    assert observed.identities == []


async def test_missing_cwd_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        await LAUNCHER.start(python("print(1)", cwd=str(tmp_path / "missing")), Observed())


async def test_failing_observer_kills_and_reaps_the_group(spawned: list[int]) -> None:
    def refuse(identity: ProcessIdentity) -> None:
        raise OSError("journal is full")

    with pytest.raises(OSError, match="journal is full"):
        await LAUNCHER.start(python(HARNESS), refuse)
    assert len(spawned) == 1  # the fixture checks it was reaped and its group is gone


async def test_run_observed_reports_the_identity_before_the_end() -> None:
    observed = Observed()
    outcome = await LAUNCHER.run_observed(
        python("import time; time.sleep(0.2); print('ok')"), observed
    )
    assert outcome.exit_code == 0 and outcome.stdout == b"ok\n"
    assert observed.running_when_observed == [True]
    assert not is_our_unreaped_child(observed.identities[0].pid)


async def test_run_observed_spawn_failure_is_an_outcome() -> None:
    observed = Observed()
    spec = ProcessSpec(argv=("/nonexistent/program",), cwd="/", env=BASE_ENV, timeout_ms=1000)
    outcome = await LAUNCHER.run_observed(spec, observed)
    assert outcome.spawn_error is not None
    assert observed.identities == []


async def test_run_observed_with_a_failing_observer_cleans_up(spawned: list[int]) -> None:
    def refuse(identity: ProcessIdentity) -> None:
        raise OSError("journal is full")

    with pytest.raises(OSError, match="journal is full"):
        await LAUNCHER.run_observed(python(HARNESS), refuse)
    assert len(spawned) == 1


# --- process table ----------------------------------------------------------------------------


def sleeper(*, new_session: bool = True) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "30"], start_new_session=new_session)


def identity_of(pid: int) -> ProcessIdentity:
    return ProcessIdentity(pid, psutil.Process(pid).create_time())


def wait_zombie(pid: int) -> None:
    deadline = time.monotonic() + 5
    while psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.005)


def test_own_identity() -> None:
    assert TABLE.own_identity() == ProcessIdentity(os.getpid(), psutil.Process().create_time())
    assert TABLE.is_alive(TABLE.own_identity())


def test_is_alive_for_a_live_process_and_not_for_a_reused_pid() -> None:
    popen = sleeper()
    try:
        identity = identity_of(popen.pid)
        assert TABLE.is_alive(identity)
        assert not TABLE.is_alive(ProcessIdentity(popen.pid, identity.create_time - 1000))
    finally:
        popen.kill()
        popen.wait()


def test_a_zombie_is_not_alive() -> None:
    popen = subprocess.Popen([sys.executable, "-c", "pass"])
    identity = identity_of(popen.pid)
    try:
        wait_zombie(popen.pid)
        assert not TABLE.is_alive(identity)
    finally:
        popen.wait()


def test_a_dead_pid_is_not_alive() -> None:
    popen = subprocess.Popen([sys.executable, "-c", "pass"])
    identity = identity_of(popen.pid)
    popen.wait()
    assert not TABLE.is_alive(identity)


def test_kill_group_never_signals_a_reused_pid() -> None:
    popen = sleeper()  # a group leader, so a careless killpg would hit it
    try:
        real = identity_of(popen.pid)
        recorded = ProcessIdentity(popen.pid, real.create_time - 1000)
        assert TABLE.kill_group(recorded)  # that group cannot exist any more
        time.sleep(0.05)
        assert popen.poll() is None
        assert TABLE.is_alive(real)
    finally:
        popen.kill()
        popen.wait()


def test_kill_group_kills_a_live_group() -> None:
    popen = subprocess.Popen(
        [sys.executable, "-c", HARNESS], stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert popen.stdout is not None
        assert popen.stdout.readline() == b"ready\n"
        while len(live_group_members(popen.pid)) < 2:
            time.sleep(0.005)
        assert TABLE.kill_group(identity_of(popen.pid))
        assert live_group_members(popen.pid) == []
    finally:
        popen.kill()
        popen.wait()
        assert popen.stdout is not None
        popen.stdout.close()


def test_kill_group_finds_members_after_the_leader_was_reaped() -> None:
    code = f"""
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", {STUBBORN!r}])
print(child.pid, flush=True)
"""
    popen = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True
    )
    assert popen.stdout is not None
    child_pid = int(popen.stdout.readline())
    popen.stdout.close()
    identity = identity_of(popen.pid)
    popen.wait()  # the leader is gone; its child still pins the group id
    assert live_group_members(popen.pid) == [child_pid]
    assert TABLE.kill_group(identity)
    assert live_group_members(popen.pid) == []
    assert TABLE.kill_group(identity)  # an empty group: nothing to do


def test_kill_group_of_an_exited_unreaped_leader() -> None:
    popen = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    identity = identity_of(popen.pid)
    try:
        wait_zombie(popen.pid)
        assert TABLE.kill_group(identity)
    finally:
        popen.wait()


# --- store ------------------------------------------------------------------------------------


OWNER = ProcessIdentity(4242, 1_700_000_000.123456)


def mode(path: str | Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_store_create_owner_lease_and_remove(tmp_path: Path) -> None:
    parent = tmp_path / "state" / "sessions"
    directory = STORE.create(str(parent), OWNER)
    assert mode(parent) == 0o700
    assert mode(directory) == 0o700
    assert os.path.dirname(directory) == str(parent)
    assert os.path.basename(directory).startswith("session-")
    assert sorted(os.listdir(parent)) == [os.path.basename(directory)]  # no building leftover
    assert STORE.directories(str(parent)) == [directory]
    assert STORE.owner(directory) == OWNER
    assert STORE.has_lease(directory)
    STORE.release_lease(directory)
    assert not STORE.has_lease(directory)
    STORE.release_lease(directory)  # idempotent
    for name in os.listdir(directory):
        assert mode(os.path.join(directory, name)) == 0o600
    second = STORE.create(str(parent), OWNER)
    assert second != directory
    assert STORE.directories(str(parent)) == sorted([directory, second])
    STORE.remove(directory)
    STORE.remove(directory)  # already gone: nothing to do
    assert STORE.directories(str(parent)) == [second]


def test_store_journal_round_trip(tmp_path: Path) -> None:
    directory = STORE.create(str(tmp_path), OWNER)
    assert STORE.journal(directory) == []
    entries = [
        JournalEntry(JournalRole.START, ProcessIdentity(10, 1_700_000_001.5)),
        JournalEntry(JournalRole.CALL, ProcessIdentity(11, 1_700_000_002.0)),
        JournalEntry(JournalRole.STOP, ProcessIdentity(12, 1_700_000_003.987654321)),
    ]
    for entry in entries:
        STORE.append(directory, entry)
    assert STORE.journal(directory) == entries
    journal = Path(directory) / "journal.jsonl"
    assert mode(journal) == 0o600
    lines = journal.read_text().splitlines()
    assert json.loads(lines[0]) == {"role": "start", "pid": 10, "createTime": 1_700_000_001.5}


def test_store_append_fsyncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = STORE.create(str(tmp_path), OWNER)
    synced: list[int] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    STORE.append(directory, JournalEntry(JournalRole.START, OWNER))
    assert len(synced) == 2  # the journal, then the directory that now holds it
    STORE.append(directory, JournalEntry(JournalRole.CALL, OWNER))
    assert len(synced) == 3


def test_store_journal_after_a_torn_append(tmp_path: Path) -> None:
    directory = STORE.create(str(tmp_path), OWNER)
    first = JournalEntry(JournalRole.START, ProcessIdentity(10, 1_700_000_001.5))
    STORE.append(directory, first)
    journal = Path(directory) / "journal.jsonl"
    with journal.open("ab") as file:
        file.write(b'{"role": "call", "pid": 11, "creat')  # a crash mid-write
    assert STORE.journal(directory) == [first]
    second = JournalEntry(JournalRole.STOP, ProcessIdentity(12, 1_700_000_003.0))
    STORE.append(directory, second)  # cuts the torn tail first
    assert STORE.journal(directory) == [first, second]
    assert journal.read_bytes().count(b"\n") == 2


def test_store_journal_ignores_a_zeroed_final_line(tmp_path: Path) -> None:
    directory = STORE.create(str(tmp_path), OWNER)
    first = JournalEntry(JournalRole.START, ProcessIdentity(10, 1_700_000_001.5))
    STORE.append(directory, first)
    with (Path(directory) / "journal.jsonl").open("ab") as file:
        file.write(b"\0" * 40 + b"\n")  # size grew, data never reached the disk
    assert STORE.journal(directory) == [first]


def test_store_journal_with_only_a_torn_line(tmp_path: Path) -> None:
    directory = STORE.create(str(tmp_path), OWNER)
    (Path(directory) / "journal.jsonl").write_bytes(b'{"role": "sta')
    assert STORE.journal(directory) == []
    entry = JournalEntry(JournalRole.START, ProcessIdentity(10, 1.0))
    STORE.append(directory, entry)
    assert STORE.journal(directory) == [entry]


def test_store_journal_refuses_a_corrupt_middle_line(tmp_path: Path) -> None:
    directory = STORE.create(str(tmp_path), OWNER)
    (Path(directory) / "journal.jsonl").write_bytes(
        b'{"role": "start", "pid": 10, "createTime": 1.0}\n'
        b'{"role": "nobody", "pid": 11, "createTime": 1.0}\n'
        b'{"role": "call", "pid": 12, "createTime": 1.0}\n'
    )
    with pytest.raises(OSError, match="corrupt journal line 2"):
        STORE.journal(directory)


@pytest.mark.parametrize(
    "content",
    [
        None,
        b"",
        b"{not json",
        b"[]",
        b'{"pid": "1", "createTime": 1.0}',
        b'{"pid": true, "createTime": 1.0}',
        b'{"pid": 0, "createTime": 1.0}',
        b'{"pid": 1}',
        b'{"pid": 1, "createTime": "now"}',
        b"\xff\xfe",
    ],
)
def test_store_owner_is_none_when_missing_or_corrupt(tmp_path: Path, content: bytes | None) -> None:
    directory = STORE.create(str(tmp_path), OWNER)
    owner = Path(directory) / "owner.json"
    owner.unlink()
    if content is not None:
        owner.write_bytes(content)
    assert STORE.owner(directory) is None


def test_store_owner_symlink_is_not_followed(tmp_path: Path) -> None:
    directory = STORE.create(str(tmp_path / "sessions"), OWNER)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"pid": 1, "createTime": 1.0}))
    owner = Path(directory) / "owner.json"
    owner.unlink()
    owner.symlink_to(elsewhere)
    assert STORE.owner(directory) is None


def test_store_directories_lists_only_real_session_directories(tmp_path: Path) -> None:
    parent = tmp_path / "sessions"
    assert STORE.directories(str(parent)) == []  # no parent yet
    directory = STORE.create(str(parent), OWNER)
    (parent / "session-file").write_text("")
    (parent / "other").mkdir()
    (parent / ".new-0123").mkdir()
    (parent / "session-link").symlink_to(tmp_path)
    assert STORE.directories(str(parent)) == [directory]


def test_store_remove_does_not_follow_symlinks(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    directory = STORE.create(str(tmp_path / "sessions"), OWNER)
    work = STORE.work_directory(directory)
    os.symlink(outside, os.path.join(work, "link"))
    os.symlink(outside / "keep.txt", os.path.join(directory, "file-link"))
    STORE.remove(directory)
    assert not os.path.lexists(directory)
    assert (outside / "keep.txt").read_text() == "keep"


def test_store_remove_raises_on_failure(tmp_path: Path) -> None:
    directory = STORE.create(str(tmp_path / "sessions"), OWNER)
    link = tmp_path / "link"
    link.symlink_to(directory)
    with pytest.raises(OSError):
        STORE.remove(str(link))  # rmtree refuses a symlinked directory
    assert os.path.isdir(directory)


def test_store_work_directory(tmp_path: Path) -> None:
    directory = STORE.create(str(tmp_path), OWNER)
    old_umask = os.umask(0o022)
    try:
        work = STORE.work_directory(directory)
    finally:
        os.umask(old_umask)
    assert work == os.path.join(directory, "work")
    assert mode(work) == 0o700 and os.path.isdir(work)
    (Path(work) / "state").write_text("harness")
    assert STORE.work_directory(directory) == work  # idempotent, contents kept
    assert (Path(work) / "state").read_text() == "harness"
    STORE.remove(directory)
    assert not os.path.lexists(directory)


def test_store_work_directory_refuses_a_symlink(tmp_path: Path) -> None:
    directory = STORE.create(str(tmp_path / "sessions"), OWNER)
    os.symlink(tmp_path, os.path.join(directory, "work"))
    with pytest.raises(OSError):
        STORE.work_directory(directory)


def test_store_identity_survives_a_round_trip_with_psutil(tmp_path: Path) -> None:
    """The recorded owner compares equal to what psutil reports, so liveness checks hold."""
    me = TABLE.own_identity()
    directory = STORE.create(str(tmp_path), me)
    recorded = STORE.owner(directory)
    assert recorded == me
    assert recorded is not None and TABLE.is_alive(recorded)


STORE_READS = """
import sys
from artifactize.adapters.posix.session_store import PosixSessionStore
store = PosixSessionStore()
print(store.owner(sys.argv[1]))
try:
    store.journal(sys.argv[1])
except OSError as exc:
    print("refused:", exc.strerror)
"""


def test_fifos_planted_at_a_sessions_records_do_not_hang_the_sweep(tmp_path: Path) -> None:
    """The state home (``sessions/``) may come from an untrusted CI cache: a FIFO at a
    session's ``owner.json`` or ``journal.jsonl`` (no writer ever comes) is opened without
    blocking and refused: no owner (the session counts as abandoned), a journal that cannot
    be read. In a child process, so that a read that blocks fails this test."""
    directory = STORE.create(str(tmp_path / "sessions"), OWNER)
    os.unlink(os.path.join(directory, "owner.json"))
    os.mkfifo(os.path.join(directory, "owner.json"))
    os.mkfifo(os.path.join(directory, "journal.jsonl"))
    done = python_output_unless_blocked(STORE_READS, directory, what="reading the records")
    assert done == (0, "None\nrefused: not a regular file\n")
