"""Has a child exited? Asked without reaping it, so its pid (and group id) stays ours."""

from __future__ import annotations

import os

import psutil

HAS_WAITID = hasattr(os, "waitid")


def exited_unreaped(pid: int, process: psutil.Process | None) -> bool:
    """True when the child ``pid`` has exited (it stays a zombie until reaped) or was reaped
    by someone else; ``process`` is its psutil handle, taken while it was ours, needed only
    where there is no ``waitid`` (``HAS_WAITID``)."""
    if not HAS_WAITID:
        assert process is not None
        try:
            return bool(process.status() == psutil.STATUS_ZOMBIE)
        except psutil.NoSuchProcess:
            return True  # reaped by someone else
    try:
        result = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True  # reaped by someone else
    return result is not None


def still_our_child(pid: int) -> bool:
    """True when ``pid`` is certainly still our unreaped child (running or a zombie), so
    the number cannot have been reused; False when it was reaped elsewhere or this cannot
    be asked without reaping (no ``waitid``)."""
    if not HAS_WAITID:
        return False
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True
