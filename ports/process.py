"""Process port: start a program without a shell, in its own process group, with a deadline.

The domain describes *what* to run; the adapter owns spawning, group signalling and reaping,
so every process started is cleaned up on every path (success, error, timeout, cancellation).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

T = TypeVar("T")

# Each of stdout and stderr is kept up to this many bytes; the excess is read and discarded.
CAPTURE_LIMIT_BYTES = 16 * 1024 * 1024

STDOUT = "stdout"
STDERR = "stderr"

OutputObserver = Callable[[str, bytes], None]
"""Called with (``STDOUT`` or ``STDERR``, a chunk) for every chunk read, as it is read and
past the capture limit too, so a screen can show output live. It runs in the reading task:
it must return quickly and must not raise."""


@dataclass(frozen=True)
class ProcessSpec:
    """A program to run: explicit argv, cwd and the complete environment (nothing inherited)."""

    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str]
    timeout_ms: int
    stdin: bytes = b""
    capture_limit_bytes: int = CAPTURE_LIMIT_BYTES
    extra: Mapping[str, str] = field(default_factory=dict)
    observe_output: OutputObserver | None = None


@dataclass(frozen=True)
class ProcessOutcome:
    """How a finished process ended and what it printed, each stream bounded.

    Exactly one of ``exit_code`` and ``signal`` is set for a process that ran (both are
    ``None`` only if its status could not be collected), and neither when ``spawn_error`` is
    set: the program never started (missing program, not executable, missing cwd…).
    ``streams_held_open`` means a descendant that left the process group still held stdout or
    stderr open after the group was killed, so the capture may be incomplete.
    """

    exit_code: int | None = None
    signal: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timed_out: bool = False
    spawn_error: str | None = None
    streams_held_open: bool = False

    @property
    def succeeded(self) -> bool:
        return self.spawn_error is None and not self.timed_out and self.exit_code == 0


class ProcessRunner(Protocol):
    async def run(self, spec: ProcessSpec) -> ProcessOutcome:
        """Run to completion or deadline; on deadline or cancellation the whole group dies.

        A spawn failure is reported as ``ProcessOutcome(spawn_error=…)``, not raised. If the
        caller is cancelled, the group is still killed and reaped before the cancellation
        propagates.
        """
        ...

    async def run_between(
        self, before: Callable[[], ProcessSpec], after: Callable[[ProcessOutcome], T]
    ) -> T:
        """``before()`` (blocking preparation: it may create what the run needs), the run of
        the spec it returns, as ``run`` does it, then ``after(outcome)`` (blocking work on the
        outcome); what ``after`` returns. None of it blocks the caller's event loop, and where
        the platform allows, all three happen in one worker-thread trip (one wake-up of the
        thread and one of the loop, where ``run`` between two trips costs three or more).

        ``before`` or ``after`` raising propagates (a ``before`` that raises starts
        nothing). A cancelled caller: nothing is started if the run has not begun; a running
        group ends as ``run`` ends it; ``after`` is not called; the cancellation propagates
        once ``before`` has returned and the group is reaped, so the caller's cleanup sees
        everything ``before`` created. ``spec.observe_output`` may be called on the worker
        thread."""
        ...
