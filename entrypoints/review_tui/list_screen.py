"""The List screen: the waiting Human requests; ``j``/``k``/arrows move, ``Enter`` opens."""

from __future__ import annotations

import urwid
from urwid.widget import AbstractFlowWidget

from artifactize.entrypoints.review_tui.acts import Act
from artifactize.entrypoints.review_tui.layout import ScreenBase, flow_walker, titled_frame
from artifactize.entrypoints.review_tui.moves import DOWN_KEYS, UP_KEYS, stepped
from artifactize.entrypoints.review_tui.palette import HEADING, MUTED, PROBLEM, SELECTED
from artifactize.entrypoints.review_tui.waiting import NO_WAITING, WaitingRow, table

TITLE_TEXT = " artifactize review · waiting Human reviews "
HINTS = "j/k ↑/↓ move · Enter open · r refresh · q quit"
QUIT_KEYS = ("q", "esc")


class ListScreen(ScreenBase):
    HINTS = HINTS

    def __init__(self, rows: list[WaitingRow]) -> None:
        self.rows = rows
        self.focus = 0
        self.problem: str | None = None  # a read that failed (the rows shown are older)
        self._walker = flow_walker()
        self._problem = urwid.Text("")
        self._widget = titled_frame(urwid.ListBox(self._walker), TITLE_TEXT, self._problem)
        self._build()

    @property
    def selected(self) -> WaitingRow | None:
        return self.rows[self.focus] if self.rows else None

    def update(self, rows: list[WaitingRow], problem: str | None = None) -> None:
        """New rows (the selection stays on the same request if it still waits)."""
        chosen = self.selected
        self.rows = rows
        self.problem = problem
        ids = [row.request_id for row in rows]
        if chosen is not None and chosen.request_id in ids:
            self.focus = ids.index(chosen.request_id)
        self.focus = min(self.focus, max(0, len(rows) - 1))
        self._build()

    def failed(self, problem: str) -> None:
        """A refresh failed: keep the rows, say why."""
        self.problem = problem
        self._build()

    def keypress(self, key: str) -> Act:
        if key in DOWN_KEYS or key in UP_KEYS:
            if self.rows:
                self.focus = stepped(self.focus, len(self.rows), key)
                self._build()
            return Act.HANDLED
        if key == "enter":
            return Act.OPEN if self.rows else Act.HANDLED
        if key == "r":
            return Act.REFRESH
        if key in QUIT_KEYS:
            return Act.QUIT
        return Act.IGNORED

    def _build(self) -> None:
        self._problem.set_text((PROBLEM, self.problem) if self.problem else "")
        if not self.rows:
            self._walker[:] = [urwid.Text((MUTED, NO_WAITING))]
            return
        header, *lines = table(self.rows)
        items: list[AbstractFlowWidget] = [urwid.Text((HEADING, header))]
        for index, line in enumerate(lines):
            style = SELECTED if index == self.focus else None
            items.append(urwid.AttrMap(urwid.Text(line, wrap="clip"), style))
        self._walker[:] = items
        self._walker.set_focus(self.focus + 1)
