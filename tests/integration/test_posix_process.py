"""The POSIX process adapter with real processes: groups, signals, deadlines, pidfd, cleanup.

What every process runner must do (exit codes, argv, stdin, bounded capture, deadlines,
cancellation, spawn errors) is in ``tests/contract/test_process_runner_contract.py``, run
against this adapter and the Windows one; this file keeps what only POSIX has.

Every test runs under a fixture that records each leader spawned and, afterwards, asserts with
psutil that the leader was reaped and that no live process of its group remains.
"""

from __future__ import annotations

import errno
import os
import select
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from artifactize.adapters.posix import process_group
from artifactize.adapters.posix.group_journal import GroupJournal
from artifactize.adapters.posix.process import (
    CAPTURE_LIMIT_BYTES,
    KILL_GRACE_SECONDS,
    PosixProcessRunner,
)
from artifactize.ports.process import ProcessOutcome, ProcessRunner, ProcessSpec
from tests.support.processes import (
    descriptors_opened_since,
    open_descriptors,
    record_spawns,
    wait_group_gone,
)

pytestmark = pytest.mark.anyio

PYTHON = sys.executable
HEAD = shutil.which("head") or "/usr/bin/head"
ENV_PROGRAM = shutil.which("env") or "/usr/bin/env"
SLEEP = shutil.which("sleep") or "/bin/sleep"
SH = shutil.which("sh") or "/bin/sh"
BASE_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}

RUNNER: ProcessRunner = PosixProcessRunner()


