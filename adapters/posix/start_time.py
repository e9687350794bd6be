"""A process's start time, exactly as psutil's ``create_time()`` reports it, read cheaply.

Every group we start is identified by its leader's pid and start time (``ProcessIdentity``),
and those identities are compared with ``PsutilProcessTable``'s, which asks psutil. On Linux
psutil computes ``starttime / SC_CLK_TCK + boot_time()``, with ``starttime`` the 22nd field
of ``/proc/PID/stat`` (clock ticks since boot) and ``boot_time()`` the ``btime`` line of
``/proc/stat``. This module does the same arithmetic on the same field, with one read of
``/proc/PID/stat`` and none of psutil's object set-up; ``psutil.boot_time()`` is asked once
per process. Elsewhere it asks psutil.

The boot time asked once: ``btime`` moves only when the system clock is stepped, and an
identity taken before such a step already differs from a fresh psutil value afterwards (the
owner's own identity in the group journal is taken once per process too), so asking again
for every spawn would protect nothing more. Within this process every comparison uses the
same boot time.
"""

from __future__ import annotations

import os
import sys

import psutil

__all__ = ["start_time"]

_LINUX = sys.platform.startswith("linux")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if _LINUX else 1
_STARTTIME_FIELD = 19  # after "pid (comm) ": state is field 0, starttime field 19
_STAT_MAX_BYTES = 4096
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_boot_time: float | None = None


def start_time(pid: int) -> float | None:
    """``psutil.Process(pid).create_time()`` (a zombie included); None when there is no
    such process. Raises ``PermissionError`` where the process table hides it."""
    if not _LINUX:
        try:
            return float(psutil.Process(pid).create_time())
        except psutil.NoSuchProcess:
            return None
        except psutil.AccessDenied as denied:
            raise PermissionError(f"cannot read the start time of process {pid}") from denied
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | _CLOEXEC)
    except (FileNotFoundError, ProcessLookupError):
        return None
    try:
        data = os.read(fd, _STAT_MAX_BYTES)
    except ProcessLookupError:  # it went away between the open and the read
        return None
    finally:
        os.close(fd)
    # The command name is in parentheses and may hold anything, ")" and spaces included.
    fields = data[data.rfind(b")") + 2 :].split()
    return float(fields[_STARTTIME_FIELD]) / _CLOCK_TICKS + _boot()


def _boot() -> float:
    global _boot_time
    if _boot_time is None:
        _boot_time = float(psutil.boot_time())
    return _boot_time
