"""POSIX tool-session processes: a long-lived harness leading its own process group.

How a session process goes:

1. ``start`` spawns the program exactly like ``PosixProcessRunner`` (``process_group``:
   no shell, explicit argv, cwd and complete environment, leader of a new session so its
   pid is its group id) and reports the leader's identity (pid + psutil start time) to
   ``observe`` before anything is awaited, so the caller can journal the group before
   admitting it.
2. One daemon thread per process owns the three pipes: it writes ``spec.stdin`` and closes
   stdin, keeps the first stdout line (up to ``READY_LINE_LIMIT`` bytes) for ``ready_line``,
   and reads and discards everything else on stdout and stderr, before and after readiness,
   so the harness never blocks on a full pipe. The thread closes the pipes itself when they
   all reached EOF or when ``kill_group`` stops it.
3. The leader's exit is observed *without reaping it* (``waitid(WNOWAIT)``), so its pid, and
   with it the group id, stays ours until ``kill_group`` has confirmed that no member of the
   group is left. Only then is the leader reaped.

Nothing is bound to one event loop: the awaitable methods poll thread-safe state with
``anyio.sleep`` backoff, so a process started from one loop may be waited for or killed from
another thread's loop (the domain runs cleanup on its own executor). ``kill_group`` may be
called concurrently and repeatedly.

Before any signal, the leader's saved psutil identity is checked, so a pid that something
else reaped and the kernel reused is never signalled. Descendants that leave the group
themselves (``setsid`` daemons) escape cleanup; commands are trusted.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import subprocess
import threading
from collections.abc import Callable

import anyio.lowlevel

from artifactize.adapters.posix import process_group
from artifactize.adapters.posix.process import PosixProcessRunner
from artifactize.adapters.posix.process_group import GroupLeader, poll_until
from artifactize.ports.process import ProcessOutcome, ProcessSpec
from artifactize.ports.sessions import ProcessIdentity, SpawnObserver

__all__ = [
    "KILL_CONFIRM_SECONDS",
    "READY_LINE_LIMIT",
    "PosixProcessLauncher",
    "PosixRunningProcess",
]

# The readiness line is kept up to this many bytes (its content is ignored); the rest of an
# overlong line is read and dropped until its newline.
READY_LINE_LIMIT = 64 * 1024
# How long ``kill_group`` waits, after SIGKILL, for the leader and every member to die.
KILL_CONFIRM_SECONDS = 5.0
# How long ``kill_group`` waits for the pipe thread to notice it must stop.
_PIPES_STOP_SECONDS = 1.0

_READ_CHUNK = 64 * 1024
# After the leader's exit, this many reads cover the largest pipe (1 MiB by default on Linux).
_EXIT_DRAIN_READS = 32
_WRITE_CHUNK = 64 * 1024
# The pipe thread wakes at least this often to check for a stop request or the leader's exit.
_PIPES_TICK_SECONDS = 0.05


class _Pipes:
    """One daemon thread: feeds stdin, catches the readiness line, discards all other output.

    The thread owns the pipe descriptors and closes them when it ends: at EOF on stdout and
    stderr once stdin is written, or as soon as ``stop`` is called (within one tick)."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: bytes,
        leader_exited: Callable[[], bool],
    ) -> None:
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        self._streams = (popen.stdin, popen.stdout, popen.stderr)
        self._stdin_fd, self._stdout_fd, self._stderr_fd = (s.fileno() for s in self._streams)
        self._pending = memoryview(stdin)
        self._leader_exited = leader_exited
        self._line = bytearray()
        self._stop = threading.Event()
        self.resolved = threading.Event()
        self.line: bytes | None = None
        self._thread = threading.Thread(
            target=self._run, name=f"artifactize-session-pipes-{popen.pid}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def _resolve(self, line: bytes | None) -> None:
        if not self.resolved.is_set():
            self.line = line
            self.resolved.set()

    def _take(self, chunk: bytes) -> None:
        """A stdout chunk: part of the readiness line until its newline, then discarded."""
        if self.resolved.is_set():
            return
        end = chunk.find(b"\n")
        part = chunk if end < 0 else chunk[:end]
        room = READY_LINE_LIMIT - len(self._line)
        if room > 0:
            self._line += part[:room]
        if end >= 0:
            self._resolve(bytes(self._line) + b"\n")
            self._line = bytearray()

    def _read(self, fd: int) -> bool:
        """Read what is available on ``fd``; False at EOF."""
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not chunk:
            return False
        if fd == self._stdout_fd:
            self._take(chunk)
        return True

    def _write(self) -> bool:
        """Write the next stdin chunk; False when all is written or the child stopped reading."""
        try:
            written = os.write(self._stdin_fd, self._pending[:_WRITE_CHUNK])
        except BlockingIOError:
            return True
        except OSError:  # EPIPE: the child closed stdin or exited without reading it all
            return False
        self._pending = self._pending[written:]
        return bool(self._pending)

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        open_streams = {s.fileno(): s for s in self._streams}
        stdin_fd, stdout_fd = self._stdin_fd, self._stdout_fd

        def close(fd: int) -> None:
            with contextlib.suppress(KeyError, ValueError):
                selector.unregister(fd)
            with contextlib.suppress(OSError):
                open_streams.pop(fd).close()

        try:
            for fd in open_streams:
                os.set_blocking(fd, False)
            if self._pending:
                selector.register(stdin_fd, selectors.EVENT_WRITE)
            else:
                close(stdin_fd)
            selector.register(stdout_fd, selectors.EVENT_READ)
            selector.register(self._stderr_fd, selectors.EVENT_READ)
            while open_streams and not self._stop.is_set():
                for key, _ in selector.select(_PIPES_TICK_SECONDS):
                    fd = key.fd
                    keep = self._write() if fd == stdin_fd else self._read(fd)
                    if not keep:
                        close(fd)
                if self.resolved.is_set():
                    continue
                if stdout_fd not in open_streams:
                    self._resolve(None)  # stdout closed before a newline
                elif self._leader_exited():
                    # All the leader wrote is in the pipe now (at most a pipe's capacity):
                    # read it, then decide. A descendant still writing cannot keep us here.
                    for _ in range(_EXIT_DRAIN_READS):
                        if stdout_fd not in open_streams or self.resolved.is_set():
                            break
                        try:
                            chunk = os.read(stdout_fd, _READ_CHUNK)
                        except (BlockingIOError, OSError):
                            break
                        if not chunk:
                            close(stdout_fd)
                        self._take(chunk)
                    self._resolve(None)
        finally:
            for fd in list(open_streams):
                close(fd)
            selector.close()
            self._resolve(None)


class PosixRunningProcess:
    """A started harness (``RunningProcess``); see the module docstring."""

    def __init__(self, leader: GroupLeader, pipes: _Pipes) -> None:
        self._leader = leader
        self._pipes = pipes
        self._confirmed = False

    @property
    def identity(self) -> ProcessIdentity:
        return self._leader.identity

    async def ready_line(self) -> bytes | None:
        await poll_until(self._pipes.resolved.is_set)
        return self._pipes.line

    async def wait_exit(self) -> None:
        await self._leader.wait_exited()  # polled: no pidfd, so bound to no event loop

    def has_exited(self) -> bool:
        return self._leader.has_exited()

    async def kill_group(self) -> bool:
        """SIGKILL the group (again, for members forked meanwhile) until the leader has exited
        and no member is left, for at most ``KILL_CONFIRM_SECONDS``; then reap the leader and
        stop the pipe thread. Unconfirmed, the leader stays unreaped, pinning the group id
        for a later attempt. True once confirmed, and on every later call."""
        if self._confirmed:
            return True
        confirmed = await self._leader.kill_until_gone(KILL_CONFIRM_SECONDS)
        self._pipes.stop()
        await poll_until(lambda: not self._pipes.is_alive(), _PIPES_STOP_SECONDS)
        self._confirmed = confirmed
        return confirmed


class PosixProcessLauncher:
    """``ProcessLauncher`` for POSIX systems."""

    def __init__(self, runner: PosixProcessRunner | None = None) -> None:
        self._runner = runner if runner is not None else PosixProcessRunner()

    async def start(self, spec: ProcessSpec, observe: SpawnObserver) -> PosixRunningProcess:
        if not spec.argv:
            raise ValueError("argv must name a program")
        await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller starts nothing
        try:
            popen = process_group.spawn(spec)
        except ValueError as error:  # e.g. a NUL byte in an argument
            raise OSError(errno.EINVAL, str(error)) from error
        pipes: _Pipes | None = None
        try:
            leader = GroupLeader(popen)
            observe(leader.identity)
            pipes = _Pipes(popen, spec.stdin, leader.has_exited)
            pipes.start()
        except BaseException:
            process_group.kill_unadmitted(popen)  # the unreaped leader pins its group id
            if pipes is not None and pipes.is_alive():
                pipes.stop()
            else:
                process_group.close_streams(popen)
            raise
        return PosixRunningProcess(leader, pipes)

    async def run_observed(self, spec: ProcessSpec, observe: SpawnObserver) -> ProcessOutcome:
        return await self._runner.run_observed(spec, observe)
