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
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel

from artifactize.adapters.posix import pipe_pump, process_group
from artifactize.adapters.posix.group_journal import GroupJournal
from artifactize.adapters.posix.process_group import KILL_GRACE_SECONDS, GroupLeader
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
        try:
            popen = process_group.spawn(spec)
        except (OSError, ValueError) as error:
            return ProcessOutcome(spawn_error=_spawn_error_message(error))

        stdout = _Capture(spec.capture_limit_bytes, STDOUT, spec.observe_output)
        stderr = _Capture(spec.capture_limit_bytes, STDERR, spec.observe_output)
        timed_out = False
        leader: GroupLeader | None = None
        record: str | None = None
        try:
            leader = GroupLeader(popen, exit_fd=True)
            if journal is not None:
                try:
                    record = journal.admit(leader.identity)
                except OSError as error:
                    raise _Unrecorded(_unrecorded(error)) from None
            if observe is not None:
                observe(leader.identity)
            assert popen.stdin is not None
            assert popen.stdout is not None and popen.stderr is not None
            os.set_blocking(popen.stdout.fileno(), False)
            os.set_blocking(popen.stderr.fileno(), False)
            if spec.stdin:
                os.set_blocking(popen.stdin.fileno(), False)
            else:  # empty stdin: closed at once, no task; still a pipe (not /dev/null)
                popen.stdin.close()
            if leader.pidfd is not None and pipe_pump.AVAILABLE:
                timed_out = await _watch_pumped(leader, popen, spec, stdout, stderr)
            else:
                timed_out = await _watch_with_tasks(leader, popen, spec, stdout, stderr)
        finally:
            if leader is None:
                # No identity was taken; the child is unreaped, so its group id is still ours.
                process_group.kill_unadmitted(popen)
                process_group.close_streams(popen)
            else:
                if not leader.reaped:
                    with anyio.CancelScope(shield=True):
                        await leader.ensure_dead()
                leader.close()
                if record is not None and journal is not None:
                    journal.release(record)  # the group is dead: the lease ends

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
    except OSError:  # no epoll set to be had (descriptors exhausted): a task per pipe
        return await _watch_with_tasks(leader, popen, spec, stdout, stderr)
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
