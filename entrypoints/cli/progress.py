"""``verify``'s progress on stderr: live on a terminal, one line per event elsewhere.

On a terminal (stderr is a TTY and ``TERM`` is not ``dumb``) a block at the bottom is
redrawn every REDRAW_SECONDS: each running eval with its elapsed time; an Agent review's
turn, tool-call count and the tool running; a Human wait with the request and the command
that claims it; the reading of declarations and fingerprints once it took PHASE_DELAY_SECONDS.
Results and notices are printed above the block and stay. Off a terminal (CI, pipes) each
event is one line, prefixed with the seconds since ``verify`` started; notices keep their
own form (``Started run-…`` first), and the phases are not shown. ``--quiet`` keeps only
the per-eval result lines (and ``verify`` still prints its summary on stdout).

No colour is ever written: only plain text, and on a terminal the cursor movements that
redraw the block, so the output reads the same with ``NO_COLOR`` and on a monochrome
terminal.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from artifactize.ports.documents import Request

REDRAW_SECONDS = 0.25
PHASE_DELAY_SECONDS = 1.0  # a phase is shown only once it took this long
SPINNER = "|/-\\"
RESULT_STATUSES = frozenset(
    {"GREEN", "RED", "ERROR", "UNREVIEWED", "BLOCKED", "SUPERSEDED", "CANCELLED"}
)
CLEAR_LINE = "\r\x1b[K"
CURSOR_UP = "\x1b[{n}A"
FOLLOWING = "Waiting for the active Human execution of this reuse key."


@dataclass
class _Activity:
    eval_id: str
    kind: str
    started: float
    turn: int = 0
    tool_calls: int = 0
    tool: str | None = None
    waiting: str | None = None  # a Human wait: what to tell the person


def is_live_terminal(stream: TextIO, environment: Mapping[str, str]) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and environment.get("TERM", "") != "dumb"


class ProgressDisplay:
    """A ``RunObserver`` and a ``ProgressSink`` at once; ``close()`` clears the block."""

    def __init__(
        self,
        stream: TextIO,
        *,
        live: bool,
        quiet: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.live = live
        self.quiet = quiet
        self.clock = clock
        self.started = clock()
        self._lock = threading.RLock()
        self._active: dict[str, _Activity] = {}
        self._shown: dict[str, str] = {}  # request ID -> the last status told
        self._phase: tuple[str, float] | None = None
        self._drawn = 0  # lines of the live block now on screen
        self._frame = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Every permanent line as (with the elapsed time, its text), while ``record()``
        # asked for them: what a replayed Run prints again (``replay``).
        self.recorded: list[tuple[bool, str]] | None = None

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> ProgressDisplay:
        self._thread = threading.Thread(target=self._tick, name="progress", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            self._clear()
            self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(REDRAW_SECONDS):
            with self._lock:
                self._frame += 1
                if self.live:
                    self._redraw()

    # --- what verify tells it ------------------------------------------------------------

    def phase(self, label: str | None) -> None:
        """A step before the Run exists (declarations, fingerprints); None: it ended."""
        with self._lock:
            if label is None:
                self._phase = None
            elif self._phase is None or self._phase[0] != label:  # the same phase keeps its start
                self._phase = (label, self.clock())
            if self.live:
                self._redraw()

    def notice(self, text: str) -> None:
        """A ``ProgressSink`` notice (``Started run-…``, waiting, remote warnings)."""
        if self.quiet:
            return
        with self._lock:
            self._line(text, timed=False)

    def request_changed(self, request: Request) -> None:
        status = str(request.status)
        request_id = str(request.id)
        eval_id = str(request.eval_id)
        with self._lock:
            if self._shown.get(request_id) == status:
                return
            self._shown[request_id] = status
            if status == "RUNNING":
                kind = str(request.profile.get("kind") or "runtime")
                self._active[request_id] = _Activity(eval_id, kind, self.clock())
                if not self.live and not self.quiet:
                    self._line(f"{eval_id}: running ({kind})")
            elif status == "WAITING_HUMAN":
                self._waiting(request, request_id, eval_id)
            elif status in RESULT_STATUSES:
                self._result(request, request_id, eval_id, status)
            elif status == "WAIT_DEPENDENCY" and not self.quiet and not self.live:
                self._line(f"{eval_id}: {request.blocked_reason or 'waiting'}")
            if self.live:
                self._redraw()

    def agent(self, request_id: str) -> _AgentReport:
        return _AgentReport(self, request_id)

    # --- events -------------------------------------------------------------------------

    def _waiting(self, request: Request, request_id: str, eval_id: str) -> None:
        if request.blocked_reason == FOLLOWING:
            text = "waiting for the Human review of the same key it follows"
        else:
            text = f"waiting for a person: artifactize request claim {request_id}"
        self._active[request_id] = _Activity(eval_id, "human", self.clock(), waiting=text)
        self._line(f"{eval_id} [{request_id}]: WAITING_HUMAN — {text}")  # stays: how to claim

    def _result(self, request: Request, request_id: str, eval_id: str, status: str) -> None:
        activity = self._active.pop(request_id, None)
        source = request.source
        if isinstance(source, Mapping) and source.get("kind"):
            how = f"reused ({source['kind']})"
        elif activity is not None and activity.waiting is None:
            how = f"{self.clock() - activity.started:.1f}s"
        else:
            how = ""
        reason = request.error or request.reason or request.blocked_reason
        detail = f" — {reason}" if reason and status not in ("GREEN", "RED") else ""
        suffix = f" ({how})" if how else ""
        self._line(f"{eval_id} [{request_id}]: {status}{suffix}{detail}")

    def agent_event(self, request_id: str, text: str, update: Callable[[_Activity], None]) -> None:
        with self._lock:
            activity = self._active.get(request_id)
            if activity is None:
                return
            update(activity)
            if self.live:
                self._redraw()
            elif not self.quiet:
                self._line(f"{activity.eval_id}: {text}")

    def record(self) -> None:
        """Keep every permanent line from now on (``recorded``)."""
        self.recorded = []

    def replay(self, lines: list[tuple[bool, str]]) -> None:
        """Print the permanent lines a Run recorded as this Run's, at once: as ``_line``
        would (off a terminal with the elapsed time, this command's), with no live block
        (a replayed Run has nothing running)."""
        with self._lock:
            elapsed = "" if self.live else f"[{self.clock() - self.started:7.1f}s] "
            self.stream.write(
                "".join(f"{elapsed if timed else ''}{text}\n" for timed, text in lines)
            )
            self.stream.flush()

    # --- drawing ------------------------------------------------------------------------

    def _line(self, text: str, *, timed: bool = True) -> None:
        """A permanent line: above the live block on a terminal, else (an event) with the
        seconds since verify started."""
        if self.recorded is not None:
            self.recorded.append((timed, text))
        if self.live:
            self._clear()
            self.stream.write(f"{text}\n")
            self._redraw()
        elif timed:
            self.stream.write(f"[{self.clock() - self.started:7.1f}s] {text}\n")
        else:
            self.stream.write(f"{text}\n")
        self.stream.flush()

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write(CLEAR_LINE + (CURSOR_UP.format(n=1) + CLEAR_LINE) * self._drawn)
            self._drawn = 0

    def _redraw(self) -> None:
        if not self.live:
            return
        lines = self._block()
        self._clear()
        for text in lines:
            self.stream.write(f"{text}\n")
        self._drawn = len(lines)
        self.stream.flush()

    def _block(self) -> list[str]:
        now = self.clock()
        spin = SPINNER[self._frame % len(SPINNER)]
        lines: list[str] = []
        if self._phase is not None and now - self._phase[1] >= PHASE_DELAY_SECONDS:
            lines.append(f"{spin} {self._phase[0]}… {now - self._phase[1]:.0f}s")
        if self.quiet:
            return lines
        for request_id, activity in self._active.items():
            elapsed = f"{now - activity.started:.0f}s"
            if activity.waiting is not None:
                lines.append(
                    f"{spin} {activity.eval_id} [{request_id}]: {activity.waiting} {elapsed}"
                )
            elif activity.kind == "agent":
                tool = f" · running {activity.tool}" if activity.tool else ""
                lines.append(
                    f"{spin} {activity.eval_id}: agent turn {activity.turn} · "
                    f"{activity.tool_calls} tool calls{tool} {elapsed}"
                )
            else:
                lines.append(f"{spin} {activity.eval_id}: running {elapsed}")
        return lines


class _AgentReport:
    """The ``AgentActivity`` of one request."""

    def __init__(self, display: ProgressDisplay, request_id: str) -> None:
        self.display = display
        self.request_id = request_id

    def turn_started(self, turn: int) -> None:
        def update(activity: _Activity) -> None:
            activity.turn = turn

        self.display.agent_event(self.request_id, f"agent turn {turn}", update)

    def tool_started(self, name: str, count: int) -> None:
        def update(activity: _Activity) -> None:
            activity.tool, activity.tool_calls = name, count

        self.display.agent_event(self.request_id, f"tool call {count}: {name}", update)

    def tool_finished(self, name: str) -> None:
        def update(activity: _Activity) -> None:
            activity.tool = None

        if self.display.live:  # off a terminal the start line says enough
            self.display.agent_event(self.request_id, "", update)


def display_for_verify(stream: TextIO, *, quiet: bool) -> ProgressDisplay:
    """The display ``verify`` uses on ``stream`` (stderr), live when it is a terminal."""
    return ProgressDisplay(stream, live=is_live_terminal(stream, os.environ), quiet=quiet)
