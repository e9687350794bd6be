"""Launch port: hand a program over to the reviewer, detached, and never wait for it.

A Human ``launch`` tool (an app, a viewer, the desktop's opener) belongs to the person once
it started: it outlives the call, the review and artifactize itself, and no deadline or
cancellation reaches it. All the port promises is that the spawn succeeded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class LaunchObserver(Protocol):
    """Where a launched program's output goes when a screen shows it (the review Tool log).

    Both methods are called from the launcher's own threads, never from the caller's event
    loop, and must be thread-safe and quick. An exception raised by either is discarded:
    the pipes are drained to the end whatever the observer does.
    """

    def output(self, stream: str, data: bytes) -> None:
        """A chunk read from ``stream`` (``"stdout"`` or ``"stderr"``), as it was read."""
        ...

    def exited(self, exit_code: int | None, signal: int | None) -> None:
        """Once, after both pipes reached EOF and the program exited (exactly one is set)."""
        ...


class DetachedLauncher(Protocol):
    def launch(
        self,
        argv: tuple[str, ...],
        cwd: str,
        env: Mapping[str, str],
        observer: LaunchObserver | None = None,
    ) -> None:
        """Start ``argv`` (no shell) in a new session/process group and return at once.

        ``env`` is the complete environment. stdin is disconnected. Without ``observer``,
        stdout and stderr are disconnected too; with one, they are pipes drained until EOF
        into ``observer``, even after the caller stopped caring, so the program never blocks
        on a full pipe. Raises ``OSError`` when the program cannot be started; a later exit,
        even a failing one, is not reported as an error.
        """
        ...
