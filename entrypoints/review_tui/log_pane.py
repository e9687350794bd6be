"""The output pane: a box widget that draws the Tool log and follows its end.

It renders only the rows that fit, from the bottom up, so a log of a million lines costs
what one screen costs. ``back`` is how many log rows the view is scrolled away from the
end (0 follows new output); PgUp/PgDn move it by ``SCROLL_ROWS``.
"""

from __future__ import annotations

from typing import Any

import urwid

from artifactize.entrypoints.review_tui.palette import LOG_STYLES, MUTED
from artifactize.entrypoints.review_tui.tool_log import ToolLog

SCROLL_ROWS = 10
EMPTY_HINT = "Enter (or t) runs the selected tool; what it prints shows here."


class LogPane(urwid.Widget):
    _sizing = frozenset([urwid.Sizing.BOX])
    _selectable = False

    def __init__(self, log: ToolLog, empty_hint: str = EMPTY_HINT) -> None:
        super().__init__()
        self.log = log
        self.empty_hint = empty_hint
        self.back = 0

    def scroll(self, rows: int) -> None:
        """Scroll by ``rows`` (positive: back towards older output), within the log."""
        limit = max(0, len(self.log.rows()) - 1)
        self.back = min(limit, max(0, self.back + rows))
        self._invalidate()

    def refresh(self) -> None:
        """The log changed: draw again (a view scrolled back stays where it is)."""
        self._invalidate()

    def render(self, size: tuple[()] | tuple[int] | tuple[int, int], focus: bool = False) -> Any:
        cols, height = _box(size)
        if cols == 0 or height == 0:
            return urwid.SolidCanvas(" ", cols, height)
        rows = self.log.rows()
        if not rows:
            canvas = urwid.CompositeCanvas(urwid.Text((MUTED, self.empty_hint)).render((cols,)))
            canvas.pad_trim_top_bottom(0, height - canvas.rows())
            return canvas
        canvases: list[Any] = []
        used = 0
        index = len(rows) - self.back - 1
        while index >= 0 and used < height:
            row = rows[index]
            style = LOG_STYLES[row.kind]
            text = urwid.Text((style, row.text) if style else row.text, wrap="any")
            rendered = text.render((cols,))
            canvases.append(rendered)
            used += rendered.rows()
            index -= 1
        canvases.reverse()
        canvas = urwid.CompositeCanvas(urwid.CanvasCombine([(c, None, False) for c in canvases]))
        if used > height:
            canvas.pad_trim_top_bottom(height - used, 0)  # keep the newest rows
        else:
            canvas.pad_trim_top_bottom(0, height - used)
        return canvas


def _box(size: tuple[()] | tuple[int] | tuple[int, int]) -> tuple[int, int]:
    if len(size) != 2:
        raise ValueError(f"the output pane is a box widget; got size {size!r}")
    return size
