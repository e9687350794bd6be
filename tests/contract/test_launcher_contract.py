"""The detached-launcher contract, run by every adapter of ``DetachedLauncher`` (a new
session on POSIX; a detached process outside our Jobs on Windows): ``launch`` returns at
once, the program belongs to the reviewer and outlives its launcher, and with an observer
its output and exit are reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.contract.adapters import base_environment, detached_launcher, wait_gone

PYTHON = sys.executable
LAUNCHER = detached_launcher()


class Recorder:
    """A thread-safe ``LaunchObserver``."""

    def __init__(self) -> None:
        self.chunks: list[tuple[str, bytes]] = []
        self.exits: list[tuple[int | None, int | None]] = []
        self.done = threading.Event()
        self._lock = threading.Lock()

    def output(self, stream: str, data: bytes) -> None:
        with self._lock:
            self.chunks.append((stream, data))

    def exited(self, exit_code: int | None, signal: int | None) -> None:
        with self._lock:
            self.exits.append((exit_code, signal))
        self.done.set()

    def text(self, stream: str) -> bytes:
        with self._lock:
            return b"".join(chunk for name, chunk in self.chunks if name == stream)


def wait_for(path: Path, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} was not written")


def test_output_and_exit_reach_the_observer(tmp_path: Path) -> None:
    recorder = Recorder()
    code = "import sys; print('out'); sys.stderr.write('err'); sys.exit(3)"
    started = time.monotonic()
    LAUNCHER.launch((PYTHON, "-c", code), str(tmp_path), base_environment(), recorder)
    assert time.monotonic() - started < 5  # it does not wait for the program
    assert recorder.done.wait(30)
    assert recorder.exits == [(3, None)]
    assert recorder.text("stdout").strip() == b"out"
    assert recorder.text("stderr") == b"err"


def test_stdin_is_disconnected_and_the_environment_is_the_given_one(tmp_path: Path) -> None:
    recorder = Recorder()
    code = "import json, os, sys; print(json.dumps([sys.stdin.read(), os.environ.get('MARK')]))"
    environment = {**base_environment(), "MARK": "given"}
    LAUNCHER.launch((PYTHON, "-c", code), str(tmp_path), environment, recorder)
    assert recorder.done.wait(30)
    assert json.loads(recorder.text("stdout")) == ["", "given"]


def test_without_an_observer_the_program_still_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('yes')"
    LAUNCHER.launch((PYTHON, "-c", code), str(tmp_path), base_environment())
    assert wait_for(marker) == "yes"


def test_a_missing_program_is_an_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        LAUNCHER.launch((str(tmp_path / "missing"),), str(tmp_path), base_environment())
    with pytest.raises(OSError):
        LAUNCHER.launch((), str(tmp_path), base_environment())


# Picks its launcher itself: importing the test helpers would import pytest (slow under Wine).
LAUNCHING_OWNER = """
import json, sys, time
if sys.platform == "win32":
    from artifactize.adapters.windows.launch import WindowsDetachedLauncher as Launcher
else:
    from artifactize.adapters.posix.launch import PosixDetachedLauncher as Launcher
Launcher().launch(
    (sys.executable, "-c", "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)", sys.argv[1]),
    ".", json.loads(sys.argv[2]),
)
print("launched", flush=True)
time.sleep(60)
"""


def test_the_program_outlives_the_process_that_launched_it(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    repo = str(Path(__file__).resolve().parents[2])
    owner = subprocess.Popen(
        [PYTHON, "-c", LAUNCHING_OWNER, str(marker), json.dumps(base_environment())],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": repo},
        stdout=subprocess.PIPE,
    )
    try:
        assert owner.stdout is not None
        assert owner.stdout.readline().strip() == b"launched"
        program = psutil.Process(int(wait_for(marker)))
    finally:
        owner.kill()
        owner.wait()
    try:
        time.sleep(0.5)
        assert program.is_running()
    finally:
        program.kill()
    assert wait_gone([program]) == []
