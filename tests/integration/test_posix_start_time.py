"""A process's start time read without psutil equals psutil's ``create_time()`` exactly:
the group journal's sweep and the process table compare our identities with psutil's."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from artifactize.adapters.posix.start_time import start_time

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process identities")


def test_our_own_start_time_is_psutils() -> None:
    assert start_time(os.getpid()) == psutil.Process().create_time()


def test_a_running_childs_and_then_a_zombies_start_time_is_psutils() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        assert start_time(child.pid) == psutil.Process(child.pid).create_time()
        assert child.stdin is not None
        child.stdin.close()  # it exits; unreaped, it stays a zombie
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        assert psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE
        assert start_time(child.pid) == psutil.Process(child.pid).create_time()
    finally:
        child.kill()
        child.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/PID/comm")
def test_a_command_name_with_parentheses_and_spaces_is_skipped() -> None:
    """The name sits in parentheses in ``/proc/PID/stat`` and may hold ") (" itself."""
    renames_itself = (
        "import sys; open('/proc/self/comm', 'w').write('a) (b c) 9');"
        "print(flush=True); sys.stdin.read()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", renames_itself], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert child.stdout is not None
        child.stdout.readline()
        assert psutil.Process(child.pid).name() == "a) (b c) 9"
        assert start_time(child.pid) == psutil.Process(child.pid).create_time()
    finally:
        child.kill()
        child.wait()


def test_no_such_process_is_none() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: the pid names nothing (until the kernel hands it out again)
    if psutil.pid_exists(child.pid):
        pytest.skip("the pid was reused at once")
    assert start_time(child.pid) is None
