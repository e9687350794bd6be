"""The progress renderer with a fake clock and a string stream: what each mode writes."""

from __future__ import annotations

import io
import re

from artifactize.entrypoints.cli.progress import (
    PHASE_DELAY_SECONDS,
    ProgressDisplay,
    is_live_terminal,
)
from artifactize.kernel.document_codec import request_from_json
from artifactize.ports.documents import Request


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def request(status: str, kind: str = "runtime", **extra: object) -> Request:
    return request_from_json(
        {
            "id": "run-a-1",
            "evalId": "app/tests",
            "status": status,
            "profile": {"kind": kind},
            **extra,
        }
    )


def test_line_mode_writes_one_timed_line_per_event_and_notices_as_they_are() -> None:
    stream, clock = io.StringIO(), Clock()
    display = ProgressDisplay(stream, live=False, clock=clock)
    display.notice("Started run-a")
    display.request_changed(request("RUNNING", "agent"))
    display.request_changed(request("RUNNING", "agent"))  # the same status: told once
    clock.now += 2
    activity = display.agent("run-a-1")
    activity.turn_started(1)
    activity.tool_started("read_app", 1)
    activity.tool_finished("read_app")
    clock.now += 1.5
    display.request_changed(request("GREEN", "agent"))
    assert stream.getvalue().splitlines() == [
        "Started run-a",
        "[    0.0s] app/tests: running (agent)",
        "[    2.0s] app/tests: agent turn 1",
        "[    2.0s] app/tests: tool call 1: read_app",
        "[    3.5s] app/tests [run-a-1]: GREEN (3.5s)",
    ]


def test_quiet_keeps_only_results() -> None:
    stream = io.StringIO()
    display = ProgressDisplay(stream, live=False, quiet=True, clock=Clock())
    display.notice("Started run-a")
    display.request_changed(request("RUNNING"))
    display.request_changed(request("RED", error=None, source={"kind": "cache"}))
    assert stream.getvalue() == "[    0.0s] app/tests [run-a-1]: RED (reused (cache))\n"


def test_live_mode_redraws_a_block_and_keeps_results_above_it() -> None:
    stream, clock = io.StringIO(), Clock()
    display = ProgressDisplay(stream, live=True, clock=clock)
    display.phase("Reading declarations and fingerprints")
    assert stream.getvalue() == ""  # not before PHASE_DELAY_SECONDS
    clock.now += PHASE_DELAY_SECONDS
    display.phase("Reading declarations and fingerprints")  # redraws
    display.phase(None)
    display.request_changed(request("RUNNING", "agent"))
    clock.now += 7
    display.agent("run-a-1").tool_started("grep_app", 4)
    written = stream.getvalue()
    assert "Reading declarations and fingerprints… 1s" in written
    assert "app/tests: agent turn 0 · 4 tool calls · running grep_app 7s" in written
    display.request_changed(request("ERROR", "agent", error="Timed out."))
    display.close()
    tail = stream.getvalue()[len(written) :]
    assert "app/tests [run-a-1]: ERROR (7.0s) — Timed out.\n" in tail
    assert "\x1b[" in tail and not re.search(r"\x1b\[[0-9;]*m", stream.getvalue())  # no colour


def test_a_live_terminal_is_a_tty_without_term_dumb() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert is_live_terminal(Tty(), {"TERM": "xterm"})
    assert not is_live_terminal(Tty(), {"TERM": "dumb"})
    assert not is_live_terminal(io.StringIO(), {"TERM": "xterm"})


def test_recorded_lines_are_replayed_as_each_mode_prints_them() -> None:
    """A replayed Run prints the permanent lines its plan recorded: off a terminal with
    this command's elapsed time (untimed notices as they were), on one without (as
    ``_line`` prints them above the live block)."""
    for live in (False, True):
        stream, clock = io.StringIO(), Clock()
        display = ProgressDisplay(stream, live=live, clock=clock)
        display.record()
        display.notice("Started run-a")
        display.request_changed(request("GREEN", error=None, source={"kind": "cache"}))
        assert display.recorded == [
            (False, "Started run-a"),
            (True, "app/tests [run-a-1]: GREEN (reused (cache))"),
        ]
        printed = stream.getvalue()
        again, later = io.StringIO(), Clock()
        replaying = ProgressDisplay(again, live=live, clock=later)
        later.now += 2.5
        replaying.replay(display.recorded)
        if live:
            assert again.getvalue() == printed  # no block was drawn: nothing ran
        else:
            assert again.getvalue() == printed.replace("[    0.0s]", "[    2.5s]")
