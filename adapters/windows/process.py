"""Windows process adapter: one program in its own kill-on-close Job, a deadline, bounded output.

How a run goes (the Windows counterpart of ``adapters/posix/process.py``):

1. The program starts suspended, is assigned to a fresh Job with kill-on-close, then resumed
   (``spawn``), so no descendant can escape the Job. ``run_observed`` then reports the
   child's identity (pid + start time) to its caller.
2. stdin receives ``spec.stdin`` and is closed; stdout and stderr are read concurrently, each
   kept up to ``spec.capture_limit_bytes`` with the excess read and discarded, every chunk
   shown to ``spec.observe_output``. Windows pipes cannot be polled, so each read is a
   blocking ``ReadFile`` in a worker thread; the capture and the observer run in the caller's
   event loop, exactly as on POSIX.
3. After the child exits, the Job is terminated right away (background descendants do not
   survive); on deadline or cancellation likewise, at once (Windows has no SIGTERM to send
   first). Then every process of the Job must be gone, waited for up to
   ``JOB_TERMINATION_BOUND_SECONDS``.
4. The pipes are read for at most ``PIPE_GRACE_SECONDS`` more. Nothing in the Job can hold
   them now; a process outside it that was handed a copy could, and cannot make us hang.

Cleanup runs in a shielded ``finally``, so the caller's cancellation always reaches the
Job. Closing the Job's handle would end it anyway (kill-on-close), even if artifactize died.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import IO, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

from artifactize.adapters.process_trips import run_between_in_trips
from artifactize.adapters.windows.command_line import UnsafeArguments
from artifactize.adapters.windows.job import JOB_TERMINATION_BOUND_SECONDS, Job
from artifactize.adapters.windows.spawn import JobChild, spawn_in_job
from artifactize.ports.process import (
    CAPTURE_LIMIT_BYTES,
    STDERR,
    STDOUT,
    OutputObserver,
    ProcessOutcome,
    ProcessSpec,
)
from artifactize.ports.sessions import SpawnObserver

T = TypeVar("T")

__all__ = [
    "CAPTURE_LIMIT_BYTES",
    "JOB_TERMINATION_BOUND_SECONDS",
    "PIPE_GRACE_SECONDS",
    "TIMEOUT_MS_MAX",
    "WindowsProcessRunner",
    "poll_until",
]

TIMEOUT_MS_MAX = 2_147_483_647
# After the Job is empty, how long the pipes may stay open before we stop reading.
PIPE_GRACE_SECONDS = 1.0
_READ_CHUNK = 64 * 1024
_WRITE_CHUNK = 64 * 1024
_POLL_FIRST_SECONDS = 0.001
_POLL_MAX_SECONDS = 0.05


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


def _spawn_error_message(error: OSError | ValueError) -> str:
    if isinstance(error, OSError) and error.strerror:
        if error.filename is not None:
            return f"{error.strerror}: {os.fsdecode(error.filename)}"
        return error.strerror
    return str(error)


def _check(spec: ProcessSpec) -> None:
    if not spec.argv:
        raise ValueError("argv must name a program")
    if not 1 <= spec.timeout_ms <= TIMEOUT_MS_MAX:
        raise ValueError(f"timeout_ms must be from 1 to {TIMEOUT_MS_MAX}, got {spec.timeout_ms}")
    if spec.capture_limit_bytes < 0:
        raise ValueError(f"capture_limit_bytes must not be negative: {spec.capture_limit_bytes}")


class _Capture:
    """One output stream: the kept prefix, whether anything was dropped, whether EOF came."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.truncated = False
        self.closed = False

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        if len(chunk) > room:
            self.truncated = True

    def take(self) -> bytes:
        data = bytes(self.data)
        self.data = bytearray()
        return data