@pytest.fixture(autouse=True)
def spawned(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Record every leader the adapter spawns; afterwards nothing of theirs may be left."""
    pids = record_spawns(monkeypatch)
    yield pids
    unreaped = [child.pid for child in psutil.Process().children() if child.pid in pids]
    assert unreaped == [], "a leader was not reaped"
    for pgid in pids:  # each leader led its own group: pgid == pid
        assert wait_group_gone(pgid) == [], f"group {pgid} survived"


def spec(
    *argv: str,
    timeout_ms: int = 10_000,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    stdin: bytes = b"",
    capture_limit_bytes: int = CAPTURE_LIMIT_BYTES,
) -> ProcessSpec:
    return ProcessSpec(
        argv=argv,
        cwd=cwd if cwd is not None else str(Path.cwd()),
        env=env if env is not None else BASE_ENV,
        timeout_ms=timeout_ms,
        stdin=stdin,
        capture_limit_bytes=capture_limit_bytes,
    )


def python(code: str, *args: str, **kwargs: Any) -> ProcessSpec:
    return spec(PYTHON, "-c", code, *args, **kwargs)


async def timed_run(process: ProcessSpec) -> tuple[ProcessOutcome, float]:
    started = time.monotonic()
    outcome = await RUNNER.run(process)
    return outcome, time.monotonic() - started


# A leader that starts two `sleep 60` grandchildren in its own group, prints its pid and waits.
# (Tests take the group id from the `spawned` fixture: under load the deadline may come first.)
SLEEP_TREE = f"""
import os, subprocess, sys, time
for _ in range(2):
    subprocess.Popen([{SLEEP!r}, "60"])
print(os.getpid(), flush=True)
time.sleep(60)
"""


# --- exit status ------------------------------------------------------------------------------


async def test_death_by_signal_is_reported() -> None:
    outcome = await RUNNER.run(python("import os, signal; os.kill(os.getpid(), signal.SIGUSR1)"))
    assert (outcome.exit_code, outcome.signal) == (None, signal.SIGUSR1)
    assert not outcome.timed_out
    assert not outcome.succeeded


async def test_leader_runs_in_a_new_session_and_group() -> None:
    outcome = await RUNNER.run(python("import os; print(os.getpid(), os.getpgid(0), os.getsid(0))"))
    pid, pgid, sid = map(int, outcome.stdout.split())
    assert pid == pgid == sid
    assert pgid != os.getpgid(0)


# --- argv, environment, cwd, stdin ------------------------------------------------------------


async def test_environment_is_exactly_the_given_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARTIFACTIZE_TEST_CANARY", "must-not-leak")
    outcome = await RUNNER.run(spec(ENV_PROGRAM, env={"ONLY": "this", "SPACED": "a b"}))
    assert outcome.exit_code == 0
    assert outcome.stdout.decode().splitlines() == ["ONLY=this", "SPACED=a b"]


async def test_empty_environment_gives_the_child_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARTIFACTIZE_TEST_CANARY", "must-not-leak")
    outcome = await RUNNER.run(spec(ENV_PROGRAM, env={}))
    assert (outcome.exit_code, outcome.stdout) == (0, b"")


async def test_empty_stdin_is_a_pipe_at_end_of_file() -> None:
    """No input: the pipe is closed at once, not swapped for ``/dev/null`` (a program such
    as ``rg`` reads a piped stdin but searches its folder when stdin is a device)."""
    code = "import os, stat, sys; print(stat.S_ISFIFO(os.fstat(0).st_mode), sys.stdin.read() == '')"
    outcome = await RUNNER.run(python(code))
    assert (outcome.exit_code, outcome.stdout) == (0, b"True True\n")


async def test_child_that_closes_stdin_early_is_fine() -> None:
    code = "import os, time; os.close(0); time.sleep(0.1); print('closed')"
    outcome = await RUNNER.run(python(code, stdin=b"y" * (1024 * 1024)))
    assert (outcome.exit_code, outcome.stdout) == (0, b"closed\n")


# --- bounded capture --------------------------------------------------------------------------


async def test_default_limit_is_16_mib_inclusive() -> None:
    assert CAPTURE_LIMIT_BYTES == 16 * 1024 * 1024
    exact = await RUNNER.run(spec(HEAD, "-c", str(CAPTURE_LIMIT_BYTES), "/dev/zero"))
    assert exact.exit_code == 0
    assert (len(exact.stdout), exact.stdout_truncated) == (CAPTURE_LIMIT_BYTES, False)

    over = await RUNNER.run(spec(HEAD, "-c", str(CAPTURE_LIMIT_BYTES + 1), "/dev/zero"))
    assert over.exit_code == 0
    assert (len(over.stdout), over.stdout_truncated) == (CAPTURE_LIMIT_BYTES, True)


# --- deadline, group cleanup, cancellation ----------------------------------------------------


async def test_deadline_kills_the_whole_tree(spawned: list[int]) -> None:
    outcome, elapsed = await timed_run(python(SLEEP_TREE, timeout_ms=300))
    assert outcome.timed_out
    assert (outcome.exit_code, outcome.signal) == (None, signal.SIGTERM)
    assert elapsed < KILL_GRACE_SECONDS
    assert wait_group_gone(spawned[0]) == []


# The children here sleep 60 s: a run ending within half of that was cut after the grace,
# not waited out, and the bound leaves a loaded CI machine room (no speed is measured).
SLEEP_CUT_SECONDS = 30

# The shell sets SIGTERM to ignored and execs: the disposition survives exec, with no window.
IGNORING_TERM = f'trap "" TERM; exec {SLEEP} 60'


async def test_sigterm_ignoring_leader_is_sigkilled_after_the_grace() -> None:
    outcome, elapsed = await timed_run(spec(SH, "-c", IGNORING_TERM, timeout_ms=300))
    assert outcome.timed_out
    assert (outcome.exit_code, outcome.signal) == (None, signal.SIGKILL)
    assert 0.3 + KILL_GRACE_SECONDS <= elapsed < SLEEP_CUT_SECONDS


async def test_sigterm_ignoring_descendants_die_with_the_leader(spawned: list[int]) -> None:
    script = f"({IGNORING_TERM}) & ({IGNORING_TERM}) & exec {SLEEP} 60"
    outcome, elapsed = await timed_run(spec(SH, "-c", script, timeout_ms=300))
    assert outcome.timed_out
    assert (outcome.exit_code, outcome.signal) == (None, signal.SIGTERM)
    assert elapsed < KILL_GRACE_SECONDS  # the leader's exit ends the grace early
    assert wait_group_gone(spawned[0]) == []


async def test_leader_exit_kills_the_rest_of_the_group() -> None:
    # The grandchild inherits stdout and keeps it open: we must not wait for it.
    code = f"""
import os, subprocess
subprocess.Popen([{SLEEP!r}, "60"])
print(os.getpid(), flush=True)
"""
    outcome, elapsed = await timed_run(python(code))
    assert (outcome.exit_code, outcome.timed_out, outcome.streams_held_open) == (0, False, False)
    assert elapsed < KILL_GRACE_SECONDS
    assert wait_group_gone(int(outcome.stdout)) == []


async def test_descendant_that_left_the_group_cannot_hang_us() -> None:
    code = f"""
import subprocess
escapee = subprocess.Popen([{SLEEP!r}, "60"], start_new_session=True)
print(escapee.pid, flush=True)
"""
    outcome, elapsed = await timed_run(python(code))
    escapee = psutil.Process(int(outcome.stdout))
    try:
        assert outcome.exit_code == 0
        assert outcome.streams_held_open
        assert KILL_GRACE_SECONDS <= elapsed < SLEEP_CUT_SECONDS
    finally:
        escapee.kill()  # it left the group, so cleaning it up is ours, not the adapter's
        assert wait_gone(escapee)


def wait_gone(process: psutil.Process, timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.01)
    return False


async def test_caller_cancellation_kills_the_group(spawned: list[int]) -> None:
    started = time.monotonic()
    with anyio.move_on_after(0.3) as scope:
        await RUNNER.run(python(SLEEP_TREE))
    assert scope.cancelled_caught
    assert time.monotonic() - started < KILL_GRACE_SECONDS
    assert len(spawned) == 1
    assert wait_group_gone(spawned[0]) == []


async def test_cancellation_of_a_sigterm_ignoring_child_still_reaps(spawned: list[int]) -> None:
    started = time.monotonic()
    with anyio.move_on_after(0.3) as scope:
        await RUNNER.run(spec(SH, "-c", IGNORING_TERM))
    assert scope.cancelled_caught
    assert time.monotonic() - started >= 0.3 + KILL_GRACE_SECONDS
    assert len(spawned) == 1


async def test_without_pidfd_the_exit_is_polled(
    monkeypatch: pytest.MonkeyPatch, spawned: list[int]
) -> None:
    monkeypatch.setattr(process_group, "_open_pidfd", lambda pid: None)
    outcome = await RUNNER.run(python("import sys; print('polled'); sys.exit(4)"))
    assert (outcome.exit_code, outcome.stdout) == (4, b"polled\n")
    timed_out, elapsed = await timed_run(python(SLEEP_TREE, timeout_ms=200))
    assert timed_out.timed_out
    assert elapsed < KILL_GRACE_SECONDS
    assert wait_group_gone(spawned[1]) == []


# Echoes stdin to stdout and to stderr, each in several chunks: the pipes fill both ways.
ECHO_BOTH = """
import sys
data = sys.stdin.buffer.read()
sys.stdout.buffer.write(data); sys.stdout.flush()
sys.stderr.buffer.write(data[::-1])
"""


async def test_a_run_is_watched_from_the_callers_task_alone() -> None:
    """Feeding, both pipes and the exit are pumped by the caller's own task (one descriptor,
    ``pipe_pump``), not by a task per pipe."""
    tasks_while_reading: set[int] = set()

    def observe(stream: str, chunk: bytes) -> None:
        tasks_while_reading.add(len(anyio.get_running_tasks()))

    payload = os.urandom(512 * 1024)
    before = len(anyio.get_running_tasks())
    outcome = await RUNNER.run(replace(python(ECHO_BOTH, stdin=payload), observe_output=observe))
    assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (0, payload, payload[::-1])
    assert tasks_while_reading == {before}


async def test_without_pidfd_the_pipes_are_still_fed_and_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(process_group, "_open_pidfd", lambda pid: None)
    payload = os.urandom(512 * 1024)
    outcome = await RUNNER.run(python(ECHO_BOTH, stdin=payload))
    assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (0, payload, payload[::-1])


# --- spawn failures and invalid specs ---------------------------------------------------------


async def test_missing_program_is_a_spawn_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-program")
    outcome = await RUNNER.run(spec(missing))
    assert outcome == ProcessOutcome(spawn_error=f"No such file or directory: {missing}")
    assert not outcome.succeeded


async def test_program_not_on_path_is_a_spawn_error() -> None:
    outcome = await RUNNER.run(spec("artifactize-no-such-program-here"))
    assert outcome.spawn_error is not None
    assert "No such file or directory" in outcome.spawn_error


async def test_non_executable_program_is_a_spawn_error(tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    outcome = await RUNNER.run(spec(str(script)))
    assert outcome.spawn_error == f"Permission denied: {script}"


async def test_missing_cwd_is_a_spawn_error(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    outcome = await RUNNER.run(python("print(1)", cwd=str(missing)))
    assert outcome.spawn_error == f"No such file or directory: {missing}"


async def test_a_leader_reaped_elsewhere_is_never_signalled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """If something else reaps our leader and its pid is reused, the group is not ours to kill."""
    popen = process_group.spawn(spec(SLEEP, "0"))
    leader = process_group.GroupLeader(popen, exit_fd=True)
    os.waitpid(popen.pid, 0)  # "someone else" reaps it: the pid is free for reuse
    reused = leader.identity.create_time + 1  # ...and reused: it names a later process
    monkeypatch.setattr(process_group, "start_time", lambda pid: reused)
    signalled: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: signalled.append((pgid, sig)))
    await leader.ensure_dead()
    leader.close()
    assert signalled == []
    assert leader.reaped
    assert leader.exit_code_and_signal() == (None, None)


async def test_no_descriptor_is_leaked_on_any_path(tmp_path: Path) -> None:
    await RUNNER.run(python("print(1)"))  # warm up: anyio's own descriptors
    before = open_descriptors()
    await RUNNER.run(python("import sys; sys.exit(1)", stdin=b"data"))
    await RUNNER.run(python(SLEEP_TREE, timeout_ms=100))
    await RUNNER.run(spec(str(tmp_path / "missing")))
    with anyio.move_on_after(0.1):
        await RUNNER.run(python(SLEEP_TREE))
    assert descriptors_opened_since(before) == set()


# --- run_between: one worker-thread trip ------------------------------------------------------


async def between(process: ProcessSpec, runner: PosixProcessRunner | None = None) -> Any:
    """``run_between`` with nothing before or after the run but handing over the spec and
    the outcome; (outcome, elapsed seconds)."""
    started = time.monotonic()
    outcome = await (runner or PosixProcessRunner()).run_between(lambda: process, lambda o: o)
    return outcome, time.monotonic() - started


async def test_run_between_is_one_worker_thread_trip() -> None:
    """``before``, the reading of the child's pipes and ``after`` all happen on one worker
    thread: the event loop hands the call over once and gets its result once."""
    threads: dict[str, set[int]] = {"before": set(), "observe": set(), "after": set()}
    payload = os.urandom(512 * 1024)

    def observe(stream: str, chunk: bytes) -> None:
        threads["observe"].add(threading.get_ident())

    def before() -> ProcessSpec:
        threads["before"].add(threading.get_ident())
        return replace(python(ECHO_BOTH, stdin=payload), observe_output=observe)

    def after(outcome: ProcessOutcome) -> ProcessOutcome:
        threads["after"].add(threading.get_ident())
        return outcome

    outcome = await PosixProcessRunner().run_between(before, after)
    assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (0, payload, payload[::-1])
    [worker] = threads["before"]
    assert threads == {"before": {worker}, "observe": {worker}, "after": {worker}}
    assert worker != threading.get_ident()


async def test_run_between_deadline_kills_the_whole_tree(spawned: list[int]) -> None:
    outcome, elapsed = await between(python(SLEEP_TREE, timeout_ms=300))
    assert outcome.timed_out
    assert (outcome.exit_code, outcome.signal) == (None, signal.SIGTERM)
    assert elapsed < KILL_GRACE_SECONDS + SLEEP_CUT_SECONDS / 10
    assert wait_group_gone(spawned[0]) == []


async def test_run_between_sigterm_ignoring_leader_is_sigkilled_after_the_grace() -> None:
    outcome, elapsed = await between(spec(SH, "-c", IGNORING_TERM, timeout_ms=300))
    assert outcome.timed_out
    assert (outcome.exit_code, outcome.signal) == (None, signal.SIGKILL)
    assert 0.3 + KILL_GRACE_SECONDS <= elapsed < SLEEP_CUT_SECONDS


async def test_run_between_leader_exit_kills_the_rest_of_the_group(spawned: list[int]) -> None:
    code = f"""
