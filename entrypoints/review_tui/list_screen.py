"""The List screen: the waiting Human requests; ``j``/``k``/arrows move, ``Enter`` opens."""

from __future__ import annotations

import urwid
from urwid.widget import AbstractFlowWidget

from artifactize.entrypoints.review_tui.acts import Act
from artifactize.entrypoints.review_tui.layout import RowListScreen
from artifactize.entrypoints.review_tui.palette import HEADING, MUTED, PROBLEM, SELECTED
from artifactize.entrypoints.review_tui.waiting import NO_WAITING, WaitingRow, table

TITLE_TEXT = " artifactize review · waiting Human reviews "
HINTS = "j/k ↑/↓ move · Enter open · r refresh · q quit"
QUIT_KEYS = ("q", "esc")


class ListScreen(RowListScreen[WaitingRow, Act]):
    HINTS = HINTS
    QUIT_KEYS = QUIT_KEYS

    def __init__(self, rows: list[WaitingRow]) -> None:
        super().__init__(rows, TITLE_TEXT, Act)
        self.problem: str | None = None  # a read that failed (the rows shown are older)
        self._build()

    def update(self, rows: list[WaitingRow], problem: str | None = None) -> None:
        """New rows (the selection stays on the same request if it still waits)."""
        self._replace(rows, lambda row: row.request_id)
        self.problem = problem
        self._build()

    def failed(self, problem: str) -> None:
        """A refresh failed: keep the rows, say why."""
        self.problem = problem
        self._build()

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
