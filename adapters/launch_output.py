"""What a detached program's output and exit become, the same on every OS: each pipe drained
by a daemon thread into the ``LaunchObserver`` (the Tool log), and its exit reported once
both pipes closed.

Both launchers (``adapters/posix/launch.py``, ``adapters/windows/launch.py``) start the
program their own way and hand it here. An observer that fails is ignored, never the pipe:
the program must not block on a full pipe because the log could not take a line.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Callable
from typing import IO

from artifactize.ports.launch import LaunchObserver
from artifactize.ports.process import STDERR, STDOUT

DRAIN_CHUNK_BYTES = 64 * 1024

# (exit code, signal number) of a return code: the OS decides how a signal shows in it
ExitStatus = Callable[[int], tuple[int | None, int | None]]


def watch(
    popen: subprocess.Popen[bytes], observer: LaunchObserver | None, exit_status: ExitStatus
) -> None:
    """Drain the program's pipes into ``observer`` (when there is one) and wait for it, in
    daemon threads; the last one reports the exit."""
    drains: list[threading.Thread] = []
    if observer is not None:
        assert popen.stdout is not None and popen.stderr is not None
        for stream, name in ((popen.stdout, STDOUT), (popen.stderr, STDERR)):
            drains.append(
                threading.Thread(
                    target=_drain,
                    args=(stream, name, observer),
                    name=f"artifactize-launch-{popen.pid}-{name}",
                    daemon=True,
                )
            )
    for drain in drains:
        drain.start()
    threading.Thread(
        target=_wait,
        args=(popen, observer, drains, exit_status),
        name=f"artifactize-launch-{popen.pid}-waiter",
        daemon=True,
    ).start()


def _drain(stream: IO[bytes], name: str, observer: LaunchObserver) -> None:
    """Read one pipe to EOF, passing on each chunk as it comes."""
    fd = stream.fileno()
    try:
        while True:
            try:
                chunk = os.read(fd, DRAIN_CHUNK_BYTES)
            except InterruptedError:
                continue
            except OSError:
                return
            if not chunk:
                return
            with contextlib.suppress(Exception):
                observer.output(name, chunk)
    finally:
        with contextlib.suppress(OSError):
            stream.close()


def _wait(
    popen: subprocess.Popen[bytes],
    observer: LaunchObserver | None,
    drains: list[threading.Thread],
    exit_status: ExitStatus,
) -> None:
    """Wait for (and so reap) the program; then, once its pipes closed, report its exit."""
    returncode = popen.wait()
    for drain in drains:
        drain.join()
    if observer is None:
        return
    exit_code, signum = exit_status(returncode)
    with contextlib.suppress(Exception):
        observer.exited(exit_code, signum)
