"""The Tool log feed (threads in, the loop drains) and the busy spinner line."""

from __future__ import annotations

import threading

from artifactize.domain.tools.cancellation import Cancellation
from artifactize.domain.tools.human.lines import OutputLine, ProgramEnded
from artifactize.entrypoints.review_tui.busy import BUSY_HINTS, Busy
from artifactize.entrypoints.review_tui.log_feed import LogFeed
from artifactize.entrypoints.review_tui.tool_log import ToolLog


def test_events_from_threads_wake_once_per_batch_and_drain_in_order() -> None:
    wakes: list[int] = []
    feed = LogFeed(lambda: wakes.append(1))
    log = ToolLog()
    run = log.start("t", "launch", "doc")
    sink = feed.sink(log, run)

    def program(name: str) -> None:  # stdout and stderr: each stream from its own thread
        for index in range(100):
            sink(OutputLine(name, f"{name} {index}"))

    threads = [threading.Thread(target=program, args=(name,)) for name in ("stdout", "stderr")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sink(ProgramEnded(0, None))
    assert wakes == [1]  # nobody drained yet: one wake-up is pending
    assert feed.drain() == {id(log)}
    texts = [row.text for row in log.rows()]
    assert len(texts) == 1 + 200 + 1 and texts[-1] == "■ exit 0"
    for name in ("stdout", "stderr"):  # each stream's lines in the order printed
        assert [t for t in texts if t.startswith(name)] == [f"{name} {i}" for i in range(100)]
    sink(OutputLine("stderr", "late"))
    assert wakes == [1, 1]  # drained, so the next event wakes again
    assert feed.drain() == {id(log)} and feed.drain() == set()


def test_events_after_the_review_closed_are_dropped() -> None:
    def closed() -> None:
        raise RuntimeError("the urwid MainLoop is not running")

    feed = LogFeed(closed)
    log = ToolLog()
    sink = feed.sink(log, log.start("t", "x", "y"))
    sink(OutputLine("stdout", "nobody reads this"))  # does not raise
    assert feed.drain() == set()


def test_the_busy_line_turns_and_counts() -> None:
    busy = Busy("Running show_doc…", started=100.0)
    assert busy.line(100.0) == "⠋ Running show_doc… 0.0s"
    assert busy.line(101.25) == "⠹ Running show_doc… 1.2s"  # the 13th frame: 10 a turn
    assert busy.hints == BUSY_HINTS
    assert not busy.cancel()  # nothing to cancel
    busy.refuse()
    assert busy.hints == "Busy: Running show_doc… Please wait."  # nothing Esc could cancel
    token = Cancellation()
    cancellable = Busy("Running x…", 0.0, token)
    cancellable.refuse()
    assert cancellable.hints == "Busy: Running x… Esc cancels it."
    assert cancellable.cancel() and token.cancelled and cancellable.label == "Cancelling…"
