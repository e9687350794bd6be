"""Process port: start a program without a shell, in its own process group, with a deadline.

The domain describes *what* to run; the adapter owns spawning, group signalling and reaping,
so every process started is cleaned up on every path (success, error, timeout, cancellation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class ProcessSpec:
    """A program to run: explicit argv, cwd and the complete environment (nothing inherited)."""

    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str]
    timeout_ms: int
    stdin: bytes = b""
    capture_limit_bytes: int = 16 * 1024 * 1024
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProcessOutcome:
    """How a finished process ended and what it printed, each stream bounded."""

    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    spawn_error: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.spawn_error is None and not self.timed_out and self.exit_code == 0


class ProcessRunner(Protocol):
    async def run(self, spec: ProcessSpec) -> ProcessOutcome:
        """Run to completion or deadline; on deadline or cancellation the whole group dies."""
        ...
