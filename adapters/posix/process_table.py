"""``ProcessTable`` with psutil: process identity, liveness and identity-checked group kills.

An identity is a pid plus the start time psutil reports for it (``create_time()``, seconds
since the epoch: boot time + start ticks). Identities are compared exactly, as psutil
returns them; the value is stable for the life of a process and round-trips through JSON.

Group kills never signal a reused process id. The kernel does not hand out a pid while it is
still in use as a process-group id, so:

* a live (or zombie) process with the leader's pid *and* start time pins the group id:
  ``os.killpg`` is safe;
* a process with the leader's pid but another start time means our group emptied and the
  number was reused: nothing is signalled and the group counts as gone;
* no process with the leader's pid: the leader exited and was reaped, but members may
  remain, and while any does, the group id is still theirs. They are found by scanning for
  that process-group id and killed one by one (psutil checks each member's own identity).

A killed process stays a zombie until its parent (often init) reaps it; zombies do not count
as left over.
"""

from __future__ import annotations

import contextlib
import enum
import os
import signal
import time

import psutil

from artifactize.ports.sessions import ProcessIdentity

__all__ = ["KILL_CONFIRM_SECONDS", "PsutilProcessTable", "live_group_members"]

# How long ``kill_group`` waits for the members of a group to die after SIGKILL.
KILL_CONFIRM_SECONDS = 1.0
_POLL_FIRST_SECONDS = 0.001
_POLL_MAX_SECONDS = 0.05


def live_group_members(pgid: int) -> list[psutil.Process]:
    """Processes whose process-group id is ``pgid`` and that are not zombies."""
    members: list[psutil.Process] = []
    for pid in psutil.pids():
        try:
            if os.getpgid(pid) != pgid:
                continue
            process = psutil.Process(pid)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue  # gone meanwhile
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                members.append(process)
        except psutil.NoSuchProcess:
            continue
        except psutil.AccessDenied:
            members.append(process)  # cannot tell: never report a group gone on a guess
    return members


class _LeaderState(enum.Enum):
    """What the leader's pid names now."""

    MATCHES = "matches"  # our leader (running or a zombie): the group id is pinned
    REUSED = "reused"  # another process: our group emptied and the number was reused
    GONE = "gone"  # no such process: members may remain, and they pin the group id
    UNKNOWN = "unknown"  # its start time is unreadable: nothing may be signalled


def _leader_state(leader: ProcessIdentity) -> _LeaderState:
    try:
        create_time = psutil.Process(leader.pid).create_time()
    except psutil.NoSuchProcess:
        return _LeaderState.GONE
    except psutil.AccessDenied:
        return _LeaderState.UNKNOWN
    if create_time == leader.create_time:
        return _LeaderState.MATCHES
    return _LeaderState.REUSED


class PsutilProcessTable:
    """``ProcessTable`` for POSIX systems, backed by psutil."""

    def own_identity(self) -> ProcessIdentity:
        return ProcessIdentity(os.getpid(), psutil.Process().create_time())

    def is_alive(self, identity: ProcessIdentity) -> bool:
        try:
            process = psutil.Process(identity.pid)
            if process.create_time() != identity.create_time:
                return False  # the pid was reused
            return process.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:  # includes ZombieProcess
            return False
        except psutil.AccessDenied:
            return True  # it exists and we cannot tell more: never treat a live owner as gone

    def interrupt(self, identity: ProcessIdentity) -> bool:
        """SIGTERM to that very process, never to a reused pid (psutil checks the start
        time before it signals)."""
        if not self.is_alive(identity):
            return False
        try:
            process = psutil.Process(identity.pid)
            if process.create_time() != identity.create_time:
                return False
            process.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            return False
        return True

    def kill_group(self, leader: ProcessIdentity) -> bool:
        deadline = time.monotonic() + KILL_CONFIRM_SECONDS
        delay = _POLL_FIRST_SECONDS
        while True:
            state = _leader_state(leader)
            if state == _LeaderState.REUSED:
                return True  # the group id was free to reuse: none of our group is left
            if state == _LeaderState.UNKNOWN:
                return False
            members = live_group_members(leader.pid)
            if not members:
                return True
            if state == _LeaderState.MATCHES:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(leader.pid, signal.SIGKILL)
            else:
                for member in members:
                    _kill_member(member, leader.pid)
            if time.monotonic() >= deadline:
                return not live_group_members(leader.pid)
            time.sleep(delay)
            delay = min(delay * 2, _POLL_MAX_SECONDS)


def _kill_member(member: psutil.Process, pgid: int) -> None:
    """SIGKILL one member, re-checking its group id; psutil refuses a reused pid."""
    with contextlib.suppress(psutil.Error, ProcessLookupError, PermissionError):
        if os.getpgid(member.pid) == pgid:
            member.kill()
