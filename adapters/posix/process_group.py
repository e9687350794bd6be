"""What the POSIX process adapters share: the spawn, and the leader of a process group.

Both ``PosixProcessRunner`` (a run with a deadline) and ``PosixProcessLauncher`` (a tool
session's harness) start a program without a shell (explicit argv, cwd and the complete
environment, nothing inherited) as the leader of a new session, so its pid is also its
process-group id, and keep that pid ours until the group is dealt with:

- the leader's exit is observed *without reaping it* (a pidfd when the runner asks for one,
  else ``waitid(WNOWAIT)`` polling with backoff). While it is an unreaped zombie its pid,
  and with it the group id, cannot be reused, so signalling the group is safe;
- before any signal the saved identity (pid + psutil's start time) is checked, so a pid that
  something else reaped and the kernel reused is never signalled;
- only then is the leader reaped; no signal ever follows the reap.

``GroupLeader`` is thread-safe (a lock orders signals, exit checks and the reap) and its
polling waits are bound to no event loop, so a session's group may be killed from another
thread's loop than the one that started it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Awaitable, Callable

import anyio
import psutil

from artifactize.adapters.posix.process_status import HAS_WAITID, exited_unreaped, still_our_child
from artifactize.adapters.posix.start_time import start_time
from artifactize.ports.process import ProcessSpec
from artifactize.ports.sessions import ProcessIdentity

__all__ = [
    "KILL_GRACE_SECONDS",
    "GroupLeader",
    "close_streams",
    "kill_unadmitted",
    "live_group_members",
    "poll_until",
    "spawn",
]

# After SIGTERM: how long the leader may take to exit before SIGKILL.
KILL_GRACE_SECONDS = 1.0
# Waiting for a condition (an exit without a pidfd), back off between these two intervals.
_POLL_FIRST_SECONDS = 0.001
_POLL_MAX_SECONDS = 0.05


def spawn(spec: ProcessSpec) -> subprocess.Popen[bytes]:
    """Start the leader of a new session (pgid == sid == pid); raises OSError or ValueError."""
    return subprocess.Popen(
        list(spec.argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
        cwd=spec.cwd,
        env=dict(spec.env),
        start_new_session=True,
        close_fds=True,
    )


def close_streams(popen: subprocess.Popen[bytes]) -> None:
    for stream in (popen.stdin, popen.stdout, popen.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def kill_unadmitted(popen: subprocess.Popen[bytes]) -> None:
    """Kill and reap a group whose leader was never admitted (no ``GroupLeader`` took its
    identity, or its start failed right after): the unreaped leader still pins the id."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(popen.pid, signal.SIGKILL)
    popen.wait()


async def poll_until(condition: Callable[[], bool], timeout: float | None = None) -> bool:
    """Sleep with backoff until ``condition()`` holds; False if ``timeout`` passed first."""
    deadline = None if timeout is None else anyio.current_time() + timeout
    delay = _POLL_FIRST_SECONDS
    while not condition():
        if deadline is not None and anyio.current_time() >= deadline:
            return False
        await anyio.sleep(delay)
        delay = min(delay * 2, _POLL_MAX_SECONDS)
    return True


def live_group_members(pgid: int) -> list[int]:
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


