"""Windows tool-session processes: a long-lived harness in its own kill-on-close Job.

How a session process goes (the Windows counterpart of ``adapters/posix/session_process.py``):

1. ``start`` creates the harness suspended, reports its identity to ``observe`` (the session
   journals it) while it has not yet run, puts it in a Job named after that identity and
   resumes it (``spawn``).
2. Three daemon threads own the pipes: one writes ``spec.stdin`` and closes stdin, one keeps
   the first stdout line (up to ``READY_LINE_LIMIT`` bytes) for ``ready_line`` and discards
   the rest, one discards stderr, so the harness never blocks on a full pipe. Each closes its
   pipe at EOF, which comes when every process of the Job is gone.
3. ``kill_group`` terminates the Job and waits until no process of it is left, for at most
   ``JOB_TERMINATION_BOUND_SECONDS`` (seed 000: "Windows cleanup waits for all Job
   descendants, with a separate internal 30-second termination bound"); unconfirmed, the Job
   handle stays open so a later call can try again. Confirmed, the handle is closed.

Nothing is bound to one event loop: the awaitable methods poll thread-safe state with
``anyio.sleep`` backoff, so a process started from one loop may be killed from another.
"""

from __future__ import annotations

import anyio.lowlevel

from artifactize.adapters.windows.job import JOB_TERMINATION_BOUND_SECONDS
from artifactize.adapters.windows.pipes import ReadyLinePipes
from artifactize.adapters.windows.process import WindowsProcessRunner, poll_until
from artifactize.adapters.windows.spawn import JobChild, spawn_in_job
from artifactize.ports.process import ProcessOutcome, ProcessSpec
from artifactize.ports.sessions import ProcessIdentity, SpawnObserver

__all__ = ["EXIT_DRAIN_SECONDS", "WindowsProcessLauncher", "WindowsRunningProcess"]

# After the harness exited without a readiness line, how long its last output may take to
# be read from the pipe.
EXIT_DRAIN_SECONDS = 0.5


class WindowsRunningProcess:
    """A started harness (``RunningProcess``); see the module docstring."""

    def __init__(self, child: JobChild, pipes: ReadyLinePipes, bound_seconds: float) -> None:
        self._child = child
        self._pipes = pipes
        self._bound = bound_seconds
        self._confirmed = False

    @property
    def identity(self) -> ProcessIdentity:
        return self._child.identity

    async def ready_line(self) -> bytes | None:
        """The first stdout line, or None when the harness exited (or closed stdout) first.
        After its exit, what it wrote is read for up to ``EXIT_DRAIN_SECONDS``: a descendant
        still holding stdout open cannot keep the answer waiting."""
        resolved = self._pipes.resolved
        await poll_until(lambda: resolved.is_set() or self.has_exited())
        if not resolved.is_set():
            await poll_until(resolved.is_set, EXIT_DRAIN_SECONDS)
        return self._pipes.line if resolved.is_set() else None

    def has_exited(self) -> bool:
        return self._child.popen.poll() is not None

    async def wait_exit(self) -> None:
        await poll_until(self.has_exited)

    async def kill_group(self) -> bool:
        """End the Job and confirm that none of its processes is left (bounded)."""
        if self._confirmed:
            return True
        job = self._child.job
        job.terminate()
        if not await poll_until(job.is_empty, self._bound):
            return False
        job.close()
        self._child.popen.wait()
        self._confirmed = True
        return True


class WindowsProcessLauncher:
    """``ProcessLauncher`` for Windows (Job objects)."""

    def __init__(
        self,
        runner: WindowsProcessRunner | None = None,
        termination_bound_seconds: float = JOB_TERMINATION_BOUND_SECONDS,
    ) -> None:
        self._runner = runner if runner is not None else WindowsProcessRunner()
        self._bound = termination_bound_seconds

    async def start(self, spec: ProcessSpec, observe: SpawnObserver) -> WindowsRunningProcess:
        if not spec.argv:
            raise ValueError("argv must name a program")
        await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller starts nothing
        try:
            child = spawn_in_job(spec, observe)
        except ValueError as error:  # a NUL byte, an argument cmd.exe cannot take
            raise OSError(str(error)) from error
        pipes = ReadyLinePipes(child.popen, spec.stdin)
        pipes.start()
        return WindowsRunningProcess(child, pipes, self._bound)

    async def run_observed(self, spec: ProcessSpec, observe: SpawnObserver) -> ProcessOutcome:
        return await self._runner.run_observed(spec, observe)
