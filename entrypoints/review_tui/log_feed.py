"""How a tool's lines reach the Tool log: a thread-safe queue drained on the UI loop.

An ``output`` tool reports its lines on the loop; a launched program reports them from its
drain threads, also after its call returned. The sink a run gets only queues the event and,
once per batch, calls ``wake``, which must get ``drain`` called on the loop soon (the app
uses urwid's ``MainLoop.call_from_thread``). ``drain`` files every queued event into its run. The app
drains before it writes a run's end line, so the end line follows the run's last line.

Once the review has closed, ``wake`` raises ``RuntimeError``: the events are dropped (the
launcher keeps draining the program's pipes, so it never blocks).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable

from artifactize.domain.tools.human.lines import OutputLine, ProgramEnded, ToolLogEvent
from artifactize.entrypoints.review_tui.tool_log import LogRun, ToolLog

Wake = Callable[[], None]


class LogFeed:
    def __init__(self, wake: Wake | None = None) -> None:
        self.wake = wake
        self._events: collections.deque[tuple[ToolLog, LogRun, ToolLogEvent]] = collections.deque()
        self._lock = threading.Lock()
        self._wake_pending = False

    def sink(self, log: ToolLog, run: LogRun) -> Callable[[ToolLogEvent], None]:
        """The ``on_line`` of one run: thread-safe and quick."""

        def on_line(event: ToolLogEvent) -> None:
            self._events.append((log, run, event))
            with self._lock:
                if self._wake_pending:
                    return
                self._wake_pending = True
            if self.wake is None:
                return
            try:
                self.wake()
            except RuntimeError:  # the review closed
                self._events.clear()

        return on_line

    def drain(self) -> set[int]:
        """File every queued event into its run; the ``id`` of each log that changed."""
        with self._lock:
            self._wake_pending = False
        changed: set[int] = set()
        while True:
            try:
                log, run, event = self._events.popleft()
            except IndexError:
                return changed
            if isinstance(event, OutputLine):
                log.line(run, event.stream, event.text)
            elif isinstance(event, ProgramEnded):
                log.program_ended(run, event.exit_code, event.signal)
            changed.add(id(log))