def _open_pidfd(pid: int) -> int | None:
    """A descriptor that turns readable when ``pid`` exits (Linux ≥ 5.3); None elsewhere."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(pid)
    except OSError:
        return None
    return fd


class GroupLeader:
    """The spawned group leader: identity, exit (without reaping), group signals, reaping.

    ``exit_fd``: watch the exit through a pidfd where there is one (the waits are then
    bound to the event loop that awaits them; without it they poll and are bound to none).
    """

    def __init__(self, popen: subprocess.Popen[bytes], *, exit_fd: bool = False) -> None:
        self.popen = popen
        self.pid = popen.pid
        # Taken while the child is unreaped, so this identity (pid + start time) is ours; the
        # start time is psutil's create time, read without psutil on Linux (``start_time``).
        created = start_time(self.pid)
        if created is None:
            raise ProcessLookupError(f"process {self.pid} vanished before it was reaped")
        self.identity = ProcessIdentity(self.pid, created)
        # A psutil handle only where there is no ``waitid`` to see the exit (macOS).
        self.process = None if HAS_WAITID else psutil.Process(self.pid)
        self.pidfd = _open_pidfd(self.pid) if exit_fd else None
        self.status: int | None = None
        self.reaped = False
        self.terminated_at: float | None = None
        self._lock = threading.Lock()

    # --- exit, signals, reaping (synchronous, thread-safe) ------------------------------

    def has_exited(self) -> bool:
        """Whether the leader has exited; it stays unreaped (a zombie) so its pid stays ours."""
        with self._lock:
            return self._has_exited()

    def _has_exited(self) -> bool:
        return self.reaped or exited_unreaped(self.pid, self.process)

    def _pid_reused(self) -> bool:
        """Someone else reaped the leader and its pid now names another process: our group
        is empty (the kernel does not reuse a pid still in use as a group id). If the pid is
        free, members may remain and the group id is still theirs."""
        if still_our_child(self.pid):
            return False  # running or an unreaped zombie of ours: the pid is pinned
        now = start_time(self.pid)
        return now is not None and now != self.identity.create_time

    def signal_group(self, signum: signal.Signals) -> None:
        """Signal every process of the group, unless the group id may no longer be ours."""
        with self._lock:
            if self.reaped or self._pid_reused():
                return  # after reaping, the group id may already belong to someone else
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signum)

    def group_gone(self) -> bool:
        """The leader has exited and no live member of its group is left."""
        with self._lock:
            if not self._has_exited():
                return False
            if self.reaped or self._pid_reused():
                return True
            return not live_group_members(self.pid)

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
            self.status = status
            self.popen.returncode = os.waitstatus_to_exitcode(status)

    def exit_code_and_signal(self) -> tuple[int | None, int | None]:
        if self.status is None:
            return None, None
        if os.WIFSIGNALED(self.status):
            return None, os.WTERMSIG(self.status)
        if os.WIFEXITED(self.status):
            return os.WEXITSTATUS(self.status), None
        return None, None

    # --- waits and kill sequences -------------------------------------------------------

    async def wait_exited(self) -> None:
        if self.pidfd is not None:
            while not self.has_exited():
                await anyio.wait_readable(self.pidfd)
            return
        await poll_until(self.has_exited)

    async def terminate_group(
        self,
        grace_seconds: float = KILL_GRACE_SECONDS,
        wait: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """SIGTERM the group (once), then give the leader up to the grace period to exit
        (``wait``: how to wait for that, ``wait_exited`` unless given)."""
        if self.terminated_at is None:
            self.terminated_at = anyio.current_time()
            self.signal_group(signal.SIGTERM)
        remaining = self.terminated_at + grace_seconds - anyio.current_time()
        with anyio.move_on_after(max(remaining, 0.0)):
            await (wait or self.wait_exited)()

    async def kill_group_and_reap(self) -> None:
        """SIGKILL the group while the leader's pid is still pinned, then reap the leader."""
        self.signal_group(signal.SIGKILL)
        await self.wait_exited()
        self.reap()

    async def ensure_dead(self, grace_seconds: float = KILL_GRACE_SECONDS) -> None:
        """The cleanup path: SIGTERM, grace, SIGKILL, reap; a no-op once reaped."""
        if self.reaped:
            return
        if not self.has_exited():
            await self.terminate_group(grace_seconds)
        await self.kill_group_and_reap()

    async def kill_until_gone(self, timeout: float) -> bool:
        """SIGKILL the group (again, for members forked meanwhile) until the leader has
        exited and no member is left, for at most ``timeout`` seconds; then reap the leader.
        Unconfirmed, the leader stays unreaped, pinning the group id for a later attempt."""

        def signalled_and_gone() -> bool:
            if self.group_gone():
                return True
            self.signal_group(signal.SIGKILL)
            return False

        confirmed = await poll_until(signalled_and_gone, timeout)
        if confirmed:
            self.reap()
        return confirmed

    def close(self) -> None:
        """Release the pidfd and the pipes."""
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        close_streams(self.popen)
