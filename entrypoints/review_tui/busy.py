"""The one action that runs at a time, and the spinner line that says so.

While it runs, a line ``⠋ Running show_doc… 1.2s`` turns at ``1 / TICK_SECONDS`` frames a
second. ``cancellation`` is set for an action Esc can cancel (a tool run, a submission);
``refused`` is what the footer says when another key comes in meanwhile.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from artifactize.domain.tools.cancellation import Cancellation

TICK_SECONDS = 0.1  # 10 frames per second
SPINNER_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
BUSY_TEXT = "{frame} {label} {elapsed:.1f}s"
BUSY_HINTS = "Esc cancel · PgUp/PgDn scroll"
BUSY_REFUSED = "Busy: {label} Esc cancels it."
BUSY_WAIT = "Busy: {label} Please wait."
CANCELLING = "Cancelling…"

BusyWork = Callable[[], Awaitable[None]]  # what the one running action awaits


@dataclass
class Busy:
    label: str
    started: float  # monotonic seconds
    cancellation: Cancellation | None = None
    refused: str | None = None

    def cancel(self) -> bool:
        """Cancel the action if it can be; whether it could."""
        if self.cancellation is None:
            return False
        self.cancellation.cancel()
        self.label = CANCELLING
        return True

    def refuse(self) -> None:
        refusal = BUSY_REFUSED if self.cancellation is not None else BUSY_WAIT
        self.refused = refusal.format(label=self.label)

    def line(self, now: float) -> str:
        """The spinner line at monotonic time ``now``."""
        elapsed = max(0.0, now - self.started)
        frame = SPINNER_FRAMES[int(elapsed / TICK_SECONDS) % len(SPINNER_FRAMES)]
        return BUSY_TEXT.format(frame=frame, label=self.label, elapsed=elapsed)

    @property
    def hints(self) -> str:
        return self.refused or BUSY_HINTS
