"""Widget building the full-screen screens of the reviewer and the monitor share: a list they
refill, under a title bar, the widget and key hints every screen gives the app (``ScreenBase``),
a list of rows with one selected (``RowListScreen``: the reviewer's waiting requests, the
monitor's Runs) and the key router that hands every key to the app."""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable
from typing import Any, ClassVar, Generic, TypeVar

import urwid
from urwid.widget import AbstractFlowWidget

from artifactize.entrypoints.review_tui.moves import DOWN_KEYS, UP_KEYS, stepped
from artifactize.entrypoints.review_tui.palette import HINTS, TITLE

Row = TypeVar("Row")
A = TypeVar("A", bound=enum.Enum)


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


class RowListScreen(ScreenBase, Generic[Row, A]):
    """A titled list of rows with one selected, over a problem line; ``j``/``k``/arrows move,
    ``Enter`` opens the selected row, ``r`` refreshes, ``QUIT_KEYS`` quit. The screens differ
    by data: their rows, the row's identity (the selection follows it across refreshes), their
    acts (an enum with ``IGNORED``, ``HANDLED``, ``OPEN``, ``REFRESH``, ``QUIT``) and what
    moving down past the last row asks for (``PAST_END``, the name of an act). Each builds
    its own rows (``_build``)."""

    QUIT_KEYS: ClassVar[tuple[str, ...]] = ("q",)
    PAST_END: ClassVar[str] = "HANDLED"

    def __init__(self, rows: list[Row], title: str, acts: type[A]) -> None:
        self.rows = rows
        self.focus = 0
        self._acts = acts
        self._walker = flow_walker()
        self._problem = urwid.Text("")
        self._widget = titled_frame(urwid.ListBox(self._walker), title, self._problem)

    @property
    def selected(self) -> Row | None:
        return self.rows[self.focus] if self.rows else None

    def _replace(self, rows: list[Row], identity: Callable[[Row], Hashable]) -> None:
        """Show ``rows``; the selection stays on the same row (by ``identity``) while it is
        listed."""
        chosen = self.selected
        self.rows = rows
        ids = [identity(row) for row in rows]
        if chosen is not None and identity(chosen) in ids:
            self.focus = ids.index(identity(chosen))
        self.focus = min(self.focus, max(0, len(rows) - 1))

    def step_down(self) -> bool:
        """Move down one row; False at the last row."""
        if self.focus + 1 < len(self.rows):
            self.focus += 1
            self._build()
            return True
        return False

    def keypress(self, key: str) -> A:
        acts = {"enter": "OPEN" if self.rows else "HANDLED", "r": "REFRESH"}
        if key in DOWN_KEYS:
            name = "HANDLED" if self.step_down() else self.PAST_END
        elif key in UP_KEYS:
            self.focus = stepped(self.focus, len(self.rows), key) if self.rows else 0
            self._build()
            name = "HANDLED"
        else:
            name = "QUIT" if key in self.QUIT_KEYS else acts.get(key, "IGNORED")
        return self._acts[name]

    def _build(self) -> None:
        raise NotImplementedError


class ScreenFrame:
    """What both apps draw: the current screen's widget over a footer, the ``notices`` lines
    (if any) then the key hints."""

    def __init__(self, body: urwid.Widget, *notices: urwid.Widget) -> None:
        self.hints = urwid.Text("")
        footer = urwid.AttrMap(self.hints, HINTS)
        self.frame: urwid.Frame[urwid.Widget, None, Any] = urwid.Frame(
            body, footer=urwid.Pile([*notices, footer]) if notices else footer
        )

    def show(self, body: urwid.Widget, hints: str) -> None:
        self.frame.body = body
        self.hints.set_text(hints)


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
