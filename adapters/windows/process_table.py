"""``ProcessTable`` on Windows: identities by psutil, and Jobs found again by name.

A journaled identity (pid + start time) names a Job too (``spawn.job_name``), so ending "the
group" of a leader means opening the Job of that name and terminating it; a pid reused by
another program names another Job, so it is never touched. Windows ends a kill-on-close Job
when the last handle to it closes, which is when its owner dies: for a crashed owner's
session the Job is normally gone already, and ``kill_group`` only confirms that. A Job that
still exists (its owner alive, or a handle held elsewhere) is terminated and waited for, up
to ``JOB_TERMINATION_BOUND_SECONDS``.
"""

from __future__ import annotations

import os

import psutil

from artifactize.adapters.windows import win32
from artifactize.adapters.windows.job import JOB_TERMINATION_BOUND_SECONDS, Job
from artifactize.adapters.windows.spawn import job_name
from artifactize.ports.sessions import STOP_REQUEST_EVENT, ProcessIdentity

__all__ = ["WindowsProcessTable"]


_PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
_SYNCHRONIZE = 0x0010_0000
_WAIT_OBJECT_0 = 0


def _has_exited(pid: int) -> bool:
    """Whether process ``pid`` has ended (its handle is signalled); False when unsure."""
    api = win32.kernel32()
    handle = api.OpenProcess(_PROCESS_QUERY_LIMITED_INFORMATION | _SYNCHRONIZE, False, pid)
    if not handle:
        return win32.last_error() == win32.ERROR_INVALID_PARAMETER  # no such process
    try:
        return int(api.WaitForSingleObject(handle, 0)) == _WAIT_OBJECT_0
    finally:
        win32.close_handle(handle)


_EVENT_MODIFY_STATE = 0x0002


def _request_stop(identity: ProcessIdentity) -> bool:
    """Set the stop-request event of the process ``identity`` names; False when it has none."""
    api = win32.kernel32()
    name = STOP_REQUEST_EVENT.format(pid=identity.pid, create_time=identity.create_time)
    handle = api.OpenEventW(_EVENT_MODIFY_STATE, False, name)
    if not handle:
        return False
    try:
        return bool(api.SetEvent(handle))
    finally:
        win32.close_handle(handle)


class WindowsProcessTable:
    """``ProcessTable`` for Windows; see the module docstring."""

    def __init__(self, termination_bound_seconds: float = JOB_TERMINATION_BOUND_SECONDS) -> None:
        self._bound = termination_bound_seconds

    def own_identity(self) -> ProcessIdentity:
        return ProcessIdentity(os.getpid(), psutil.Process().create_time())

    def is_alive(self, identity: ProcessIdentity) -> bool:
        """That very process still runs. A process that exited while someone still holds a
        handle to it keeps its pid (like a zombie): it counts as exited."""
        try:
            if psutil.Process(identity.pid).create_time() != identity.create_time:
                return False  # the pid was reused
        except psutil.NoSuchProcess:
            return False
        except psutil.AccessDenied:
            return True  # it exists and we cannot tell more: never treat a live owner as gone
        return not _has_exited(identity.pid)

    def interrupt(self, identity: ProcessIdentity) -> bool:
        """Windows has no SIGTERM for another console's process: this sets the process's
        stop-request event (``STOP_REQUEST_EVENT``, which a command waits on as on Ctrl-C, so
        it cleans up and records its Run CANCELLED). A process without that event is
        terminated (``TerminateProcess``): its Jobs end what it started, and its Run is
        settled as its owner died."""
        if not self.is_alive(identity):
            return False
        if _request_stop(identity):
            return True
        try:
            process = psutil.Process(identity.pid)
            if process.create_time() != identity.create_time:
                return False
            process.terminate()
        except psutil.NoSuchProcess:
            return False
        return True

    def kill_group(self, leader: ProcessIdentity) -> bool:
        job = Job.open_existing(job_name(leader))
        if job is None:
            return True  # the Job ended with its last handle: nothing of it is left
        try:
            job.terminate()
            return job.wait_empty(self._bound)
        finally:
            job.close()
