"""The one error an entrypoint raises for a command that cannot go on (exit 2)."""

from __future__ import annotations


class CommandError(Exception):
    """An operational error of a command (exit 2), with a message for the user."""