async def _drain(
    stream: IO[bytes], capture: _Capture, name: str, observe: OutputObserver | None
) -> None:
    """Read ``stream`` to EOF in worker threads; the stream is closed here once EOF came."""
    while True:
        chunk = await anyio.to_thread.run_sync(stream.read, _READ_CHUNK, abandon_on_cancel=True)
        if not chunk:
            capture.closed = True
            with contextlib.suppress(OSError):
                stream.close()
            return
        capture.add(chunk)
        if observe is not None:
            observe(name, chunk)


def _feed(stream: IO[bytes], data: bytes) -> None:
    """Write ``data`` to the child's stdin, then close it (a thread of its own: a child that
    never reads cannot block the run; once it is gone the write fails and the thread ends)."""
    view = memoryview(data)
    try:
        while view:
            view = view[stream.write(view[:_WRITE_CHUNK]) or 0 :]
    except OSError:
        pass  # the child closed stdin or exited without reading it all
    finally:
        with contextlib.suppress(OSError):
            stream.close()


def _close_in_background(streams: list[IO[bytes]]) -> None:
    """Close pipes that a worker thread may still be reading; the C runtime serialises a
    close with a pending read, so this happens off the caller's path."""

    def close_all() -> None:
        for stream in streams:
            with contextlib.suppress(OSError):
                stream.close()

    threading.Thread(target=close_all, name="artifactize-close-pipes", daemon=True).start()


async def end_job(job: Job, timeout: float = JOB_TERMINATION_BOUND_SECONDS) -> bool:
    """Terminate every process of ``job`` and wait (bounded) until none is left."""
    job.terminate()
    return await poll_until(job.is_empty, timeout)


class WindowsProcessRunner:
    """``ProcessRunner`` for Windows (Job objects); see the module docstring."""

    async def run(self, spec: ProcessSpec) -> ProcessOutcome:
        return await self.run_observed(spec, None)

    async def run_between(
        self, before: Callable[[], ProcessSpec], after: Callable[[ProcessOutcome], T]
    ) -> T:
        return await run_between_in_trips(self, before, after)

    async def run_observed(
        self, spec: ProcessSpec, observe: SpawnObserver | None
    ) -> ProcessOutcome:
        """``run``, first reporting the child's identity to ``observe`` (while it is still
        suspended). Should ``observe`` raise, the child is ended before it ran and the error
        propagates."""
        _check(spec)
        await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller starts nothing
        try:
            child = spawn_in_job(spec, observe)
        except UnsafeArguments as error:
            return ProcessOutcome(spawn_error=str(error))
        except (OSError, ValueError) as error:
            return ProcessOutcome(spawn_error=_spawn_error_message(error))
        return await _supervise(child, spec)


async def _supervise(child: JobChild, spec: ProcessSpec) -> ProcessOutcome:
    popen = child.popen
    assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
    stdout = _Capture(spec.capture_limit_bytes)
    stderr = _Capture(spec.capture_limit_bytes)
    timed_out = False
    feeder = threading.Thread(
        target=_feed, args=(popen.stdin, spec.stdin), name="artifactize-stdin", daemon=True
    )
    try:
        feeder.start()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_drain, popen.stdout, stdout, STDOUT, spec.observe_output)
            tasks.start_soon(_drain, popen.stderr, stderr, STDERR, spec.observe_output)
            with anyio.move_on_after(spec.timeout_ms / 1000) as deadline:
                await poll_until(lambda: popen.poll() is not None)
            timed_out = deadline.cancelled_caught
            await end_job(child.job)
            # The Job is empty; only a process outside it could still hold the pipes.
            await poll_until(lambda: stdout.closed and stderr.closed, PIPE_GRACE_SECONDS)
            tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await end_job(child.job)
            child.job.close()
            popen.wait()
            _close_in_background([popen.stdout, popen.stderr])

    return ProcessOutcome(
        exit_code=popen.returncode,
        stdout=stdout.take(),
        stderr=stderr.take(),
        stdout_truncated=stdout.truncated,
        stderr_truncated=stderr.truncated,
        timed_out=timed_out,
        streams_held_open=not (stdout.closed and stderr.closed),
    )
