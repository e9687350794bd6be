"""What a key asks for: screens turn keys into acts, the app carries them out.

Screens only know their own state (a selection, a form); anything that touches the
lifecycle, the state or another screen is an ``Act`` the app handles. That keeps each
screen testable by pressing keys and reading what it returns and renders.
"""

from __future__ import annotations

import enum
from typing import Protocol

import urwid


class Act(enum.Enum):
    IGNORED = "ignored"  # the screen has no use for the key
    HANDLED = "handled"  # the screen changed itself; nothing else to do
    QUIT = "quit"
    BACK = "back"
    OPEN = "open"
    REFRESH = "refresh"
    RUN_TOOL = "run-tool"
    SUBMIT = "submit"
    RELEASE = "release"
    END_REQUEST = "end-request"  # ask to cancel the request (`request cancel`)
    CONFIRM = "confirm"
    CANCEL = "cancel"
    GREEN = "green"
    RED = "red"
    SEND = "send"  # submit the form
    EDITOR = "editor"  # edit the fields as JSON instead
    KEEP = "keep"
    RELEASE_ALL = "release-all"


class Screen(Protocol):
    """One mode of the reviewer: a widget, the key hints of its footer, and its keys."""

    @property
    def widget(self) -> urwid.Widget: ...

    @property
    def hints(self) -> str: ...

    def keypress(self, key: str) -> Act: ...
