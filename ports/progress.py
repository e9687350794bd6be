"""Progress of a Run as it happens, for whoever watches it (a terminal, a CI log).

The domain reports; an entry point renders (``entrypoints/cli/progress.py``): live on a
terminal, one line per event elsewhere. Every method is called on the thread that runs the
Run and must return at once; none may raise.
"""

from __future__ import annotations

from typing import Protocol

from artifactize.ports.documents import Request
from artifactize.ports.ids import RequestId


class AgentActivity(Protocol):
    """What one Agent review is doing: its turns with the model and its tool calls."""

    def turn_started(self, turn: int, /) -> None: ...

    def tool_started(self, name: str, count: int, /) -> None:
        """``count``: the tool calls of the review so far, this one included."""
        ...

    def tool_finished(self, name: str, /) -> None: ...


class RunObserver(Protocol):
    def request_changed(self, request: Request, /) -> None:
        """A request as just saved (RUNNING, WAITING_HUMAN, a verdict, …)."""
        ...

    def agent(self, request_id: RequestId, /) -> AgentActivity:
        """Where the Agent review of ``request_id`` reports its turns and tool calls."""
        ...
