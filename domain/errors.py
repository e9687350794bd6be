"""The errors a command may end with that are not the declarations' own (``ConfigError``):
defined apart from the modules that raise them, so the CLI's error mapping tells them apart
without importing the workspace or ``tools check`` (start-up, issue 25 item 6)."""

from __future__ import annotations


class UnknownName(LookupError):
    """An Artifact or eval that the workspace does not declare."""


class InvocationError(Exception):
    """A ``tools check`` command line that cannot be run (exit 2)."""