import os, subprocess
subprocess.Popen([{SLEEP!r}, "60"])
print(os.getpid(), flush=True)
"""
    outcome, elapsed = await between(python(code))
    assert (outcome.exit_code, outcome.timed_out) == (0, False)
    assert elapsed < SLEEP_CUT_SECONDS
    assert wait_group_gone(spawned[0]) == []


async def test_run_between_caller_cancellation_kills_the_group(spawned: list[int]) -> None:
    started = time.monotonic()
    with anyio.move_on_after(0.3) as scope:
        await between(python(SLEEP_TREE))
    assert scope.cancelled_caught
    assert time.monotonic() - started < SLEEP_CUT_SECONDS
    assert len(spawned) == 1
    assert wait_group_gone(spawned[0]) == []


async def test_run_between_cancellation_of_a_sigterm_ignoring_child_still_reaps(
    spawned: list[int],
) -> None:
    started = time.monotonic()
    with anyio.move_on_after(0.3) as scope:
        await between(spec(SH, "-c", IGNORING_TERM))
    assert scope.cancelled_caught
    assert 0.3 + KILL_GRACE_SECONDS <= time.monotonic() - started < SLEEP_CUT_SECONDS
    assert len(spawned) == 1


async def test_run_between_without_pidfd_polls_the_exit(
    monkeypatch: pytest.MonkeyPatch, spawned: list[int]
) -> None:
    monkeypatch.setattr(process_group, "_open_pidfd", lambda pid: None)
    payload = os.urandom(512 * 1024)
    outcome, _ = await between(python(ECHO_BOTH, stdin=payload))
    assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (0, payload, payload[::-1])
    outcome, elapsed = await between(python(SLEEP_TREE, timeout_ms=200))
    assert outcome.timed_out
    assert elapsed < SLEEP_CUT_SECONDS
    assert wait_group_gone(spawned[1]) == []
    with anyio.move_on_after(0.3) as scope:
        await between(python(SLEEP_TREE))
    assert scope.cancelled_caught
    assert wait_group_gone(spawned[2]) == []


async def test_run_between_records_the_group_in_the_journal_while_it_runs(
    tmp_path: Path,
) -> None:
    journal = GroupJournal(str(tmp_path / "groups"))
    runner = PosixProcessRunner(journal)
    seen: list[list[str]] = []

    def observe(stream: str, chunk: bytes) -> None:
        seen.append(sorted(os.listdir(journal.directory)))

    outcome, _ = await between(replace(python("print(1)"), observe_output=observe), runner)
    assert outcome.exit_code == 0
    assert len(seen[0]) == 1 and seen[0][0].startswith("group-")  # leased while it ran
    assert os.listdir(journal.directory) == []  # released once the group was dead
    with anyio.move_on_after(0.3):
        await between(python(SLEEP_TREE), runner)
    assert os.listdir(journal.directory) == []


async def test_run_between_leaks_no_descriptor_on_any_path(tmp_path: Path) -> None:
    await between(python("print(1)"))  # warm up: anyio's own descriptors and threads
    before = open_descriptors()
    await between(python("import sys; sys.exit(1)", stdin=b"data"))
    await between(python(SLEEP_TREE, timeout_ms=100))
    await between(spec(str(tmp_path / "missing")))
    with anyio.move_on_after(0.1):
        await between(python(SLEEP_TREE))
    assert descriptors_opened_since(before) == set()


class _EpollWithoutRoomForStdin:
    """A real epoll set that refuses to watch a pipe for writing, as ``epoll_ctl`` does with
    ENOSPC once the user's ``max_user_watches`` is reached."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def register(self, fd: int, mask: int) -> None:
        if mask & select.EPOLLOUT:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._real.register(fd, mask)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


async def test_input_is_fed_once_when_the_epoll_set_cannot_take_stdin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pump writes what the pipe takes at once and watches stdin only for the rest; when
    that watch is refused, the run falls back to a task per pipe, which must feed only what
    is left (the child read the payload twice, its first 64 KiB then the whole of it)."""
    real_epoll = select.epoll
    monkeypatch.setattr(select, "epoll", lambda: _EpollWithoutRoomForStdin(real_epoll()))
    payload = os.urandom(512 * 1024)
    outcome = await RUNNER.run(python(ECHO_BOTH, stdin=payload))
    assert outcome.exit_code == 0
    assert len(outcome.stdout) == len(payload)
    assert (outcome.stdout, outcome.stderr) == (payload, payload[::-1])
