"""Small modal screens: Confirm a command line, pick a Verdict, Leave with claims held.

Each draws a box over the screen it came from, so the request stays in view.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import urwid

from artifactize.entrypoints.review_tui.acts import Act
from artifactize.entrypoints.review_tui.layout import ScreenBase
from artifactize.entrypoints.review_tui.palette import HEADING, PROBLEM
from artifactize.entrypoints.review_tui.tool_list import shell_quote

DIALOG_WIDTH_PERCENT = 80
CONFIRM_HINTS = "y/Enter run (and remember this command line) · n/q/Esc cancel"
VERDICT_HINTS = "g GREEN · r RED · Esc/q back"
LEAVE_HINTS = "k keep and quit · u release all and quit · Esc stay"
END_HINTS = "y cancel the request · n/q/Esc keep it"


def _dialog(base: urwid.Widget, title: str, lines: list[urwid.Widget]) -> urwid.Widget:
    box = urwid.LineBox(urwid.Pile(lines), title=title)
    return urwid.Overlay(
        box,
        base,
        align=urwid.CENTER,
        width=(urwid.RELATIVE, DIALOG_WIDTH_PERCENT),
        valign=urwid.MIDDLE,
        height=urwid.PACK,
    )


class ConfirmScreen(ScreenBase):
    """Before the first run of a resolved command line in this session."""

    HINTS = CONFIRM_HINTS

    def __init__(self, base: urwid.Widget, tool: str, command: Mapping[str, Any]) -> None:
        self.tool = tool
        self.command = command
        argv = [str(arg) for arg in command.get("argv", [])]
        self._widget = _dialog(
            base,
            f"Run {tool}?",
            [
                urwid.Text((HEADING, "This command runs with your environment and permissions:")),
                urwid.Text(f"program     {command.get('program')}"),
                urwid.Text(f"arguments   {shell_quote(argv) if argv else '(none)'}"),
                urwid.Text(f"directory   {command.get('cwd')}"),
                urwid.Text(f"repository  {command.get('repository')}"),
                urwid.Divider(),
                urwid.Text(CONFIRM_HINTS),
            ],
        )

    def keypress(self, key: str) -> Act:
        if key in ("y", "enter"):
            return Act.CONFIRM
        if key in ("n", "q", "esc"):
            return Act.CANCEL
        return Act.IGNORED


class VerdictScreen(ScreenBase):
    HINTS = VERDICT_HINTS

    def __init__(self, base: urwid.Widget, eval_id: str) -> None:
        self._widget = _dialog(
            base,
            "Verdict",
            [
                urwid.Text(f"Which verdict for {eval_id}?"),
                urwid.Divider(),
                urwid.Text(VERDICT_HINTS),
            ],
        )

    def keypress(self, key: str) -> Act:
        if key == "g":
            return Act.GREEN
        if key == "r":
            return Act.RED
        if key in ("esc", "q"):
            return Act.CANCEL
        return Act.IGNORED


class LeaveScreen(ScreenBase):
    """Quitting with claims this session took and did not settle: keep or release them."""

    HINTS = LEAVE_HINTS

    def __init__(
        self,
        base: urwid.Widget,
        held: Sequence[str],
        failures: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.held = list(held)
        lines: list[urwid.Widget] = [
            urwid.Text("You claimed these requests in this review and did not submit them:"),
            *(urwid.Text(f"  {request_id}") for request_id in held),
        ]
        if failures:
            lines.append(urwid.Divider())
            lines.append(urwid.Text((PROBLEM, "These claims could not be released and are kept:")))
            lines += [urwid.Text((PROBLEM, f"  {rid}: {why}")) for rid, why in failures]
        lines += [urwid.Divider(), urwid.Text(LEAVE_HINTS)]
        self._widget = _dialog(base, "Leave", lines)

    def keypress(self, key: str) -> Act:
        if key in ("k", "n", "q"):
            return Act.KEEP
        if key in ("u", "r", "y"):
            return Act.RELEASE_ALL
        if key == "esc":
            return Act.CANCEL
        return Act.IGNORED


class EndRequestScreen(ScreenBase):
    """Before cancelling a request (``request cancel``): it ends without a verdict, with
    its followers, and ``reason`` is recorded (why it cannot reconnect, when it cannot)."""

    HINTS = END_HINTS

    def __init__(self, base: urwid.Widget, request_id: str, reason: str | None) -> None:
        self.request_id = request_id
        self.reason = reason
        lines: list[urwid.Widget] = [
            urwid.Text(f"Cancel request {request_id}? It ends without a verdict (CANCELLED),"),
            urwid.Text("and every request waiting on it ends with it."),
        ]
        if reason:
            lines += [urwid.Divider(), urwid.Text((PROBLEM, f"Reason: {reason}"))]
        lines += [urwid.Divider(), urwid.Text(END_HINTS)]
        self._widget = _dialog(base, "Cancel request", lines)

    def keypress(self, key: str) -> Act:
        if key == "y":
            return Act.CONFIRM
        if key in ("n", "q", "esc"):
            return Act.CANCEL
        return Act.IGNORED
