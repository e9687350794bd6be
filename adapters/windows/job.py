"""A Windows Job object with kill-on-close: the Windows counterpart of a POSIX process group.

Every process the Windows adapters start is created suspended, assigned to a fresh Job and
only then resumed, so the program cannot start a descendant before it is in the Job, and a
descendant cannot leave it (the Job does not allow breakaway). Killing the Job ends every
process in it, grandchildren that outlived their parent included. Kill-on-close means the
Job also ends when its last handle closes, which happens when the process holding it dies:
if artifactize itself is killed, Windows ends its Jobs.
"""

from __future__ import annotations

import ctypes
import time
from ctypes import wintypes

from artifactize.adapters.windows import win32

__all__ = [
    "JOB_TERMINATION_BOUND_SECONDS",
    "TERMINATED_EXIT_CODE",
    "Job",
    "JobStartError",
]

# After terminating a Job, how long to wait for every process in it to be gone (seed 000:
# "cleanup waits for all Job descendants, with a separate internal 30-second bound").
JOB_TERMINATION_BOUND_SECONDS = 30.0
# The exit code TerminateJobObject gives every process it ends.
TERMINATED_EXIT_CODE = 1
# Waiting for a Job to empty, back off between these two intervals.
_POLL_FIRST_SECONDS = 0.001
_POLL_MAX_SECONDS = 0.05

_JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000
_JOB_OBJECT_BASIC_ACCOUNTING_INFORMATION = 1
_JOB_OBJECT_BASIC_PROCESS_ID_LIST = 3
_JOB_OBJECT_EXTENDED_LIMIT_INFORMATION = 9
_JOB_OBJECT_QUERY = 0x0004
_JOB_OBJECT_TERMINATE = 0x0008
_ERROR_INVALID_NAME = 123
# What the Windows adapters need on a child's process handle.
PROCESS_TERMINATE = 0x0001
PROCESS_SET_QUOTA = 0x0100
PROCESS_SUSPEND_RESUME = 0x0800
PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
SYNCHRONIZE = 0x0010_0000
_CHILD_ACCESS = (
    PROCESS_TERMINATE
    | PROCESS_SET_QUOTA
    | PROCESS_SUSPEND_RESUME
    | PROCESS_QUERY_LIMITED_INFORMATION
    | SYNCHRONIZE
)
# How many process ids one listing asks for; a larger Job is listed again with more room.
_FIRST_LISTING_SIZE = 64


class _BasicLimits(ctypes.Structure):
    _fields_ = (
        ("PerProcessUserTimeLimit", ctypes.c_int64),
        ("PerJobUserTimeLimit", ctypes.c_int64),
        ("LimitFlags", wintypes.DWORD),
        ("MinimumWorkingSetSize", ctypes.c_size_t),
        ("MaximumWorkingSetSize", ctypes.c_size_t),
        ("ActiveProcessLimit", wintypes.DWORD),
        ("Affinity", ctypes.c_size_t),
        ("PriorityClass", wintypes.DWORD),
        ("SchedulingClass", wintypes.DWORD),
    )


class _IoCounters(ctypes.Structure):
    _fields_ = tuple(
        (name, ctypes.c_uint64)
        for name in (
            "ReadOperationCount",
            "WriteOperationCount",
            "OtherOperationCount",
            "ReadTransferCount",
            "WriteTransferCount",
            "OtherTransferCount",
        )
    )


class _ExtendedLimits(ctypes.Structure):
    _fields_ = (
        ("BasicLimitInformation", _BasicLimits),
        ("IoInfo", _IoCounters),
        ("ProcessMemoryLimit", ctypes.c_size_t),
        ("JobMemoryLimit", ctypes.c_size_t),
        ("PeakProcessMemoryUsed", ctypes.c_size_t),
        ("PeakJobMemoryUsed", ctypes.c_size_t),
    )


class _Accounting(ctypes.Structure):
    _fields_ = (
        ("TotalUserTime", ctypes.c_int64),
        ("TotalKernelTime", ctypes.c_int64),
        ("ThisPeriodTotalUserTime", ctypes.c_int64),
        ("ThisPeriodTotalKernelTime", ctypes.c_int64),
        ("TotalPageFaultCount", wintypes.DWORD),
        ("TotalProcesses", wintypes.DWORD),
        ("ActiveProcesses", wintypes.DWORD),
        ("TotalTerminatedProcesses", wintypes.DWORD),
    )


class JobStartError(OSError):
    """The suspended child could not be put in its Job or resumed; it was terminated."""


