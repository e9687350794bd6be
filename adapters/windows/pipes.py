"""The pipes of a Windows tool-session harness, each owned by a daemon thread.

Windows pipes cannot be polled, so each has a thread doing blocking reads or writes: stdin
receives the envelope and is closed; stdout's first newline-terminated line (up to
``READY_LINE_LIMIT`` bytes) is kept as the readiness line and everything after it, like all
of stderr, is read and discarded. Each thread closes its pipe itself when it is done (EOF, or
a failed write once the harness is gone), so no other thread ever closes a pipe under a
pending read.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from typing import IO

__all__ = ["READY_LINE_LIMIT", "ReadyLinePipes"]

# The readiness line is kept up to this many bytes (its content is ignored); the rest of an
# overlong line is read and dropped until its newline.
READY_LINE_LIMIT = 64 * 1024
_READ_CHUNK = 64 * 1024
_WRITE_CHUNK = 64 * 1024


class ReadyLinePipes:
    """Feeds stdin, catches the readiness line, discards all other output."""

    def __init__(self, popen: subprocess.Popen[bytes], stdin: bytes) -> None:
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        self._stdin, self._stdout, self._stderr = popen.stdin, popen.stdout, popen.stderr
        self._pending = stdin
        self._line = bytearray()
        self.resolved = threading.Event()
        self.line: bytes | None = None
        self._threads = [
            threading.Thread(target=target, name=f"artifactize-session-{name}", daemon=True)
            for target, name in (
                (self._feed, "stdin"),
                (self._read_stdout, "stdout"),
                (self._discard_stderr, "stderr"),
            )
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def is_alive(self) -> bool:
        return any(thread.is_alive() for thread in self._threads)

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

    def _feed(self) -> None:
        view = memoryview(self._pending)
        try:
            while view:
                view = view[self._stdin.write(view[:_WRITE_CHUNK]) or 0 :]
        except OSError:
            pass  # the harness closed stdin or exited without reading it all
        finally:
            _close(self._stdin)

    def _read_stdout(self) -> None:
        try:
            while chunk := _read(self._stdout):
                self._take(chunk)
        finally:
            _close(self._stdout)
            self._resolve(None)  # stdout ended before a newline

    def _discard_stderr(self) -> None:
        try:
            while _read(self._stderr):
                pass
        finally:
            _close(self._stderr)


def _read(stream: IO[bytes]) -> bytes:
    try:
        return stream.read(_READ_CHUNK) or b""
    except OSError:
        return b""


def _close(stream: IO[bytes]) -> None:
    with contextlib.suppress(OSError):
        stream.close()
