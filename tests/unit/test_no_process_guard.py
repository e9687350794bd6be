"""The guard in tests/unit/conftest.py refuses a process started during a unit test."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.unit import conftest


@pytest.mark.parametrize(
    "start",
    [
        lambda: subprocess.run([sys.executable, "-c", "pass"], check=False),
        lambda: os.posix_spawn(sys.executable, [sys.executable, "-c", "pass"], os.environ),
        lambda: os.system("true"),
    ],
    ids=["subprocess", "posix_spawn", "system"],
)
def test_starting_a_process_is_refused_and_recorded(start: object) -> None:
    assert callable(start)
    with pytest.raises(conftest.ProcessStarted, match="a unit test started a process"):
        start()
    assert len(conftest._Guard.seen) == 1
    conftest._Guard.seen.clear()  # this test wanted it; any other test fails at teardown
