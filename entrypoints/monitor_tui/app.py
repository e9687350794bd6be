"""The monitor: urwid's own event loop, a refresh every second, and the hand-over to review.

Read-only by construction: data comes from ``MonitorSource`` (a read-only state
connection); the one action that writes, reviewing a waiting Human request, runs as a
child ``artifactize review REQUEST_ID`` in the same terminal while the monitor's screen is
paused, so every write happens in that child. When a read fails the screens keep their
last data and one error line says what failed; a failed review leaves its line until the
next key.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import urwid

from artifactize.entrypoints.monitor_tui.screens import MonitorAct, RunListScreen, RunScreen
from artifactize.entrypoints.monitor_tui.source import MonitorReadError, MonitorSource
from artifactize.entrypoints.review_tui.layout import KeyRouter, ScreenFrame
from artifactize.entrypoints.review_tui.palette import (
    FIELD_FOCUS,
    HEADING,
    PALETTE,
    PROBLEM,
    SELECTED,
)
from artifactize.entrypoints.review_tui.palette import TITLE as TITLE_STYLE
from artifactize.entrypoints.signals import stop_signals

REFRESH_SECONDS = 1.0
IDLE_PER_READ = 2  # wait twice what a refresh took: a third of the time reads
PAGE_ROWS = 50  # Runs read at first; moving past the last one reads this many more
READ_FAILED = "read failed at {time}: {reason}"
UNREADABLE_RUN = "Run {run} has a document this monitor cannot show ({reason})."
REVIEW_FAILED = "review of {request} ended with exit code {code}"
REVIEW_DID_NOT_START = "review of {request} did not start: {reason}"
CLOCK_FORMAT = "%H:%M:%S"
# Monochrome terminals (and NO_COLOR) still show what matters: the title and the selection
# in standout, headings and problems in bold.
MONO = {
    TITLE_STYLE: "standout",
    SELECTED: "standout",
    FIELD_FOCUS: "standout",
    HEADING: "bold",
    PROBLEM: "bold",
}
MONITOR_PALETTE = [(name, fg, bg, MONO.get(name, "default")) for name, fg, bg in PALETTE]

Now = Callable[[], datetime]


def refresh_delay(last_refresh: float) -> float:
    """Seconds until the next refresh: ``REFRESH_SECONDS``, or longer when the last refresh
    took long (a Run of 10,000 Artifacts changing under a ``verify``), so that at most a
    third of the time goes to reading and keys are still answered."""
    return max(REFRESH_SECONDS, IDLE_PER_READ * last_refresh)


RunChild = Callable[[Sequence[str]], int]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def run_in_terminal(argv: Sequence[str]) -> int:
    """Run ``argv`` in this terminal and wait; the monitor ignores Ctrl-C meanwhile (it is
    the child's)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return subprocess.run(list(argv), check=False).returncode
    finally:
        signal.signal(signal.SIGINT, previous)


@dataclass
class MonitorApp:
    source: MonitorSource
    review_argv: Callable[[str], list[str]]
    now: Now = _utc_now
    run_child: RunChild = run_in_terminal

    def __post_init__(self) -> None:
        self.limit = PAGE_ROWS
        self.list_screen = RunListScreen()
        self.run_screen: RunScreen | None = None
        self.problem: str | None = None  # the last failed read, shown until a read succeeds
        self.sticky: str | None = None  # a failed review, shown until the next key
        self._view = ScreenFrame(self.list_screen.widget)
        self.loop: urwid.MainLoop | None = None
        self.stopped_by_signal = False  # a stop signal ended it: the command exits 2
        self._child_running = False

    @property
    def screen(self) -> RunListScreen | RunScreen:
        return self.run_screen if self.run_screen is not None else self.list_screen

    @property
    def widget(self) -> urwid.Widget:
        return KeyRouter(self._view.frame, self.on_key)

    def run(self, display: urwid.display.BaseScreen | None = None) -> None:
        screen = display if display is not None else urwid.display.raw.Screen()
        if os.environ.get("NO_COLOR") and isinstance(screen, urwid.display.raw.Screen):
            screen.set_terminal_properties(colors=1)
        self.loop = urwid.MainLoop(self.widget, MONITOR_PALETTE, screen=screen, handle_mouse=False)
        self.refresh()
        self.loop.set_alarm_in(REFRESH_SECONDS, self._tick)
        # SIGTERM, SIGHUP (a closed terminal) and SIGQUIT end the monitor like any command:
        # the screen is restored and the command exits 2 (``stopped_by_signal``).
        stops = [number for number in stop_signals() if number != signal.SIGINT]
        previous = {number: signal.signal(number, self._on_stop_signal) for number in stops}
        try:
            self.loop.run()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)

    def _on_stop_signal(self, number: int, _frame: Any) -> None:
        """Leave the main loop at once; while a child review runs (it has the terminal and
        gets a hang-up itself), leave as soon as it returns."""
        self.stopped_by_signal = True
        if not self._child_running:
            raise urwid.ExitMainLoop()

    def _tick(self, loop: urwid.MainLoop, _data: Any = None) -> None:
        started = time.monotonic()
        self.refresh()
        loop.set_alarm_in(refresh_delay(time.monotonic() - started), self._tick)

    # --- reading ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read what the current screen shows; on failure keep it and say why."""
        now = self.now()
        try:
            if self.run_screen is None:
                self.list_screen.update(self.source.runs(self.limit), now)
            else:
                self._refresh_run(self.run_screen, now)
            self.problem = None
        except MonitorReadError as error:
            self.problem = READ_FAILED.format(
                time=now.astimezone().strftime(CLOCK_FORMAT), reason=error
            )
        self._render()

    def _refresh_run(self, screen: RunScreen, now: datetime) -> None:
        document = self.source.run(screen.run_id)
        if document is None:
            raise MonitorReadError(f"Run {screen.run_id} is not in the state.")
        if document is screen.document and document.run.get("completedAt"):
            return  # nothing changed, and a settled Run's header does not move with the clock
        try:
            screen.update(document, now)
        except (KeyError, TypeError, ValueError) as error:  # a document of another version
            raise MonitorReadError(
                UNREADABLE_RUN.format(run=screen.run_id, reason=repr(error))
            ) from None

    # --- keys -------------------------------------------------------------------------------

    def on_key(self, key: str) -> None:
        self.sticky = None
        act = self.screen.keypress(key)
        if act is MonitorAct.QUIT:
            raise urwid.ExitMainLoop()
        if act is MonitorAct.REFRESH:
            self.refresh()
        elif act is MonitorAct.MORE:
            self._more()
        elif act is MonitorAct.OPEN:
            self._open()
        elif act is MonitorAct.BACK:
            self.run_screen = None
            self.refresh()
        elif act is MonitorAct.REVIEW:
            self._review()
        self._render()

    def _more(self) -> None:
        """Past the last row: read a page more of older Runs, then step onto the next."""
        if len(self.list_screen.rows) < self.limit:
            return  # every Run is listed
        self.limit += PAGE_ROWS
        self.refresh()
        self.list_screen.step_down()

    def _open(self) -> None:
        chosen = self.list_screen.selected
        if chosen is None:
            return
        self.run_screen = RunScreen(chosen.run_id)
        self.refresh()

    def _review(self) -> None:
        assert self.run_screen is not None
        request_id, why_not = self.run_screen.waiting_request()
        if request_id is None:
            self.sticky = why_not
            return
        argv = self.review_argv(request_id)
        try:
            self._child_running = True
            if self.loop is not None:
                with self.loop.paused():
                    code = self.run_child(argv)
            else:
                code = self.run_child(argv)
        except OSError as error:
            self.sticky = REVIEW_DID_NOT_START.format(request=request_id, reason=error.strerror)
            return
        finally:
            self._child_running = False
        if self.stopped_by_signal:
            raise urwid.ExitMainLoop()
        self.refresh()
        if code != 0:
            self.sticky = REVIEW_FAILED.format(request=request_id, code=code)

    # --- drawing ----------------------------------------------------------------------------

    def _render(self) -> None:
        screen = self.screen
        screen.show_problem(self.sticky or self.problem)
        self._view.show(screen.widget, screen.hints)
