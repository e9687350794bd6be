"""Identifiers, each its own type, and the ID source port (the randomness behind Run and
conversation IDs).

Every ID is a ``NewType`` over ``str``: at run time the plain string (saved JSON and output
are unchanged), to mypy a distinct type, so a request ID passed where a Run ID is expected
is a type error. Text read from outside (a command-line argument, saved JSON) becomes an ID
where it enters: ``RunId(argument)``.
"""

from __future__ import annotations

from typing import NewType, Protocol

RunId = NewType("RunId", str)  # run-XXXXXX
RequestId = NewType("RequestId", str)  # <run ID>-<ordinal>
ExecutionId = NewType("ExecutionId", str)  # execution-<request ID>, or a mirror's
EvalId = NewType("EvalId", str)  # a qualified eval ID: artifact/eval
ReuseKey = NewType("ReuseKey", str)  # the reuse key of an eval's inputs (64 hex digits)
SessionId = NewType("SessionId", str)  # a saved Agent conversation, or an MCP session


class IdSource(Protocol):
    def choose(self, alphabet: str, count: int) -> str:
        """``count`` characters, each drawn independently and uniformly from ``alphabet``
        by a source that is hard to predict (IDs must neither collide nor be guessed)."""
        ...
