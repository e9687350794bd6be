"""A child's pipes and its exit behind one descriptor (Linux): one wait, one task.

anyio waits on one descriptor per task, so a run that feeds stdin, reads stdout and stderr
and waits for the leader's pidfd needs four tasks, four registrations with the event loop,
and up to four wake-ups as a child exits (each pipe's end of file, then its pidfd). An epoll
descriptor is readable while any descriptor in its set is ready, so ``PipePump`` puts the
pidfd and the pipes in one epoll set and the caller's own task waits on that descriptor
alone: each wake-up is one pass that handles everything ready.

The pipes are read while the child runs, never only after its exit: a child that fills a
pipe blocks until it is read. A pass reads (or writes) at most one chunk per pipe and then
the caller waits again, which is a checkpoint: a child that floods its output cannot starve
the event loop. The event loop only ever watches the epoll descriptor, and only during a
wait (anyio removes it when the wait ends), so closing the pipes and the set afterwards
leaves nothing registered with it.

The same set serves a run watched from a worker thread (``PosixProcessRunner.run_between``):
``block`` waits in ``epoll_wait`` itself, with a ``wake`` descriptor in the set through which
the event loop reports its caller's cancellation.
"""

from __future__ import annotations

import contextlib
import os
import select
from collections.abc import Callable, Mapping
from typing import IO

import anyio

__all__ = ["AVAILABLE", "PipePump", "Unavailable"]

AVAILABLE = hasattr(select, "epoll")

_READ_CHUNK = 64 * 1024
_WRITE_CHUNK = 64 * 1024


class Unavailable(OSError):
    """No epoll set to be had for a run (descriptors or watches exhausted). ``unwritten`` is
    the input not written yet: the pump writes what the pipe takes at once, before it
    watches stdin for the rest (and closes stdin once all is written), so a fallback must
    feed only this, never the whole input again."""

    def __init__(self, cause: OSError, unwritten: bytes) -> None:
        super().__init__(cause.errno, cause.strerror)
        self.unwritten = unwritten


class PipePump:
    """The leader's pidfd and its pipes in one epoll set. ``outputs`` maps each output
    pipe's descriptor (non-blocking) to what takes its chunks; it is given ``b""`` once, at
    end of file. ``stdin`` (non-blocking), when given, is written ``data`` and closed."""

    def __init__(
        self,
        pidfd: int | None,
        outputs: Mapping[int, Callable[[bytes], None]],
        stdin: IO[bytes] | None = None,
        data: bytes = b"",
        wake: int | None = None,
    ) -> None:
        self.exited = False
        self.woken = False  # ``wake`` turned readable (the caller was cancelled)
        self._wake = wake
        self._pidfd = pidfd
        self._outputs = dict(outputs)
        self._stdin = stdin
        self._pending = memoryview(data)
        try:
            self._poller = select.epoll()
        except OSError as err:
            raise Unavailable(err, data) from err
        try:
            if pidfd is not None:  # None: the caller finds out about the exit itself
                self._poller.register(pidfd, select.EPOLLIN)
            for fd in self._outputs:
                self._poller.register(fd, select.EPOLLIN)
            if stdin is not None:
                # Written at once as far as the pipe takes it (a request fits its buffer):
                # only what is left waits for the pipe to turn writable.
                self._write()
                if self._stdin is not None:
                    self._poller.register(stdin.fileno(), select.EPOLLOUT)
            if wake is not None:
                self._poller.register(wake, select.EPOLLIN)
        except OSError as err:
            self._poller.close()
            raise Unavailable(err, self._pending.tobytes()) from err
        except BaseException:
            self._poller.close()
            raise

    @property
    def reading(self) -> bool:
        """Whether an output pipe has not reached its end of file yet."""
        return bool(self._outputs)

    async def until_exited(self) -> None:
        """Pump until the leader has exited (it stays unreaped)."""
        while not self.exited:
            await anyio.wait_readable(self._poller.fileno())
            self._pass()

    async def until_closed(self) -> None:
        """Pump until both output pipes have reached their end of file."""
        while self._outputs:
            await anyio.wait_readable(self._poller.fileno())
            self._pass()

    def block(self, timeout: float | None) -> None:
        """One blocking wait (a worker thread's, never the event loop's) of at most
        ``timeout`` seconds (None: no bound), then one pass over what is ready."""
        self._pass(-1 if timeout is None else max(timeout, 0.0))

    def close(self) -> None:
        """Release the epoll set (the pipes and the pidfd stay their owners')."""
        self._poller.close()

    def _pass(self, timeout: float = 0) -> None:
        for fd, _ in self._poller.poll(timeout):
            if fd == self._wake:
                self.woken = True
                self._poller.unregister(fd)  # it stays readable: never wake for it again
            elif fd == self._pidfd:
                self.exited = True
                self._poller.unregister(fd)  # it stays readable: never wake for it again
            elif fd in self._outputs:
                self._read(fd)
            elif self._stdin is not None and fd == self._stdin.fileno():
                self._write()

    def _read(self, fd: int) -> None:
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return
        if not chunk:
            self._poller.unregister(fd)
            self._outputs.pop(fd)(b"")
            return
        self._outputs[fd](chunk)

    def _write(self) -> None:
        stdin = self._stdin
        assert stdin is not None
        try:
            written = os.write(stdin.fileno(), self._pending[:_WRITE_CHUNK])
        except BlockingIOError:
            return
        except BrokenPipeError:  # the child closed stdin or exited without reading it all
            written = len(self._pending)
        self._pending = self._pending[written:]
        if not self._pending:
            with contextlib.suppress(FileNotFoundError):  # not registered: written at once
                self._poller.unregister(stdin.fileno())
            self._stdin = None
            with contextlib.suppress(OSError):
                stdin.close()
