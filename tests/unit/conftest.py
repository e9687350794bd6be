"""A unit test starts no process: every test here runs under an audit hook (``sys.addaudithook``,
the interpreter's public auditing API) that refuses ``subprocess.Popen``, ``os.posix_spawn``,
``os.fork``, ``os.exec*``, ``os.spawn*`` and ``os.system`` while the test runs, and fails the
test even when the code under test swallows the refusal. A test that needs a real process
belongs in ``tests/integration`` (with ``@pytest.mark.process``); the CLI runs in process
through ``tests/support/cli.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty", "os.exec", "os.spawn"}
    | {"os.system", "os.startfile", "pty.spawn"}
)


class ProcessStarted(RuntimeError):
    """Raised into the code that tried to start a process during a unit test."""


class _Guard:
    active = False
    seen: list[str] = []  # noqa: RUF012 (one list, reset by each test)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _Guard.active and event in PROCESS_EVENTS:
        _Guard.seen.append(f"{event}{args[:2]!r}")
        raise ProcessStarted(f"a unit test started a process: {event} {args[:2]!r}")


sys.addaudithook(_audit)  # hooks cannot be removed; it acts only while a unit test runs


@pytest.fixture(autouse=True)
def _no_process_started() -> Iterator[None]:
    _Guard.seen = []
    _Guard.active = True
    try:
        yield
    finally:
        _Guard.active = False
    if _Guard.seen:
        pytest.fail("tests/unit starts no process; started: " + "; ".join(_Guard.seen))
