"""Widget building the full-screen screens share: a list they refill, under a title bar."""

from __future__ import annotations

import urwid
from urwid.widget import AbstractFlowWidget

from entrypoints.review_tui.palette import TITLE


def flow_walker() -> urwid.SimpleFocusListWalker[AbstractFlowWidget]:
    """An empty list of rows; a screen's ``_build`` fills it in."""
    return urwid.SimpleFocusListWalker([])


def titled_frame(body: urwid.Widget, title: str | urwid.Text, *below: urwid.Widget) -> urwid.Widget:
    """``body`` under the title bar (``title`` in the title style), then the ``below`` lines."""
    text = urwid.Text(title) if isinstance(title, str) else title
    bar = urwid.AttrMap(text, TITLE)
    header: AbstractFlowWidget = urwid.Pile([bar, *below]) if below else bar
    return urwid.Frame(body, header=header)
