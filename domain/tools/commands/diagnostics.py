"""Diagnostics of one command-tool call, for the tool's author only (``tools check --execute``).

A reviewer sees "Agent tool execution failed." or "Agent tool returned invalid output." and
never the program's stderr (seed 000). The author, trying the tool, needs more: how it
ended (exit code or signal, a timeout, a program that never started), how long it took,
the end of its stderr and, for a json tool whose stdout is not a valid result, the start of
that stdout and where parsing failed.

Recording is opt-in per call: ``recording()`` sets a context variable that only ``tools
check`` sets; the command runner writes into it when it is set and does nothing otherwise.
So reviews, tool sessions of reviews, the MCP server and stored records never carry it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from artifactize.ports.process import ProcessOutcome

STDERR_TAIL_BYTES = 4 * 1024  # the last bytes of stderr an author sees
STDOUT_HEAD_BYTES = 1024  # the first bytes of an invalid json tool's stdout
ONE_DOCUMENT_HINT = (
    "A json tool prints exactly one JSON object on stdout; write debug output to stderr."
)

_current: contextvars.ContextVar[CallDiagnostics | None] = contextvars.ContextVar(
    "artifactize_tool_diagnostics", default=None
)


@dataclass
class CallDiagnostics:
    """What one call did, filled in by the command runner while ``recording()`` is active."""

    ran: bool = False  # a process was started (or its start was attempted)
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    spawn_error: str | None = None
    stderr: bytes = b""
    stderr_truncated: bool = False  # the capture itself hit its limit
    stdout_head: bytes | None = None  # only for an invalid json result
    stdout_bytes: int | None = None
    invalid_output: str | None = None  # why the json result was refused
    parse_error: dict[str, int | str] | None = None  # where JSON parsing failed
    preparation_error: str | None = None  # why nothing was started
    duration_ms: int | None = None

    def process_ended(self, outcome: ProcessOutcome) -> None:
        self.ran = True
        self.exit_code = outcome.exit_code
        self.signal = outcome.signal
        self.timed_out = outcome.timed_out
        self.spawn_error = outcome.spawn_error
        self.stderr = outcome.stderr
        self.stderr_truncated = outcome.stderr_truncated

    def output_refused(
        self, stdout: bytes, reason: str, where: dict[str, int | str] | None = None
    ) -> None:
        self.stdout_head = stdout[:STDOUT_HEAD_BYTES]
        self.stdout_bytes = len(stdout)
        self.invalid_output = reason
        self.parse_error = where

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"durationMs": self.duration_ms}
        if self.preparation_error is not None:
            data["preparationError"] = self.preparation_error
        if self.ran:
            tail = self.stderr[-STDERR_TAIL_BYTES:]
            data.update(
                {
                    "exitCode": self.exit_code,
                    "signal": self.signal,
                    "timedOut": self.timed_out,
                    "spawnError": self.spawn_error,
                    "stderrTail": tail.decode("utf-8", "replace"),
                    "stderrBytes": len(self.stderr),
                    "stderrTailTruncated": len(tail) < len(self.stderr) or self.stderr_truncated,
                }
            )
        if self.invalid_output is not None:
            assert self.stdout_head is not None
            data["invalidOutput"] = {
                "reason": self.invalid_output,
                "stdoutHead": self.stdout_head.decode("utf-8", "replace"),
                "stdoutBytes": self.stdout_bytes,
                "parseError": self.parse_error,
            }
            if self.parse_error is not None:
                data["invalidOutput"]["hint"] = ONE_DOCUMENT_HINT
        return data


def current() -> CallDiagnostics | None:
    """The call's diagnostics while ``tools check`` records them; None otherwise."""
    return _current.get()


@contextlib.contextmanager
def recording() -> Iterator[CallDiagnostics]:
    """Record the command-tool call made inside the block (``tools check --execute`` only)."""
    diagnostics = CallDiagnostics()
    token = _current.set(diagnostics)
    try:
        yield diagnostics
    finally:
        _current.reset(token)
