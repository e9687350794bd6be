"""Saved Agent conversations: one append-only JSON-lines file per review session.

A saved conversation is what ``session show`` prints and what ``session send`` continues.
Each event is one JSON object with a ``kind`` (``review``, ``message``, ``attempt``,
``end``, ``send``, ``answer``) and a timestamp ``at``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from artifactize.ports.ids import SessionId

CONVERSATIONS_FOLDER = "agent-sessions"


class ConversationNotFound(LookupError):
    """No saved conversation has that session ID."""


class ConversationDamaged(ConversationNotFound):
    """The saved conversation's file is damaged (empty, not UTF-8, a line that is not a JSON
    object, or no review header first): named with its line, and never appended to."""


class ConversationStore(Protocol):
    def append(self, session_id: SessionId, events: Sequence[Mapping[str, Any]]) -> None:
        """Append events durably (created 0600 in a 0700 folder on first use)."""
        ...

    def read(self, session_id: SessionId) -> list[dict[str, Any]]:
        """Every event, oldest first. Raises ConversationNotFound."""
        ...

    def locked(self, session_id: SessionId) -> AbstractContextManager[None]:
        """Hold the conversation's lock: one follow-up at a time, across processes."""
        ...

    def session_ids(self) -> Iterator[str]: ...