class Job:
    """One kill-on-close Job object, owned by this process until ``close``."""

    def __init__(self, name: str | None = None, *, existing_handle: int | None = None) -> None:
        api = win32.kernel32()
        self.name = name
        if existing_handle is not None:
            self._handle: int | None = existing_handle
            return
        self._handle = win32.check_handle(api.CreateJobObjectW(None, name), "CreateJobObjectW")
        limits = _ExtendedLimits()
        limits.BasicLimitInformation.LimitFlags = _JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
        try:
            win32.check_bool(
                api.SetInformationJobObject(
                    self._handle,
                    _JOB_OBJECT_EXTENDED_LIMIT_INFORMATION,
                    ctypes.byref(limits),
                    ctypes.sizeof(limits),
                ),
                "SetInformationJobObject",
            )
        except BaseException:
            self.close()
            raise

    @classmethod
    def open_existing(cls, name: str) -> Job | None:
        """The live Job called ``name`` (to end it from another process: recovery), or None
        when no such Job exists any more (it ended with its last handle)."""
        handle = win32.kernel32().OpenJobObjectW(
            _JOB_OBJECT_QUERY | _JOB_OBJECT_TERMINATE, False, name
        )
        if not handle:
            code = win32.last_error()
            if code in (win32.ERROR_FILE_NOT_FOUND, _ERROR_INVALID_NAME):
                return None
            raise win32.windows_error(code, "OpenJobObjectW")
        return cls(name, existing_handle=handle)

    def _job(self) -> int:
        if self._handle is None:
            raise ValueError("the Job object is closed")
        return self._handle

    def admit_suspended(self, pid: int) -> None:
        """Assign the suspended process ``pid`` to this Job, then resume it.

        On failure the still-suspended process is terminated (it never ran a single
        instruction of the program) and ``JobStartError`` is raised."""
        api = win32.kernel32()
        process = win32.check_handle(api.OpenProcess(_CHILD_ACCESS, False, pid), "OpenProcess")
        try:
            try:
                win32.check_bool(
                    api.AssignProcessToJobObject(self._job(), process), "AssignProcessToJobObject"
                )
                win32.check_status(win32.ntdll().NtResumeProcess(process), "NtResumeProcess")
            except OSError as error:
                api.TerminateProcess(process, TERMINATED_EXIT_CODE)
                raise JobStartError(error.errno, str(error)) from error
        finally:
            win32.close_handle(process)

    def active_processes(self) -> int:
        """How many processes of the Job are still running."""
        info = _Accounting()
        win32.check_bool(
            win32.kernel32().QueryInformationJobObject(
                self._job(),
                _JOB_OBJECT_BASIC_ACCOUNTING_INFORMATION,
                ctypes.byref(info),
                ctypes.sizeof(info),
                None,
            ),
            "QueryInformationJobObject",
        )
        return int(info.ActiveProcesses)

    def process_ids(self) -> list[int]:
        """The ids of the processes in the Job now (the child and its descendants)."""
        room = _FIRST_LISTING_SIZE
        while True:

            class _Listing(ctypes.Structure):
                _fields_ = (
                    ("NumberOfAssignedProcesses", wintypes.DWORD),
                    ("NumberOfProcessIdsInList", wintypes.DWORD),
                    ("ProcessIdList", ctypes.c_size_t * room),
                )

            listing = _Listing()
            win32.check_bool(
                win32.kernel32().QueryInformationJobObject(
                    self._job(),
                    _JOB_OBJECT_BASIC_PROCESS_ID_LIST,
                    ctypes.byref(listing),
                    ctypes.sizeof(listing),
                    None,
                ),
                "QueryInformationJobObject",
            )
            if listing.NumberOfAssignedProcesses <= room:
                count = listing.NumberOfProcessIdsInList
                return [int(pid) for pid in listing.ProcessIdList[:count]]
            room = int(listing.NumberOfAssignedProcesses) * 2

    def terminate(self) -> None:
        """End every process in the Job (asynchronously: see ``wait_empty``)."""
        if self._handle is not None:
            win32.kernel32().TerminateJobObject(self._handle, TERMINATED_EXIT_CODE)

    def is_empty(self) -> bool:
        return self._handle is None or self.active_processes() == 0

    def wait_empty(self, timeout: float = JOB_TERMINATION_BOUND_SECONDS) -> bool:
        """Block until no process of the Job runs, for at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        delay = _POLL_FIRST_SECONDS
        while not self.is_empty():
            if time.monotonic() >= deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, _POLL_MAX_SECONDS)
        return True

    def close(self) -> None:
        """Close our handle; with kill-on-close, whatever still runs in the Job ends now."""
        handle, self._handle = self._handle, None
        if handle is not None:
            win32.close_handle(handle)
