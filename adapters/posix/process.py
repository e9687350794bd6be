"""POSIX process adapter: one program in its own process group, with a deadline and bounded output.

How a run goes:

1. The program is started without a shell (explicit argv, cwd and the complete environment,
   nothing inherited) as the leader of a new session, so its pid is also its process-group id.
   The spawn is synchronous, so a cancellation cannot separate the child from its handle.
   ``run_observed`` then reports the leader's identity (pid + start time) to its caller.
2. stdin receives ``spec.stdin`` and is closed (with no input, closed at once: still an
   empty pipe, not ``/dev/null``); stdout and stderr are read while the program runs, each
   kept up to ``spec.capture_limit_bytes`` with the excess read and discarded. Every chunk
   read, kept or not, is also shown to ``spec.observe_output`` when one is given (a screen
   that shows a Human tool's lines live). On Linux the caller's own task does all of it,
   and waits for the exit, through one epoll set holding the pipes and the pidfd
   (``pipe_pump``: one wait and usually one wake-up per run); elsewhere a task per pipe.
3. The leader's exit is observed *without reaping it* (a pidfd, else ``waitid(WNOWAIT)``
   polling). While it is an unreaped zombie its pid, and with it the group id, cannot be
   reused, so signalling the group is safe. After a normal exit the group is SIGKILLed right
   away (background descendants do not survive); on deadline or cancellation it gets SIGTERM,
   up to ``KILL_GRACE_SECONDS`` for the leader to exit, then SIGKILL. Only then is the leader
   reaped.
4. The pipes are read for at most ``KILL_GRACE_SECONDS`` more: a descendant that left the group
   (``setsid``) and still holds them cannot make the run hang.

Before any signal, the saved identity (pid + psutil's create time) is checked, so a pid that
something else reaped and the kernel reused is never signalled. Cleanup runs in a shielded
``finally``, so the caller's cancellation (an anyio cancel scope) always reaches the group.
Descendants that leave the group themselves (daemons) escape cleanup; commands are trusted.
The spawn and the group leader are shared with tool sessions (``process_group``).

``run_between`` does the same on a worker thread, between the caller's blocking work before
and after it (a command-tool call, a runtime eval): the thread spawns, waits in
``epoll_wait`` on the same set with an eventfd added, through which the event loop reports
its caller's cancellation, and ends the group with the same signals in the same order. One
trip to the thread and back replaces two trips and the loop's own wait; the spawn (the
parent waits in ``vfork`` until the child has exec'd) and the leader's identity (reading
``/proc/PID/stat`` of a child that exits at once waits for its exit, about 0.5 ms) no longer
hold up the loop.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

from artifactize.adapters.posix import pipe_pump, process_group
from artifactize.adapters.posix.group_journal import GroupJournal
from artifactize.adapters.posix.process_group import KILL_GRACE_SECONDS, GroupLeader
from artifactize.adapters.process_trips import run_between_in_trips
from artifactize.ports.process import (
    CAPTURE_LIMIT_BYTES,
    STDERR,
    STDOUT,
    OutputObserver,
    ProcessOutcome,
    ProcessSpec,
)
from artifactize.ports.sessions import SpawnObserver

__all__ = [
    "CAPTURE_LIMIT_BYTES",
    "DEFAULT_TIMEOUT_MS",
    "KILL_GRACE_SECONDS",
    "TIMEOUT_MS_MAX",
    "PosixProcessRunner",
]

DEFAULT_TIMEOUT_MS = 120_000
TIMEOUT_MS_MAX = 2_147_483_647
# KILL_GRACE_SECONDS (process_group): after SIGTERM, how long the leader may take to exit
# before SIGKILL; after reaping, how long the pipes may stay open before we stop reading.

_READ_CHUNK = 64 * 1024
_WRITE_CHUNK = 64 * 1024
# Without a pidfd, a worker thread looks for the leader's exit between these two intervals.
_POLL_FIRST_SECONDS = 0.001
_POLL_MAX_SECONDS = 0.05
# One trip (``run_between``) needs an eventfd to wake the thread, and epoll to wait on it.
_ONE_TRIP = pipe_pump.AVAILABLE and hasattr(os, "eventfd")

T = TypeVar("T")
R = TypeVar("R")


def _spawn_error_message(error: OSError | ValueError) -> str:
    if isinstance(error, OSError) and error.strerror:
        if error.filename is not None:
            return f"{error.strerror}: {os.fsdecode(error.filename)}"
        return error.strerror
    return str(error)


@dataclass
class _Capture:
    """One output stream: the kept prefix, whether anything was dropped, whether EOF came;
    every chunk is also shown to ``observe``."""

    limit: int
    stream: str = STDOUT
    observe: OutputObserver | None = None
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    closed: bool = False

    def receive(self, chunk: bytes) -> None:
        """One chunk read from the pipe; ``b""`` is its end of file."""
        if not chunk:
            self.closed = True
            return
        self.add(chunk)
        if self.observe is not None:
            self.observe(self.stream, chunk)

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        if len(chunk) > room:
            self.truncated = True

    def take(self) -> bytes:
        """The kept bytes; the buffer is released right away, so the two streams never each
        hold a buffer and its copy at the same time (16 MiB less at the peak)."""
        data = bytes(self.data)
        self.data = bytearray()
        return data


async def _drain(fd: int, capture: _Capture, closed: anyio.Event) -> None:
    """Read ``fd`` (non-blocking) to EOF into ``capture``; set ``closed`` at its end."""
    while True:
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            await anyio.wait_readable(fd)
            continue
        capture.receive(chunk)
        if not chunk:
            closed.set()
            return
        await anyio.lowlevel.checkpoint()


async def _feed(pipe: subprocess.Popen[bytes], data: bytes) -> None:
    """Write ``data`` to the child's stdin, then close it; a child that stops reading is fine."""
    stdin = pipe.stdin
    assert stdin is not None
    fd = stdin.fileno()
    view = memoryview(data)
    try:
        while view:
            try:
                written = os.write(fd, view[:_WRITE_CHUNK])
            except BlockingIOError:
                await anyio.wait_writable(fd)
                continue
            view = view[written:]
            await anyio.lowlevel.checkpoint()
    except BrokenPipeError:
        pass  # the child closed stdin or exited without reading it all
    finally:
        with contextlib.suppress(OSError):
            stdin.close()


