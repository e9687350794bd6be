"""Live lines of a Human tool run, for a screen that shows them as they are printed.

A review's Tool log shows a tool's stdout and stderr line by line while it runs. The
process adapters hand over raw chunks (``ports.process.OutputObserver`` for ``output``
runs, ``ports.launch.LaunchObserver`` for launched programs); ``LineSplitter`` turns them
into cleaned text lines, one stream at a time, and tells the sink how the program ended.

A line longer than ``LINE_PIECE_MAX_BYTES`` is passed on in pieces (cut on a character
boundary), so one endless line neither grows memory nor waits forever to be shown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from artifactize.domain.tools.commands.text_output import clean_output, decode_lossy

LINE_PIECE_MAX_BYTES = 4096
STREAMS = ("stdout", "stderr")


@dataclass(frozen=True)
class OutputLine:
    """One line (or piece of a long line) a tool printed, cleaned, without its newline."""

    stream: str  # "stdout" or "stderr"
    text: str


@dataclass(frozen=True)
class ProgramEnded:
    """The program exited: exactly one of ``exit_code`` and ``signal`` is set."""

    exit_code: int | None
    signal: int | None


ToolLogEvent = OutputLine | ProgramEnded
LineSink = Callable[[ToolLogEvent], None]
"""Receives a run's lines, then (for a program that ran to its end) ``ProgramEnded``.

For an ``output`` tool it is called from the caller's event loop; for a launched program
from the launcher's threads, also after ``call`` returned: it must be thread-safe and quick
(put the event on a queue)."""


def _piece_end(buffer: bytearray, limit: int) -> int:
    """The largest cut ``<= limit`` that does not split a UTF-8 character (if one is there)."""
    for cut in range(limit, max(limit - 4, 0), -1):
        if buffer[cut] & 0xC0 != 0x80:  # not a continuation byte: a character starts here
            return cut
    return limit


class LineSplitter:
    """Chunks in, lines out. Implements ``LaunchObserver``; ``output`` is an OutputObserver.

    The two streams are split independently (each is fed from one reader at a time). A sink
    that raises is dropped, never the run: ``sink_error`` keeps what it raised.
    """

    def __init__(self, sink: LineSink) -> None:
        self._sink: LineSink | None = sink
        self._pending = {name: bytearray() for name in STREAMS}
        self.sink_error: Exception | None = None

    def output(self, stream: str, data: bytes) -> None:
        buffer = self._pending[stream]
        buffer += data
        while True:
            newline = buffer.find(b"\n", 0, LINE_PIECE_MAX_BYTES + 1)
            if newline >= 0:
                self._emit(stream, bytes(buffer[:newline]))
                del buffer[: newline + 1]
            elif len(buffer) > LINE_PIECE_MAX_BYTES:
                cut = _piece_end(buffer, LINE_PIECE_MAX_BYTES)
                self._emit(stream, bytes(buffer[:cut]))
                del buffer[:cut]
            else:
                return

    def flush(self) -> None:
        """Pass on what is left of each stream: a last line without a newline."""
        for stream, buffer in self._pending.items():
            if buffer:
                self._emit(stream, bytes(buffer))
                buffer.clear()

    def exited(self, exit_code: int | None, signal: int | None) -> None:
        self.flush()
        self._send(ProgramEnded(exit_code, signal))

    def emit_text(self, text: str, stream: str = "stdout") -> None:
        """A built-in's finished text, shown as the lines it consists of."""
        self.output(stream, text.encode("utf-8"))
        self.flush()

    def _emit(self, stream: str, raw: bytes) -> None:
        text = clean_output(decode_lossy(raw))
        self._send(OutputLine(stream, text.removesuffix("\r")))

    def _send(self, event: ToolLogEvent) -> None:
        if self._sink is None:
            return
        try:
            self._sink(event)
        except Exception as exc:  # a broken screen must not break the tool run
            self.sink_error = exc
            self._sink = None
