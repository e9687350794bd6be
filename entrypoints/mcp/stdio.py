"""The process's stdin and stdout as the MCP wire, readable in a way a signal can cancel.

The SDK's ``stdio_server()`` reads stdin in a worker thread that cannot be abandoned: on
SIGINT or SIGTERM the server would stay alive until the client wrote another line or
closed the pipe. Here the wire is moved to private descriptors and read without blocking
(``anyio.wait_readable``), so a signal ends the server at once; fd 0 then points at the
null device and fd 1 at stderr while serving (what the SDK does too), so tool processes
and stray prints never touch the protocol. Both are restored afterwards.

On Windows a pipe can be neither polled nor made non-blocking (``wait_readable`` takes
sockets only): each read runs in a worker thread that a cancellation abandons, so a
Ctrl-C still ends the server at once (the abandoned read ends with the process).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator

import anyio

READ_CHUNK_BYTES = 64 * 1024
# Windows pipes cannot be polled: reads and writes go through worker threads there.
THREADED_PIPES = sys.platform == "win32"


def _waits(fd: int) -> bool:
    """Whether ``fd`` can be polled (pipes, sockets, terminals); regular files cannot and
    never block."""
    return not THREADED_PIPES and not stat.S_ISREG(os.fstat(fd).st_mode)


class FdLines:
    """Async iteration over the UTF-8 lines of a descriptor (invalid bytes replaced)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = b""
        self._eof = False
        self._poll = _waits(fd)
        if self._poll:
            os.set_blocking(fd, False)

    def __aiter__(self) -> FdLines:
        return self

    async def __anext__(self) -> str:
        while b"\n" not in self._buffer and not self._eof:
            if THREADED_PIPES:
                chunk = await anyio.to_thread.run_sync(
                    os.read, self._fd, READ_CHUNK_BYTES, abandon_on_cancel=True
                )
                self._buffer += chunk
                self._eof = not chunk
                continue
            if self._poll:
                await anyio.wait_readable(self._fd)
            try:
                chunk = os.read(self._fd, READ_CHUNK_BYTES)
            except BlockingIOError:
                continue
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True
        if not self._buffer:
            raise StopAsyncIteration
        line, newline, self._buffer = self._buffer.partition(b"\n")
        return (line + newline).decode("utf-8", "replace")


class FdWriter:
    """Async ``write``/``flush`` of text on a descriptor, waiting while the pipe is full."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._poll = _waits(fd)
        if self._poll:
            os.set_blocking(fd, False)

    async def write(self, text: str) -> int:
        data = memoryview(text.encode("utf-8"))
        if THREADED_PIPES:
            await anyio.to_thread.run_sync(_write_all, self._fd, bytes(data))
            return len(text)
        while data:
            try:
                written = os.write(self._fd, data)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            data = data[written:]
        return len(text)

    async def flush(self) -> None:
        return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@contextlib.contextmanager
def private_stdio() -> Iterator[tuple[FdLines, FdWriter]]:
    """The wire on private descriptors; fd 0 is the null device and fd 1 stderr meanwhile."""
    wire_in = os.dup(0)
    wire_out = os.dup(1)
    saved_in = os.dup(0)
    saved_out = os.dup(1)
    # O_NONBLOCK belongs to the open file, which a terminal shares with the shell: put the
    # original modes back, or the shell would find its terminal non-blocking afterwards.
    blocking = {} if THREADED_PIPES else {fd: os.get_blocking(fd) for fd in (wire_in, wire_out)}
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        os.dup2(2, 1)
        yield FdLines(wire_in), FdWriter(wire_out)
    finally:
        for fd, mode in blocking.items():
            with contextlib.suppress(OSError):
                os.set_blocking(fd, mode)
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (wire_in, wire_out, saved_in, saved_out):
            with contextlib.suppress(OSError):
                os.close(fd)
