"""The Tool log: what the reviewer's tools printed while the review is open.

Each run shows as ``▶ HH:MM:SS · operation · Artifact``, then its lines (stderr marked),
then an end line: ``■ exit CODE`` (or ``launched``, ``done``, ``cancelled``, ``timed out``,
``error: …``; the seed's forms, so a program ended by a signal ends ``error: ended by signal N``). A launched program keeps logging after its call returned, so
its lines go into its own run and its end line turns from ``launched`` into its exit code.

The log is bounded per run, not per review: one run shows at most ``RUN_SHOWN_MAX_BYTES``
of output, then one line saying the rest is not shown, so a chatty tool cannot exhaust
memory. A line longer than ``LINE_PIECE_MAX_BYTES`` shows in pieces (the line splitter
already cuts tool output that way; text that reaches the log another way, such as an
error message, is cut here too). Nothing is saved: the log lives in memory only.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from artifactize.domain.reviews.human.errors import CANCELLED as ACTION_CANCELLED
from artifactize.domain.tools.human.lines import LINE_PIECE_MAX_BYTES
from artifactize.domain.tools.human.results import CANCELLED as CALL_CANCELLED
from artifactize.domain.tools.human.results import TIMED_OUT, HumanToolResult

RUN_SHOWN_MAX_BYTES = 1024 * 1024  # output shown per run, in UTF-8 bytes (newlines counted)
HEADER_MARK = "▶"
END_MARK = "■"
SEPARATOR = " · "
REST_NOT_SHOWN = "… the rest of this run's output (over 1 MiB) is not shown."
STDERR_STREAM = "stderr"

END_LAUNCHED = "launched"
END_DONE = "done"
END_CANCELLED = "cancelled"
END_TIMED_OUT = "timed out"
END_ERROR = "error: {message}"
END_SIGNAL = "ended by signal {signal}"  # an ``error: …`` end: the seed has no signal form


class RowKind(enum.Enum):
    """What a row of the log is; the screen picks a style for each."""

    HEADER = "header"
    STDOUT = "stdout"
    STDERR = "stderr"
    NOTE = "note"  # what the log itself says (the rest is not shown)
    END = "end"
    END_ERROR = "end-error"


@dataclass(frozen=True)
class LogRow:
    kind: RowKind
    text: str


@dataclass
class LogRun:
    """One run of one tool: its header, the lines shown so far, and how it ended."""

    header: str
    lines: list[LogRow] = field(default_factory=list)
    shown_bytes: int = 0
    cut: bool = False  # the rest of the output is not shown
    end: str | None = None
    failed: bool = False  # the end line reports an error

    def rows(self) -> list[LogRow]:
        rows = [LogRow(RowKind.HEADER, self.header), *self.lines]
        if self.end is not None:
            kind = RowKind.END_ERROR if self.failed else RowKind.END
            rows.append(LogRow(kind, f"{END_MARK} {self.end}"))
        return rows


def split_pieces(text: str, limit: int = LINE_PIECE_MAX_BYTES) -> list[str]:
    """``text`` cut into pieces of at most ``limit`` UTF-8 bytes, on character boundaries."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return [text]
    pieces: list[str] = []
    start = 0
    while start < len(data):
        cut = min(start + limit, len(data))
        while cut < len(data) and data[cut] & 0xC0 == 0x80:  # inside a character: back off
            cut -= 1
        if cut == start:  # a limit smaller than one character: take the whole character
            cut = start + 1
            while cut < len(data) and data[cut] & 0xC0 == 0x80:
                cut += 1
        pieces.append(data[start:cut].decode("utf-8", "surrogatepass"))
        start = cut
    return pieces


def header_text(clock_text: str, operation: str, artifact: str) -> str:
    """``▶ HH:MM:SS · operation · Artifact``."""
    return f"{HEADER_MARK} {clock_text}{SEPARATOR}{operation}{SEPARATOR}{artifact}"


def ended_text(exit_code: int | None, signal: int | None) -> str:
    """How a program that ran to its end ended: ``exit CODE``, or ``error: ended by signal
    N`` for one a signal ended."""
    if signal is not None:
        return END_ERROR.format(message=END_SIGNAL.format(signal=signal))
    return f"exit {exit_code}"


def result_end(result: HumanToolResult) -> tuple[str, bool]:
    """The end line of a call whose program did not report its exit (and whether it is
    a failure): a launch, a built-in's text, a timeout, a cancellation or an error."""
    if result.is_launch:
        return END_LAUNCHED, False
    if not result.is_error:
        return END_DONE, False
    message = result.error_text or ""
    if message == TIMED_OUT:
        return END_TIMED_OUT, True
    if message == CALL_CANCELLED:
        return END_CANCELLED, True
    return error_end(message)


def error_end(message: str) -> tuple[str, bool]:
    """The end line of a refused action (or a failed call): its first line of text."""
    if message in (ACTION_CANCELLED, CALL_CANCELLED):
        return END_CANCELLED, True
    first = message.strip().splitlines()[0] if message.strip() else "failed"
    return END_ERROR.format(message=first), True


class ToolLog:
    """The runs of one review, oldest first. ``version`` changes whenever a row does, so a
    screen knows when to draw again; ``rows()`` is cached between changes."""

    def __init__(self) -> None:
        self.runs: list[LogRun] = []
        self.version = 0
        self._rows: list[LogRow] | None = None

    def _changed(self) -> None:
        self.version += 1
        self._rows = None

    def start(self, clock_text: str, operation: str, artifact: str) -> LogRun:
        run = LogRun(header_text(clock_text, operation, artifact))
        self.runs.append(run)
        self._changed()
        return run

    def line(self, run: LogRun, stream: str, text: str) -> None:
        """Show one line of ``run`` (in pieces if long) unless its output bound is reached."""
        if run.cut:
            return
        kind = RowKind.STDERR if stream == STDERR_STREAM else RowKind.STDOUT
        for piece in split_pieces(text):
            size = len(piece.encode("utf-8", "surrogatepass")) + 1  # and its newline
            if run.shown_bytes + size > RUN_SHOWN_MAX_BYTES:
                run.cut = True
                run.lines.append(LogRow(RowKind.NOTE, REST_NOT_SHOWN))
                break
            run.shown_bytes += size
            run.lines.append(LogRow(kind, piece))
        self._changed()

    def program_ended(self, run: LogRun, exit_code: int | None, signal: int | None) -> None:
        """The program's exit is the end line, also after a launch said ``launched``."""
        run.end = ended_text(exit_code, signal)
        run.failed = signal is not None or exit_code != 0
        self._changed()

    def finish(self, run: LogRun, end: str, failed: bool) -> None:
        """The end line from the call's result, unless the program already reported one."""
        if run.end is not None:
            return
        run.end = end
        run.failed = failed
        self._changed()

    def rows(self) -> list[LogRow]:
        if self._rows is None:
            self._rows = [row for run in self.runs for row in run.rows()]
        return self._rows
