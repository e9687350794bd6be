"""The tool-session contract, run by every platform's launcher, process table and session
store: POSIX process groups under Linux, Windows Jobs under Wine. What only one platform has
(zombies, process-group ids, symlinks planted in a session) stays beside the POSIX adapters.

Every test runs under a fixture that asserts, with psutil, that no process started during it
survives; the hostile recovery test kills an owner and lets the next sweep clean up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import psutil
import pytest

from artifactize.ports.process import ProcessSpec
from artifactize.ports.sessions import JournalEntry, JournalRole, ProcessIdentity, RunningProcess
from tests.contract.adapters import (
    WINDOWS,
    base_environment,
    session_adapters,
    track,
    wait_gone,
)
from tests.fakes.threads import THREADS

pytestmark = pytest.mark.anyio

PYTHON = sys.executable
LAUNCHER, TABLE, STORE, READY_LINE_LIMIT = session_adapters()
# A harness that starts a grandchild, says it is ready, and sleeps.
HARNESS = """
import subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print("ready", flush=True)
print(grandchild.pid, flush=True)
time.sleep(60)
"""


@pytest.fixture(autouse=True)
def nothing_survives() -> Iterator[None]:
    me = psutil.Process()
    before = {child.pid for child in me.children(recursive=True)}
    yield
    started = [child for child in me.children(recursive=True) if child.pid not in before]
    assert wait_gone(started) == [], "a process survived"


def spec(code: str, *, stdin: bytes = b"", cwd: str | None = None, **env: str) -> ProcessSpec:
    return ProcessSpec(
        argv=(PYTHON, "-c", code),
        cwd=cwd or str(Path.cwd()),
        env={**base_environment(), **env},
        timeout_ms=2_147_483_647,
        stdin=stdin,
    )


async def start(
    code: str, *, stdin: bytes = b"", cwd: str | None = None, **env: str
) -> tuple[RunningProcess, list[ProcessIdentity]]:
    seen: list[ProcessIdentity] = []
    process = await LAUNCHER.start(spec(code, stdin=stdin, cwd=cwd, **env), seen.append)
    return process, seen


# --- the launcher -----------------------------------------------------------------------------


async def test_ready_line_then_kill_group_ends_the_harness_and_its_grandchild() -> None:
    process, seen = await start(HARNESS)
    assert seen == [process.identity]
    assert process.identity.create_time == psutil.Process(process.identity.pid).create_time()
    with anyio.fail_after(20):
        first = await process.ready_line()
        assert first in (b"ready\n", b"ready\r\n")
        assert await process.ready_line() == first  # the same answer again
    assert not process.has_exited()
    assert TABLE.is_alive(process.identity)
    assert await process.kill_group()
    assert process.has_exited()
    assert not TABLE.is_alive(process.identity)
    assert await process.kill_group()  # idempotent


async def test_exit_before_printing_is_none() -> None:
    process, _ = await start("import sys; sys.exit(3)")
    with anyio.fail_after(20):
        assert await process.ready_line() is None
        await process.wait_exit()
    assert process.has_exited()
    assert await process.kill_group()


async def test_partial_line_then_exit_is_none() -> None:
    process, _ = await start("import sys; sys.stdout.write('almost'); sys.stdout.flush()")
    with anyio.fail_after(20):
        assert await process.ready_line() is None
    assert await process.kill_group()


async def test_exit_without_newline_is_none_even_if_a_grandchild_holds_stdout() -> None:
    code = """
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
sys.stdout.write("partial"); sys.stdout.flush()
"""
    process, _ = await start(code)
    with anyio.fail_after(20):
        assert await process.ready_line() is None
        await process.wait_exit()
    assert await process.kill_group()  # and the grandchild with it (the fixture checks)


async def test_a_line_printed_right_before_exit_still_counts() -> None:
    process, _ = await start("print('ready')")
    with anyio.fail_after(20):
        await process.wait_exit()
        assert (await process.ready_line() or b"").strip() == b"ready"
    assert await process.kill_group()


async def test_an_overlong_ready_line_is_bounded() -> None:
    assert READY_LINE_LIMIT == 64 * 1024
    code = f"import sys, time; sys.stdout.write('x' * {READY_LINE_LIMIT + 5000} + '\\n'); sys.stdout.flush(); time.sleep(60)"
    process, _ = await start(code)
    with anyio.fail_after(20):
        line = await process.ready_line()
    assert line is not None and len(line.rstrip(b"\r\n")) == READY_LINE_LIMIT
    assert await process.kill_group()


async def test_output_after_readiness_is_drained_so_the_harness_never_blocks() -> None:
    code = """
import sys
print("ready", flush=True)
for _ in range(64):
    sys.stdout.write("o" * 65536); sys.stderr.write("e" * 65536)