def _check(spec: ProcessSpec) -> None:
    if not spec.argv:
        raise ValueError("argv must name a program")
    if not 1 <= spec.timeout_ms <= TIMEOUT_MS_MAX:
        raise ValueError(f"timeout_ms must be from 1 to {TIMEOUT_MS_MAX}, got {spec.timeout_ms}")
    if spec.capture_limit_bytes < 0:
        raise ValueError(f"capture_limit_bytes must not be negative: {spec.capture_limit_bytes}")


class _Unrecorded(Exception):
    """The group's journal record could not be written: it is killed, never admitted."""


def _unrecorded(error: OSError) -> str:
    return f"cannot record the process group: {_spawn_error_message(error)}"


class PosixProcessRunner:
    """``ProcessRunner`` for POSIX systems (process groups, signals, pidfd on Linux).

    With a ``journal`` (the CLI always gives one), every group is recorded right after its
    spawn, before anything is awaited, and its record dropped once its cleanup is
    confirmed; the first run also sweeps the groups of owners that died
    (``group_journal``)."""

    def __init__(self, journal: GroupJournal | None = None) -> None:
        self._journal = journal

    async def run(self, spec: ProcessSpec) -> ProcessOutcome:
        return await self.run_observed(spec, None)

    async def run_between(
        self, before: Callable[[], ProcessSpec], after: Callable[[ProcessOutcome], T]
    ) -> T:
        """``before``, the run and ``after`` in one worker-thread trip (Linux): the thread
        spawns, then waits in ``epoll_wait`` on the pidfd, the pipes and an eventfd through
        which the event loop reports its caller's cancellation (``_OneTrip``)."""
        if not _ONE_TRIP:
            return await run_between_in_trips(self, before, after)
        await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller starts nothing
        trip = _OneTrip(self, before, after)
        try:
            result = await anyio.to_thread.run_sync(trip.work, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            if trip.cancel():  # the work has begun: wait (shielded) until it is all over
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(trip.done.wait)
            raise
        finally:
            trip.close()
        assert not isinstance(result, _Cancelled)  # only a cancelled trip returns one
        return result

    def _run_blocking(self, spec: ProcessSpec, trip: _OneTrip[T]) -> ProcessOutcome | None:
        """``_run_observed`` on a worker thread; None when the caller was cancelled (the
        group is then dead and reaped as on every path)."""
        _check(spec)
        if trip.cancelled:
            return None
        journal = self._journal
        if journal is not None and not journal.prepared:
            try:
                journal.ready()
            except OSError as error:
                return ProcessOutcome(spawn_error=_unrecorded(error))
        spawned = _spawn(spec)
        if isinstance(spawned, ProcessOutcome):
            return spawned
        popen, stdout, stderr = spawned
        leader: GroupLeader | None = None
        record: str | None = None
        try:
            leader = GroupLeader(popen, exit_fd=True)
            record = _admit(journal, leader)
            timed_out, cancelled = _watch_blocking(leader, popen, spec, stdout, stderr, trip.wake)
        except _Unrecorded as unrecorded:  # the group is dead and reaped below
            return ProcessOutcome(spawn_error=str(unrecorded))
        except OSError as error:  # no epoll set to be had (descriptors exhausted)
            return ProcessOutcome(spawn_error=f"cannot watch the process group: {error}")
        finally:
            if leader is None:
                _kill_unadmitted(popen)
            else:
                if not leader.reaped:
                    _ensure_dead_blocking(leader)
                _release(leader, journal, record)
        if cancelled:
            return None
        return _outcome(leader, stdout, stderr, timed_out)

    async def run_observed(
        self, spec: ProcessSpec, observe: SpawnObserver | None
    ) -> ProcessOutcome:
        try:
            return await self._run_observed(spec, observe)
        except _Unrecorded as unrecorded:  # the group is already dead and reaped
            return ProcessOutcome(spawn_error=str(unrecorded))

    async def _run_observed(
        self, spec: ProcessSpec, observe: SpawnObserver | None
    ) -> ProcessOutcome:
        """``run``, first reporting the leader's identity (pid + psutil create time) to
        ``observe``, right after the spawn and before anything is awaited. Should ``observe``
        raise, the group is killed and reaped and its error propagates."""
        _check(spec)
        await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller starts nothing
        journal = self._journal
        if journal is not None and not journal.prepared:
            try:  # the directory first (and, once, the sweep): a spawn must be recordable
                await anyio.to_thread.run_sync(journal.ready)
            except OSError as error:
                return ProcessOutcome(spawn_error=_unrecorded(error))
        spawned = _spawn(spec)
        if isinstance(spawned, ProcessOutcome):
            return spawned
        popen, stdout, stderr = spawned
        timed_out = False
        leader: GroupLeader | None = None
        record: str | None = None
        try:
            leader = GroupLeader(popen, exit_fd=True)
            record = _admit(journal, leader)
            if observe is not None:
                observe(leader.identity)
            _unblock_pipes(popen, spec)
            if leader.pidfd is not None and pipe_pump.AVAILABLE:
                timed_out = await _watch_pumped(leader, popen, spec, stdout, stderr)
            else:
                timed_out = await _watch_with_tasks(leader, popen, spec, stdout, stderr)
        finally:
            if leader is None:
                _kill_unadmitted(popen)
            else:
                if not leader.reaped:
                    with anyio.CancelScope(shield=True):
                        await leader.ensure_dead()
                _release(leader, journal, record)

        return _outcome(leader, stdout, stderr, timed_out)


def _spawn(
    spec: ProcessSpec,
) -> tuple[subprocess.Popen[bytes], _Capture, _Capture] | ProcessOutcome:
    """The leader of a new group and its two captures, or the spawn error."""
    try:
        popen = process_group.spawn(spec)
    except (OSError, ValueError) as error:
        return ProcessOutcome(spawn_error=_spawn_error_message(error))
    stdout = _Capture(spec.capture_limit_bytes, STDOUT, spec.observe_output)
    stderr = _Capture(spec.capture_limit_bytes, STDERR, spec.observe_output)
    return popen, stdout, stderr


def _admit(journal: GroupJournal | None, leader: GroupLeader) -> str | None:
    """The group's journal record (None without a journal); ``_Unrecorded`` if it cannot
    be written: the caller kills the group, never admitted."""
    if journal is None:
        return None
    try:
        return journal.admit(leader.identity)
    except OSError as error:
        raise _Unrecorded(_unrecorded(error)) from None


def _kill_unadmitted(popen: subprocess.Popen[bytes]) -> None:
    """No identity was taken; the child is unreaped, so its group id is still ours."""
    process_group.kill_unadmitted(popen)
    process_group.close_streams(popen)


def _release(leader: GroupLeader, journal: GroupJournal | None, record: str | None) -> None:
    """The group is dead and its leader reaped: its descriptors closed, its lease ended."""
    leader.close()
    if record is not None and journal is not None:
        journal.release(record)


def _unblock_pipes(popen: subprocess.Popen[bytes], spec: ProcessSpec) -> None:
    """The output pipes (and stdin, when there is input) non-blocking; an empty stdin is
    closed at once, no task: still a pipe (not /dev/null)."""
    assert popen.stdin is not None
    assert popen.stdout is not None and popen.stderr is not None
    os.set_blocking(popen.stdout.fileno(), False)
    os.set_blocking(popen.stderr.fileno(), False)
    if spec.stdin:
        os.set_blocking(popen.stdin.fileno(), False)
    else:
        popen.stdin.close()


def _outcome(
    leader: GroupLeader, stdout: _Capture, stderr: _Capture, timed_out: bool
) -> ProcessOutcome:
    exit_code, signum = leader.exit_code_and_signal()
    return ProcessOutcome(
        exit_code=exit_code,
        signal=signum,
        stdout=stdout.take(),
        stderr=stderr.take(),
        stdout_truncated=stdout.truncated,
        stderr_truncated=stderr.truncated,
        timed_out=timed_out,
        streams_held_open=not (stdout.closed and stderr.closed),
    )


async def _watch_pumped(
    leader: GroupLeader,
    popen: subprocess.Popen[bytes],
    spec: ProcessSpec,
    stdout: _Capture,
    stderr: _Capture,
) -> bool:
    """Feed, read and wait for the exit from the caller's task, through one descriptor
    (``pipe_pump``); then kill the group and reap the leader. Whether the deadline passed."""
    assert leader.pidfd is not None and popen.stdout is not None and popen.stderr is not None
    outputs = {popen.stdout.fileno(): stdout.receive, popen.stderr.fileno(): stderr.receive}
    stdin = popen.stdin if spec.stdin else None
    try:
        pump = pipe_pump.PipePump(leader.pidfd, outputs, stdin, spec.stdin)
    except pipe_pump.Unavailable as failed:  # no epoll set (descriptors, watches exhausted)
        # a task per pipe, feeding only what the pump did not write already
        rest = replace(spec, stdin=failed.unwritten)
        return await _watch_with_tasks(leader, popen, rest, stdout, stderr)
    try:
        with anyio.move_on_after(spec.timeout_ms / 1000) as deadline:
            await pump.until_exited()
        if deadline.cancelled_caught:
            await leader.terminate_group(wait=pump.until_exited)
        await leader.kill_group_and_reap()
        if pump.reading:  # only a descendant that left the dead group can hold the pipes
            with anyio.move_on_after(KILL_GRACE_SECONDS):
                await pump.until_closed()
    finally:
        pump.close()
    return deadline.cancelled_caught


async def _watch_with_tasks(
    leader: GroupLeader,
    popen: subprocess.Popen[bytes],
    spec: ProcessSpec,
    stdout: _Capture,
    stderr: _Capture,
) -> bool:
    """``_watch_pumped`` with one task per pipe, where there is no pidfd or epoll."""
    assert popen.stdout is not None and popen.stderr is not None
    stdout_closed, stderr_closed = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as tasks:
        if spec.stdin:
            tasks.start_soon(_feed, popen, spec.stdin)
        tasks.start_soon(_drain, popen.stdout.fileno(), stdout, stdout_closed)
        tasks.start_soon(_drain, popen.stderr.fileno(), stderr, stderr_closed)
        with anyio.move_on_after(spec.timeout_ms / 1000) as deadline:
            await leader.wait_exited()
        if deadline.cancelled_caught:
            await leader.terminate_group()
        await leader.kill_group_and_reap()
        # The group is dead; only a descendant that left it can still hold the pipes.
        with anyio.move_on_after(KILL_GRACE_SECONDS):
            await stdout_closed.wait()
            await stderr_closed.wait()
        tasks.cancel_scope.cancel()
    return deadline.cancelled_caught


# --- one worker-thread trip (``run_between``) ------------------------------------------------


class _Cancelled:
    """What a trip's work returns when its caller was cancelled (nothing to hand back)."""


class _OneTrip(Generic[R]):
    """The shared state of one ``run_between``: the work that runs on the worker thread, and
    the event loop's side of a cancellation.

    A lock orders the two: either the work begins (and the loop, if cancelled afterwards,
    wakes it through ``wake`` and waits for ``done``), or the cancellation comes first (anyio
    may then never start the work, and the loop does not wait for it)."""

    def __init__(
        self,
        runner: PosixProcessRunner,
        before: Callable[[], ProcessSpec],
        after: Callable[[ProcessOutcome], R],
    ) -> None:
        self._runner = runner
        self._before = before
        self._after = after
        self.wake = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        self.done = threading.Event()
        self.cancelled = False
        self._begun = False
        self._lock = threading.Lock()

    def work(self) -> R | _Cancelled:
        with self._lock:
            if self.cancelled:
                return _Cancelled()
            self._begun = True
        try:
            outcome = self._runner._run_blocking(self._before(), self)
            if outcome is None:
                return _Cancelled()
            return self._after(outcome)
        finally:
            self.done.set()

    def cancel(self) -> bool:
        """The caller was cancelled: wake the work; whether it has begun (then wait for it)."""
        with self._lock:
            self.cancelled = True
            begun = self._begun
        if begun:
            os.eventfd_write(self.wake, 1)
        return begun

    def close(self) -> None:
        os.close(self.wake)


def _block_until(
    pump: pipe_pump.PipePump, leader: GroupLeader, done: Callable[[], bool], timeout: float | None
) -> bool:
    """Pump (blocking) until ``done()`` or ``timeout``; whether ``done()`` came first. Without
    a pidfd the leader's exit is looked for between waits of 1 to 50 ms."""
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = _POLL_FIRST_SECONDS
    while True:
        if leader.pidfd is None and not pump.exited and leader.has_exited():
            pump.exited = True
        if done():
            return True
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            return False
        if leader.pidfd is None:
            remaining = delay if remaining is None else min(delay, remaining)
            delay = min(delay * 2, _POLL_MAX_SECONDS)
        pump.block(remaining)


def _watch_blocking(
    leader: GroupLeader,
    popen: subprocess.Popen[bytes],
    spec: ProcessSpec,
    stdout: _Capture,
    stderr: _Capture,
    wake: int,
) -> tuple[bool, bool]:
    """``_watch_pumped`` on a worker thread, ``wake`` in the set: (whether the deadline
    passed, whether the caller was cancelled). Either ends the group as ``run`` does: SIGTERM,
    the grace period, SIGKILL, the reap."""
    assert popen.stdout is not None and popen.stderr is not None
    _unblock_pipes(popen, spec)
    outputs = {popen.stdout.fileno(): stdout.receive, popen.stderr.fileno(): stderr.receive}
    stdin = popen.stdin if spec.stdin else None
    pump = pipe_pump.PipePump(leader.pidfd, outputs, stdin, spec.stdin, wake=wake)
    try:
        ended = _block_until(
            pump, leader, lambda: pump.exited or pump.woken, spec.timeout_ms / 1000
        )
        timed_out = not ended
        if timed_out or pump.woken:
            leader.signal_group(signal.SIGTERM)
            _block_until(pump, leader, lambda: pump.exited, KILL_GRACE_SECONDS)
        leader.signal_group(signal.SIGKILL)
        _block_until(pump, leader, lambda: pump.exited, None)
        leader.reap()
        if pump.reading and not pump.woken:  # only a descendant that left the group
            _block_until(pump, leader, lambda: not pump.reading, KILL_GRACE_SECONDS)
    finally:
        pump.close()
    return timed_out, pump.woken


def _ensure_dead_blocking(leader: GroupLeader) -> None:
    """The cleanup path on a worker thread (an error before or while watching): SIGTERM,
    the grace period, SIGKILL, reap, as ``GroupLeader.ensure_dead`` does on the loop."""
    if not leader.has_exited():
        leader.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + KILL_GRACE_SECONDS
        delay = _POLL_FIRST_SECONDS
        while not leader.has_exited() and time.monotonic() < deadline:
            time.sleep(delay)
            delay = min(delay * 2, _POLL_MAX_SECONDS)
    leader.signal_group(signal.SIGKILL)
    while not leader.has_exited():
        time.sleep(_POLL_FIRST_SECONDS)
    leader.reap()
