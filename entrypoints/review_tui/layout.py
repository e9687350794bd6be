"""Widget building the full-screen screens of the reviewer and the monitor share: a list they
refill, under a title bar, the widget and key hints every screen gives the app (``ScreenBase``),
and the key router that hands every key to the app."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import urwid
from urwid.widget import AbstractFlowWidget

from artifactize.entrypoints.review_tui.palette import TITLE


def flow_walker() -> urwid.SimpleFocusListWalker[AbstractFlowWidget]:
    """An empty list of rows; a screen's ``_build`` fills it in."""
    return urwid.SimpleFocusListWalker([])


def titled_frame(body: urwid.Widget, title: str | urwid.Text, *below: urwid.Widget) -> urwid.Widget:
    """``body`` under the title bar (``title`` in the title style), then the ``below`` lines."""
    text = urwid.Text(title) if isinstance(title, str) else title
    bar = urwid.AttrMap(text, TITLE)
    header: AbstractFlowWidget = urwid.Pile([bar, *below]) if below else bar
    return urwid.Frame(body, header=header)


class ScreenBase:
    """A screen's widget (its ``__init__`` builds ``_widget``) and its footer's key hints
    (``HINTS``), as the reviewer and the monitor read them."""

    HINTS: ClassVar[str] = ""
    _widget: urwid.Widget

    @property
    def widget(self) -> urwid.Widget:
        return self._widget

    @property
    def hints(self) -> str:
        return self.HINTS


class KeyRouter(urwid.WidgetWrap[urwid.Widget]):
    """Every key goes to the app first; screens decide, not urwid's focus rules."""

    def __init__(self, widget: urwid.Widget, on_key: Callable[[str], None]) -> None:
        super().__init__(widget)
        self._on_key = on_key

    def selectable(self) -> bool:
        return True

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        self._on_key(key)
        return None
