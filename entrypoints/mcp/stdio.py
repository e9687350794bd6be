"""The process's stdin and stdout as the MCP wire, readable in a way a signal can cancel.

The SDK's ``stdio_server()`` reads stdin in a worker thread that cannot be abandoned: on
SIGINT or SIGTERM the server would stay alive until the client wrote another line or
closed the pipe. Here the wire is moved to private descriptors and read without blocking
(``anyio.wait_readable``), so a signal ends the server at once; fd 0 then points at the
null device and fd 1 at stderr while serving (what the SDK does too), so tool processes
and stray prints never touch the protocol. Both are restored afterwards.

A line (one JSON-RPC message) is at most STDIO_MESSAGE_MAX_BYTES, the limit the SDK puts on
an HTTP request body (4 MiB; it has none on stdio, where one endless line would be held in
memory whole). A longer line is not kept: its bytes are skipped up to its newline, and
``oversized`` (set by the server) answers it with a JSON-RPC error naming the limit, under
the id found in its first bytes (``null`` if none), so the client is not left waiting.

On Windows a pipe can be neither polled nor made non-blocking (``wait_readable`` takes
sockets only): each read runs in a worker thread that a cancellation abandons, so a
Ctrl-C still ends the server at once (the abandoned read ends with the process).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
from collections.abc import Awaitable, Callable, Iterator

import anyio
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

READ_CHUNK_BYTES = 64 * 1024
STDIO_MESSAGE_MAX_BYTES: int = DEFAULT_MAX_REQUEST_BODY_SIZE
ID_SEARCH_BYTES = 4096  # where the id of an oversized request is looked for
INVALID_REQUEST = -32600
OVERSIZED_MESSAGE = (
    "Request larger than {limit} bytes (the limit of artifactize mcp on one stdio message, "
    "as the MCP SDK's on an HTTP body); it was not read."
)
# Windows pipes cannot be polled: reads and writes go through worker threads there.
THREADED_PIPES = sys.platform == "win32"
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


def oversized_answer(head: bytes) -> str:
    """The JSON-RPC error line for an oversized request whose first bytes are ``head``."""
    found = _ID.search(head)
    request_id = None
    if found is not None:
        with contextlib.suppress(ValueError):
            request_id = json.loads(found.group(1))
    error = {
        "code": INVALID_REQUEST,
        "message": OVERSIZED_MESSAGE.format(limit=STDIO_MESSAGE_MAX_BYTES),
    }
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}) + "\n"


def _waits(fd: int) -> bool:
    """Whether ``fd`` is to be polled (pipes, sockets, terminals); regular files cannot be
    and never block. A device that cannot be polled either (the null device) is found out
    at its first wait (``FdLines._fill``)."""
    return not THREADED_PIPES and not stat.S_ISREG(os.fstat(fd).st_mode)


class FdLines:
    """Async iteration over the UTF-8 lines of a descriptor (invalid bytes replaced), each at
    most STDIO_MESSAGE_MAX_BYTES; a longer one goes to ``oversized`` (its first bytes)."""

    def __init__(
        self,
        fd: int,
        oversized: Callable[[bytes], Awaitable[None]] | None = None,
        limit: int = STDIO_MESSAGE_MAX_BYTES,
    ) -> None:
        self._fd = fd
        self._buffer = b""
        self._eof = False
        self._poll = _waits(fd)
        self._oversized = oversized
        self._limit = limit
        if self._poll:
            os.set_blocking(fd, False)

    def __aiter__(self) -> FdLines:
        return self

    async def _fill(self) -> None:
        if THREADED_PIPES:
            chunk = await anyio.to_thread.run_sync(
                os.read, self._fd, READ_CHUNK_BYTES, abandon_on_cancel=True
            )
            self._buffer += chunk
            self._eof = not chunk
            return
        if self._poll:
            try:
                await anyio.wait_readable(self._fd)
            except PermissionError:  # EPERM: a device epoll refuses (stdin from /dev/null)
                self._poll = False  # such a descriptor never blocks a read: read it as it is
        try:
            chunk = os.read(self._fd, READ_CHUNK_BYTES)
        except BlockingIOError:
            return
        if chunk:
            self._buffer += chunk
        else:
            self._eof = True

    async def _skip_oversized(self) -> None:
        """Drop the current line (past the limit) up to its newline; report its head."""
        head = self._buffer[:ID_SEARCH_BYTES]
        while b"\n" not in self._buffer and not self._eof:
            self._buffer = b""
            await self._fill()
        _, _, self._buffer = self._buffer.partition(b"\n")
        if self._oversized is not None:
            await self._oversized(head)

    async def __anext__(self) -> str:
        while True:
            while b"\n" not in self._buffer and not self._eof and len(self._buffer) <= self._limit:
                await self._fill()
            end = self._buffer.find(b"\n")
            length = end if end >= 0 else len(self._buffer)
            if length > self._limit:
                await self._skip_oversized()
                continue
            if not self._buffer:
                raise StopAsyncIteration
            line, newline, self._buffer = self._buffer.partition(b"\n")
            return (line + newline).decode("utf-8", "replace")


class FdWriter:
    """Async ``write``/``flush`` of text on a descriptor, waiting while the pipe is full.

    ``after_write``, when set, runs once each message is wholly written: the server writes
    the audit completions there, after the answer is on its way (``ServingRun``)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.after_write: Callable[[], None] | None = None
        self._poll = _waits(fd)
        self._lock = anyio.Lock()  # the SDK's writer and ``oversized`` answers: whole lines
        if self._poll:
            os.set_blocking(fd, False)

    async def write(self, text: str) -> int:
        data = memoryview(text.encode("utf-8"))
        async with self._lock:
            if THREADED_PIPES:
                await anyio.to_thread.run_sync(_write_all, self._fd, bytes(data))
                data = data[len(data) :]
            while data:
                try:
                    written = os.write(self._fd, data)
                except BlockingIOError:
                    await anyio.wait_writable(self._fd)
                    continue
                data = data[written:]
        if self.after_write is not None:
            self.after_write()
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
        writer = FdWriter(wire_out)

        async def answer_oversized(head: bytes) -> None:
            await writer.write(oversized_answer(head))

        yield FdLines(wire_in, answer_oversized), writer
    finally:
        for fd, mode in blocking.items():
            with contextlib.suppress(OSError):
                os.set_blocking(fd, mode)
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (wire_in, wire_out, saved_in, saved_out):
            with contextlib.suppress(OSError):
                os.close(fd)