sys.stdout.flush(); sys.stderr.flush()
"""
    process, _ = await start(code)
    with anyio.fail_after(30):
        assert (await process.ready_line() or b"").strip() == b"ready"
        await process.wait_exit()  # 4 MiB on each pipe: only drained pipes let it finish
    assert await process.kill_group()


async def test_stdin_cwd_and_environment_are_the_given_ones(tmp_path: Path) -> None:
    code = """
import json, os, sys
print(json.dumps([sys.stdin.read(), os.getcwd(), os.environ.get("SESSION_MARK")]), flush=True)
import time; time.sleep(60)
"""
    process, _ = await start(code, stdin=b'{"args": {}}', cwd=str(tmp_path), SESSION_MARK="m")
    with anyio.fail_after(20):
        line = await process.ready_line()
    assert line is not None
    envelope, cwd, mark = json.loads(line)
    assert envelope == '{"args": {}}'
    assert os.path.normcase(cwd) == os.path.normcase(str(tmp_path.resolve()))
    assert mark == "m"
    assert await process.kill_group()


async def test_a_harness_that_never_reads_stdin_is_fine() -> None:
    process, _ = await start("print('ready', flush=True)", stdin=b"x" * (4 * 1024 * 1024))
    with anyio.fail_after(20):
        assert (await process.ready_line() or b"").strip() == b"ready"
    assert await process.kill_group()


async def test_a_missing_program_raises_oserror(tmp_path: Path) -> None:
    seen: list[ProcessIdentity] = []
    missing = ProcessSpec(
        argv=(str(tmp_path / "missing"),), cwd=str(tmp_path), env={}, timeout_ms=1000
    )
    with pytest.raises(OSError):
        await LAUNCHER.start(missing, seen.append)
    assert seen == []


async def test_a_failing_observer_leaves_nothing_running(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    def refuse(identity: ProcessIdentity) -> None:
        raise RuntimeError("journal full")

    code = f"import time; time.sleep(0.5); open({str(marker)!r}, 'w').close(); time.sleep(60)"
    with pytest.raises(RuntimeError, match="journal full"):
        await LAUNCHER.start(spec(code), refuse)
    time.sleep(1.5)
    assert not marker.exists()


async def test_run_observed_reports_the_identity_before_the_end() -> None:
    seen: list[ProcessIdentity] = []
    outcome = await LAUNCHER.run_observed(spec("import os; print(os.getpid())"), seen.append)
    assert [identity.pid for identity in seen] == [int(outcome.stdout)]


# --- the process table ------------------------------------------------------------------------


def test_own_identity_is_this_process() -> None:
    identity = TABLE.own_identity()
    assert identity.pid == os.getpid()
    assert TABLE.is_alive(identity)


def test_a_reused_or_dead_pid_is_not_alive() -> None:
    child = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(60)"])
    try:
        identity = ProcessIdentity(child.pid, psutil.Process(child.pid).create_time())
        assert TABLE.is_alive(identity)
        assert not TABLE.is_alive(ProcessIdentity(child.pid, identity.create_time - 100))
    finally:
        child.kill()
        child.wait()
    assert not TABLE.is_alive(identity)


async def test_kill_group_of_a_journaled_harness_ends_it() -> None:
    process, _ = await start(HARNESS)
    with anyio.fail_after(20):
        await process.ready_line()
    assert TABLE.kill_group(process.identity)
    with anyio.fail_after(10):
        await process.wait_exit()
    assert await process.kill_group()


def test_kill_group_of_a_process_that_is_gone_is_confirmed() -> None:
    child = subprocess.Popen([PYTHON, "-c", "pass"])
    identity = ProcessIdentity(child.pid, psutil.Process(child.pid).create_time())
    child.wait()
    assert TABLE.kill_group(identity)


# --- the session store ------------------------------------------------------------------------


def test_create_owner_lease_and_remove(tmp_path: Path) -> None:
    parent = tmp_path / "sessions"
    owner = TABLE.own_identity()
    directory = STORE.create(str(parent), owner)
    assert STORE.directories(str(parent)) == [directory]
    assert STORE.owner(directory) == owner
    assert STORE.has_lease(directory)
    STORE.release_lease(directory)
    assert not STORE.has_lease(directory)
    work = STORE.work_directory(directory)
    assert os.path.isdir(work)
    assert STORE.work_directory(directory) == work
    (Path(work) / "state.json").write_text("{}")
    STORE.remove(directory)
    assert STORE.directories(str(parent)) == []
    STORE.remove(directory)  # a concurrent sweep removed it first: fine


def test_the_journal_round_trips(tmp_path: Path) -> None:
    directory = STORE.create(str(tmp_path), TABLE.own_identity())
    assert STORE.journal(directory) == []
    entries = [
        JournalEntry(JournalRole.START, ProcessIdentity(101, 1700000000.25)),
        JournalEntry(JournalRole.CALL, ProcessIdentity(102, 1700000001.5)),
        JournalEntry(JournalRole.RELEASED, ProcessIdentity(101, 1700000000.25)),
    ]
    for entry in entries:
        STORE.append(directory, entry)
    assert STORE.journal(directory) == entries


def test_a_torn_final_line_is_ignored_and_cut_before_the_next_append(tmp_path: Path) -> None:
    directory = STORE.create(str(tmp_path), TABLE.own_identity())
    first = JournalEntry(JournalRole.START, ProcessIdentity(7, 1.5))
    STORE.append(directory, first)
    with open(os.path.join(directory, "journal.jsonl"), "ab") as journal:
        journal.write(b'{"role": "ca')
    assert STORE.journal(directory) == [first]
    second = JournalEntry(JournalRole.STOP, ProcessIdentity(8, 2.5))
    STORE.append(directory, second)
    assert STORE.journal(directory) == [first, second]


def test_a_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    directory = STORE.create(str(tmp_path), TABLE.own_identity())
    with open(os.path.join(directory, "journal.jsonl"), "wb") as journal:
        journal.write(b'garbage\n{"role": "start", "pid": 1, "createTime": 1.0}\n')
    with pytest.raises(OSError):
        STORE.journal(directory)


@pytest.mark.parametrize("content", [None, b"", b"not json", b'{"pid": "1"}', b"[]"])
def test_owner_is_none_when_missing_or_corrupt(tmp_path: Path, content: bytes | None) -> None:
    directory = STORE.create(str(tmp_path), TABLE.own_identity())
    owner_file = Path(directory) / "owner.json"
    owner_file.unlink()
    if content is not None:
        owner_file.write_bytes(content)
    assert STORE.owner(directory) is None


def test_only_session_directories_are_listed(tmp_path: Path) -> None:
    directory = STORE.create(str(tmp_path), TABLE.own_identity())
    (tmp_path / ".new-0123").mkdir()
    (tmp_path / "session-file").write_text("not a directory")
    (tmp_path / "other").mkdir()
    assert STORE.directories(str(tmp_path)) == [directory]
    assert STORE.directories(str(tmp_path / "missing")) == []


# --- hostile: the owner dies, the next session start recovers -----------------------------------

# The owner picks its adapters itself: importing the test helpers would import pytest, which
# costs seconds per process under Wine.
OWNER = """
import anyio, json, os, sys
from artifactize.ports.process import ProcessSpec
from artifactize.ports.sessions import JournalEntry, JournalRole

