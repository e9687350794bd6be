"""Job objects on Windows (run by ``make test-windows`` under Wine): the child and every
descendant are in the Job from their first instruction, and ending the Job ends them all."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.contract.adapters import wait_gone

pytestmark = pytest.mark.skipif(sys.platform != "win32", reason="Windows Job objects")

# Prints its pid and its grandchild's, then sleeps: a tree of two.
TREE = (
    "import os, subprocess, sys, time; "
    "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
    "print(os.getpid(), g.pid, flush=True); time.sleep(60)"
)


def start_in_job(code: str) -> tuple[object, subprocess.Popen[bytes]]:
    from artifactize.adapters.windows.job import Job
    from artifactize.adapters.windows.spawn import CREATE_SUSPENDED

    job = Job()
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        creationflags=CREATE_SUSPENDED,
    )
    job.admit_suspended(child.pid)
    return job, child


def read_pids(child: subprocess.Popen[bytes]) -> list[int]:
    assert child.stdout is not None
    return [int(pid) for pid in child.stdout.readline().split()]


def test_the_job_lists_the_child_and_its_grandchild_and_terminate_ends_both() -> None:
    from artifactize.adapters.windows.job import TERMINATED_EXIT_CODE, Job

    job, child = start_in_job(TREE)
    assert isinstance(job, Job)
    try:
        pids = read_pids(child)
        assert sorted(job.process_ids()) == sorted(pids)
        assert job.active_processes() == 2
        job.terminate()
        assert job.wait_empty()
        assert child.wait(10) == TERMINATED_EXIT_CODE
        assert wait_gone(pids, command_contains="time.sleep(60)") == []
    finally:
        job.close()


def test_closing_the_last_handle_ends_the_job_kill_on_close() -> None:
    """What happens when artifactize dies: Windows closes its handles and the Job ends."""
    from artifactize.adapters.windows.job import Job

    job, child = start_in_job(TREE)
    assert isinstance(job, Job)
    pids = read_pids(child)
    job.close()
    child.wait(10)
    assert wait_gone(pids, command_contains="time.sleep(60)") == []


def test_a_process_started_suspended_runs_nothing_before_admission(tmp_path) -> None:
    """The child is resumed only by ``admit_suspended``: until then it has not run."""
    from artifactize.adapters.windows.job import Job
    from artifactize.adapters.windows.spawn import CREATE_SUSPENDED

    marker = tmp_path / "ran"
    child = subprocess.Popen(
        [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"],
        creationflags=CREATE_SUSPENDED,
    )
    job = Job()
    try:
        time.sleep(1.0)
        assert not marker.exists()
        job.admit_suspended(child.pid)
        assert child.wait(20) == 0
        assert marker.exists()
    finally:
        job.close()


def test_waiting_for_the_job_is_bounded() -> None:
    """``wait_empty`` gives up after its bound (JOB_TERMINATION_BOUND_SECONDS by default)
    and says so; a terminated Job is empty well within it."""
    from artifactize.adapters.windows.job import JOB_TERMINATION_BOUND_SECONDS, Job

    assert JOB_TERMINATION_BOUND_SECONDS == 30.0
    job, child = start_in_job(TREE)
    assert isinstance(job, Job)
    try:
        read_pids(child)
        started = time.monotonic()
        assert not job.wait_empty(timeout=0.2)
        assert 0.2 <= time.monotonic() - started < 5
        job.terminate()
        assert job.wait_empty(timeout=JOB_TERMINATION_BOUND_SECONDS)
    finally:
        job.close()
        child.wait(10)


def test_a_closed_job_refuses_use() -> None:
    from artifactize.adapters.windows.job import Job

    job = Job()
    job.close()
    job.close()  # twice is harmless
    with pytest.raises(ValueError, match="closed"):
        job.process_ids()
