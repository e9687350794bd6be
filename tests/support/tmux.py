"""A real terminal for the TUI tests: one detached tmux session on a private server.

Keys go in with ``send-keys``, the screen comes back with ``capture-pane``; ``wait_for``
polls until the screen shows what a step expects. After the command ends the shell prints
``command exited with status N`` and waits, so the exit status can be read off the screen.
Every server is killed (and its socket removed) by ``kill``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

COLUMNS, ROWS = 120, 40
WAIT_SECONDS = 60  # a deadline, not a pause: a loaded CI machine can take long to start the CLI
POLL_SECONDS = 0.05
EXITED = "command exited"

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


class Terminal:
    """One detached tmux session on a private server, of a fixed size."""

    def __init__(self, name: str, *, cwd: Path) -> None:
        self.socket = f"artifactize-{name}-{uuid.uuid4().hex[:12]}"
        self.session = name
        self.cwd = cwd

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=check
        )

    def start(self, argv: list[str], environment: dict[str, str]) -> None:
        """Run ``argv`` in the session; afterwards the shell says how it exited and waits."""
        command = " ".join(
            [
                "env",
                *(shlex.quote(f"{key}={value}") for key, value in environment.items()),
                shlex.join(argv),
                f'; echo "{EXITED} with status $?"; sleep 60',
            ]
        )
        self._tmux(
            "new-session",
            "-d",
            "-s",
            self.session,
            "-x",
            str(COLUMNS),
            "-y",
            str(ROWS),
            "-c",
            str(self.cwd),
            command,
        )

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", self.session, *keys)

    def text(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.session).stdout

    def wait_for(self, *parts: str, seconds: float = WAIT_SECONDS) -> str:
        """The screen once it shows every part; fails with the screen after ``seconds``."""
        deadline = time.monotonic() + seconds
        while True:
            screen = self.text()
            if all(part in screen for part in parts):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"the screen never showed {parts!r}:\n{screen}")
            time.sleep(POLL_SECONDS)

    def kill(self) -> None:
        """Stop the server (SIGHUP to the command and the shell) and remove its socket."""
        self._tmux("kill-server", check=False)
        folder = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
        (folder / self.socket).unlink(missing_ok=True)