if sys.platform == "win32":
    from artifactize.adapters.windows.process_table import WindowsProcessTable as Table
    from artifactize.adapters.windows.session_process import WindowsProcessLauncher as Launcher
    from artifactize.adapters.windows.session_store import WindowsSessionStore as Store
else:
    from artifactize.adapters.posix.process_table import PsutilProcessTable as Table
    from artifactize.adapters.posix.session_process import PosixProcessLauncher as Launcher
    from artifactize.adapters.posix.session_store import PosixSessionStore as Store
launcher, table, store = Launcher(), Table(), Store()
environment = json.loads(sys.argv[2])
parent = sys.argv[1]
harness = '''
import subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(grandchild.pid, flush=True)
time.sleep(60)
'''

async def main():
    directory = store.create(parent, table.own_identity())
    record = lambda identity: store.append(directory, JournalEntry(JournalRole.START, identity))
    spec = ProcessSpec(
        argv=(sys.executable, "-c", harness), cwd=parent, env=environment,
        timeout_ms=2_147_483_647,
    )
    process = await launcher.start(spec, record)
    grandchild = int(await process.ready_line())
    with open(store.work_directory(directory) + "/held.txt", "w") as held:
        held.write("x")
    print(json.dumps([directory, process.identity.pid, grandchild]), flush=True)
    await anyio.sleep(60)

anyio.run(main)
"""


def test_an_owner_killed_mid_session_is_recovered_by_the_next_sweep(tmp_path: Path) -> None:
    from artifactize.adapters.threads import ThreadCleanupExecutor
    from artifactize.domain.tools.sessions import SessionPorts, sweep

    parent = tmp_path / "sessions"
    parent.mkdir()
    repo = str(Path(__file__).resolve().parents[2])
    owner = subprocess.Popen(
        [PYTHON, "-c", OWNER, str(parent), json.dumps(base_environment())],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": repo},
        stdout=subprocess.PIPE,
    )
    try:
        assert owner.stdout is not None
        directory, harness, grandchild = json.loads(owner.stdout.readline())
        tree = track([harness, grandchild])
        assert len(tree) == 2
    finally:
        owner.kill()  # no cleanup of its own can run
        owner.wait()
    if WINDOWS:
        # Windows closed the owner's handles, and the kill-on-close Job ended with them.
        assert wait_gone(tree, timeout=10) == []
    ports = SessionPorts(
        launcher=LAUNCHER,
        table=TABLE,
        store=STORE,
        parent=str(parent),
        cleanup=ThreadCleanupExecutor(),
        threads=THREADS,
    )
    sweep(ports)
    assert STORE.directories(str(parent)) == []
    assert not os.path.exists(directory)
    assert wait_gone(tree) == []
