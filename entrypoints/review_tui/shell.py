"""What the tool and verdict flows need from the app (``ReviewApp`` implements it).

The flows own their steps (confirm, run, log; choose, fill in, submit) and leave the
screen switching, notices, busy state and the terminal itself to the app, so each piece
stays small and the app stays the one place that knows urwid's main loop.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from artifactize.domain.tools.cancellation import Cancellation
from artifactize.entrypoints.review_tui.acts import Screen
from artifactize.entrypoints.review_tui.busy import Busy, BusyWork
from artifactize.entrypoints.review_tui.request_screen import RequestScreen
from artifactize.entrypoints.review_tui.session import ReviewActions


class Shell(Protocol):
    @property
    def session(self) -> ReviewActions: ...

    @property
    def busy(self) -> Busy | None: ...

    def clock_text(self) -> str:
        """The wall clock as a Tool log header shows it (HH:MM:SS)."""
        ...

    def show(self, screen: Screen) -> None: ...

    def say(self, text: str, *, problem: bool = False) -> None: ...

    def start_busy(
        self, label: str, work: BusyWork, cancellation: Cancellation | None = None
    ) -> None:
        """Run ``work`` as the one running action; Esc cancels ``cancellation``."""
        ...

    def reload_request(self, screen: RequestScreen) -> None: ...

    def submitted(self, message: str, *, problem: bool = False) -> None:
        """The request settled: back to the list if more wait, else end the review."""
        ...

    def paused(self) -> AbstractContextManager[None]:
        """The terminal handed to another program (an editor) for the block."""
        ...
