"""SIGHUP, SIGQUIT and SIGTERM to the full-screen commands in a real terminal (tmux):
``monitor`` and ``review`` leave their screen and exit 2, as every command a stop signal
ends does (before, the monitor died of the signal and the reviewer exited 0)."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.integration.test_monitor_tui import DOC, cli, environment
from tests.support.hostile import REPO_ROOT
from tests.support.tmux import EXITED, Terminal, needs_tmux

STOPS = [signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM]
FIND_SECONDS = 30.0


@pytest.fixture
def waiting(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose Human sign-off waits for a person (a Run was verified)."""
    repo = tmp_path / "repo"
    (repo / "doc").mkdir(parents=True)
    (repo / "doc" / "index.artf").write_text(DOC, encoding="utf-8")
    (repo / "doc" / "notes.txt").write_text("The answer is 42.\n", encoding="utf-8")
    state = tmp_path / "state"
    done = subprocess.run(cli(repo, state, "verify", "--all"), env=environment(),
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 4, done.stderr  # INCOMPLETE: the sign-off waits
    return repo, state


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    opened = Terminal("tui-hangup", cwd=REPO_ROOT)
    try:
        yield opened
    finally:
        opened.kill()


def command_process(state: Path, command: str) -> psutil.Process:
    deadline = time.monotonic() + FIND_SECONDS
    while time.monotonic() < deadline:
        for process in psutil.process_iter(["cmdline"]):
            line = process.info["cmdline"] or []
            if command in line and str(state) in line:
                return process
        time.sleep(0.05)
    raise AssertionError(f"no {command} process found")


@needs_tmux
@pytest.mark.parametrize("stop", STOPS, ids=lambda s: s.name)
@pytest.mark.parametrize("command", ["monitor", "review"])
def test_a_hang_up_ends_the_screen_with_exit_2(
    waiting: tuple[Path, Path], terminal: Terminal, command: str, stop: signal.Signals
) -> None:
    repo, state = waiting
    terminal.start(cli(repo, state, command), environment())
    shown = "artifactize monitor · Runs" if command == "monitor" else "doc/signoff"
    terminal.wait_for(shown)
    command_process(state, command).send_signal(stop)
    screen = terminal.wait_for(f"{EXITED} with status")
    assert f"{EXITED} with status 2" in screen
    assert "Traceback" not in screen
