"""POSIX tool-session processes: a long-lived harness leading its own process group.

How a session process goes:

1. ``start`` spawns the program exactly like ``PosixProcessRunner`` (no shell, explicit argv,
   cwd and complete environment, leader of a new session so its pid is its group id) and
   reports the leader's identity (pid + psutil start time) to ``observe`` before anything
   is awaited, so the caller can journal the group before admitting it.
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
import signal
import subprocess
import threading
from collections.abc import Callable

import anyio
import anyio.lowlevel
import psutil

from adapters.posix import process as posix_process
from adapters.posix.process import PosixProcessRunner
from adapters.posix.process_status import exited_unreaped
from ports.process import ProcessOutcome, ProcessSpec
from ports.sessions import ProcessIdentity, SpawnObserver

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
# Waiting for thread-side state, back off between these two intervals.
_POLL_FIRST_SECONDS = 0.001
_POLL_MAX_SECONDS = 0.05


async def _poll_until(condition: Callable[[], bool], timeout: float | None = None) -> bool:
    """Sleep with backoff until ``condition()`` holds; False if ``timeout`` passed first."""
    deadline = None if timeout is None else anyio.current_time() + timeout
    delay = _POLL_FIRST_SECONDS
    while not condition():
        if deadline is not None and anyio.current_time() >= deadline:
            return False
        await anyio.sleep(delay)
        delay = min(delay * 2, _POLL_MAX_SECONDS)
    return True


def _live_group_members(pgid: int) -> list[int]:
    """Pids of the processes in group ``pgid`` that are not zombies."""
    members = []
    for pid in psutil.pids():
        try:
            if os.getpgid(pid) == pgid and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                members.append(pid)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
        except psutil.AccessDenied:
            members.append(pid)  # cannot tell: never report the group gone on a guess
    return members


class _Leader:
    """The spawned group leader: identity, exit (without reaping), group signals, reaping.

    Thread-safe: a lock orders signals, exit checks and the reap, so no signal follows the
    reap (after which the group id may belong to someone else)."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid
        # Taken while the child is unreaped, so this identity (pid + create time) is ours.
        self.process = psutil.Process(self.pid)
        self.identity = ProcessIdentity(self.pid, self.process.create_time())
        self.reaped = False
        self._lock = threading.Lock()

    def has_exited(self) -> bool:
        with self._lock:
            return self._has_exited()

    def _has_exited(self) -> bool:
        return self.reaped or exited_unreaped(self.pid, self.process)

    def _pid_reused(self) -> bool:
        """Someone else reaped the leader and its pid now names another process: our group
        is empty (the kernel does not reuse a pid still in use as a group id)."""
        return not self.process.is_running() and psutil.pid_exists(self.pid)

    def kill_group(self) -> None:
        """SIGKILL every process of the group, unless the group id may no longer be ours."""
        with self._lock:
            if self.reaped or self._pid_reused():
                return
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)

    def group_gone(self) -> bool:
        """The leader has exited and no live member of its group is left."""
        with self._lock:
            if not self._has_exited():
                return False
            if self.reaped or self._pid_reused():
                return True
            return not _live_group_members(self.pid)

    def reap(self) -> None:
        """Collect the exited leader; from here on its pid, and the group id, are released."""
        with self._lock:
            if self.reaped:
                return
            self.reaped = True
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:
                self.popen.returncode = -1  # reaped elsewhere: the status is lost
                return
            self.popen.returncode = os.waitstatus_to_exitcode(status)


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

    def __init__(self, leader: _Leader, pipes: _Pipes) -> None:
        self._leader = leader
        self._pipes = pipes
        self._confirmed = False

    @property
    def identity(self) -> ProcessIdentity:
        return self._leader.identity

    async def ready_line(self) -> bytes | None:
        await _poll_until(self._pipes.resolved.is_set)
        return self._pipes.line

    async def wait_exit(self) -> None:
        await _poll_until(self._leader.has_exited)

    def has_exited(self) -> bool:
        return self._leader.has_exited()

    async def kill_group(self) -> bool:
        """SIGKILL the group (again, for members forked meanwhile) until the leader has exited
        and no member is left, for at most ``KILL_CONFIRM_SECONDS``; then reap the leader and
        stop the pipe thread. Unconfirmed, the leader stays unreaped, pinning the group id
        for a later attempt. True once confirmed, and on every later call."""
        if self._confirmed:
            return True

        def signalled_and_gone() -> bool:
            if self._leader.group_gone():
                return True
            self._leader.kill_group()
            return False

        confirmed = await _poll_until(signalled_and_gone, KILL_CONFIRM_SECONDS)
        if confirmed:
            self._leader.reap()
        self._pipes.stop()
        await _poll_until(lambda: not self._pipes.is_alive(), _PIPES_STOP_SECONDS)
        self._confirmed = confirmed
        return confirmed


def _kill_failed_start(popen: subprocess.Popen[bytes]) -> None:
    """Kill a group whose start failed after the spawn; the unreaped leader pins its id."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(popen.pid, signal.SIGKILL)
    popen.wait()


class PosixProcessLauncher:
    """``ProcessLauncher`` for POSIX systems."""

    def __init__(self, runner: PosixProcessRunner | None = None) -> None:
        self._runner = runner if runner is not None else PosixProcessRunner()

    async def start(self, spec: ProcessSpec, observe: SpawnObserver) -> PosixRunningProcess:
        if not spec.argv:
            raise ValueError("argv must name a program")
        await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller starts nothing
        try:
            popen = posix_process._spawn(spec)
        except ValueError as error:  # e.g. a NUL byte in an argument
            raise OSError(errno.EINVAL, str(error)) from error
        pipes: _Pipes | None = None
        try:
            leader = _Leader(popen)
            observe(leader.identity)
            pipes = _Pipes(popen, spec.stdin, leader.has_exited)
            pipes.start()
        except BaseException:
            _kill_failed_start(popen)
            if pipes is not None and pipes.is_alive():
                pipes.stop()
            else:
                for stream in (popen.stdin, popen.stdout, popen.stderr):
                    if stream is not None:
                        with contextlib.suppress(OSError):
                            stream.close()
            raise
        return PosixRunningProcess(leader, pipes)

    async def run_observed(self, spec: ProcessSpec, observe: SpawnObserver) -> ProcessOutcome:
        return await self._runner.run_observed(spec, observe)
