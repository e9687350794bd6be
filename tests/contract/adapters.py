"""The adapters of this platform, as the composition root would choose them, for the contract
tests: every test in ``tests/contract`` runs against the POSIX adapters on Linux (``make
test``) and against the Windows adapters on Windows CPython under Wine (``make
test-windows``)."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import psutil
import pytest

from artifactize.ports.filesystem import Filesystem
from artifactize.ports.launch import DetachedLauncher
from artifactize.ports.private_files import PrivateFiles
from artifactize.ports.process import ProcessRunner
from artifactize.ports.programs import ProgramFinder
from artifactize.ports.scratch import ScratchSpace
from artifactize.ports.sessions import ProcessLauncher, ProcessTable, SessionStore

WINDOWS = sys.platform == "win32"
# Variables a child needs to start at all on Windows (CPython needs SYSTEMROOT).
_WINDOWS_BASE = ("SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "TEMP", "TMP", "PATHEXT", "COMSPEC")


def running_under_wine() -> bool:
    """Whether this is Windows CPython under Wine (its ntdll exports ``wine_get_version``)."""
    if not WINDOWS:
        return False
    import ctypes

    return hasattr(ctypes.CDLL("ntdll"), "wine_get_version")


# Wine 8 cannot create reparse points: ``mklink /J`` fails and ``CreateSymbolicLinkW``
# reports success but creates nothing. Tests that need one run on Linux and on real Windows.
needs_reparse_points = pytest.mark.skipif(
    running_under_wine(),
    reason="needs real Windows: Wine 8 cannot create symbolic links or junctions",
)


def added_by_wine(name: str) -> bool:
    """Wine's loader adds its own ``WINE…`` variables to every process it starts; on real
    Windows a child's environment is exactly the block it was given."""
    return running_under_wine() and name.upper().startswith("WINE")


def process_runner() -> ProcessRunner:
    if WINDOWS:
        from artifactize.adapters.windows.process import WindowsProcessRunner

        return WindowsProcessRunner()
    from artifactize.adapters.posix.process import PosixProcessRunner

    return PosixProcessRunner()


def private_files() -> PrivateFiles:
    if WINDOWS:
        from artifactize.adapters.windows.private_files import WindowsPrivateFiles

        return WindowsPrivateFiles()
    from artifactize.adapters.posix.private_files import PosixPrivateFiles

    return PosixPrivateFiles()


def filesystem() -> Filesystem:
    if WINDOWS:
        from artifactize.adapters.windows.filesystem import WindowsFilesystem

        return WindowsFilesystem()
    from artifactize.adapters.posix.filesystem import PosixFilesystem

    return PosixFilesystem()


def make_symlink(link: Path, target: Path, *, directory: bool = False) -> None:
    """A symbolic link; skips the test where this system cannot create one (Windows without
    the privilege or developer mode)."""
    try:
        link.symlink_to(target, target_is_directory=directory)
    except OSError as error:
        pytest.skip(f"cannot create a symbolic link here: {error}")


def scratch_space() -> ScratchSpace:
    if WINDOWS:
        from artifactize.adapters.windows.scratch import WindowsScratchSpace

        return WindowsScratchSpace()
    from artifactize.adapters.posix.scratch import PosixScratchSpace

    return PosixScratchSpace()


# Wine keeps no ACLs on files: SetFileSecurityW succeeds and GetFileSecurityW reports a default.
needs_real_acls = pytest.mark.skipif(
    running_under_wine(), reason="needs real Windows: Wine 8 does not store file ACLs"
)


def is_private(path: str) -> bool:
    """Only the current user may access ``path``: no group/other bits on POSIX; on Windows a
    protected DACL with the one owner-only entry."""
    if not WINDOWS:
        return os.stat(path).st_mode & 0o077 == 0
    import ctypes
    from ctypes import wintypes

    from artifactize.adapters.windows import win32
    from artifactize.adapters.windows.private_acl import owner_only_sddl, user_sid

    advapi32 = win32.advapi32()
    buffer = ctypes.create_string_buffer(4096)
    needed = wintypes.DWORD()
    dacl = 0x4
    assert advapi32.GetFileSecurityW(path, dacl, buffer, len(buffer), ctypes.byref(needed))
    text = wintypes.LPWSTR()
    assert advapi32.ConvertSecurityDescriptorToStringSecurityDescriptorW(
        buffer, 1, dacl, ctypes.byref(text), None
    )
    folder = os.path.isdir(path)
    return text.value == owner_only_sddl(user_sid(), folder=folder)


def session_adapters() -> tuple[ProcessLauncher, ProcessTable, SessionStore, int]:
    """(launcher, process table, session store, readiness line limit) of this platform."""
    if WINDOWS:
        from artifactize.adapters.windows.pipes import READY_LINE_LIMIT
        from artifactize.adapters.windows.process_table import WindowsProcessTable
        from artifactize.adapters.windows.session_process import WindowsProcessLauncher
        from artifactize.adapters.windows.session_store import WindowsSessionStore

        return (
            WindowsProcessLauncher(),
            WindowsProcessTable(),
            WindowsSessionStore(),
            READY_LINE_LIMIT,
        )
    from artifactize.adapters.posix.process_table import PsutilProcessTable
    from artifactize.adapters.posix.session_process import READY_LINE_LIMIT as POSIX_LIMIT
    from artifactize.adapters.posix.session_process import PosixProcessLauncher
    from artifactize.adapters.posix.session_store import PosixSessionStore

    return PosixProcessLauncher(), PsutilProcessTable(), PosixSessionStore(), POSIX_LIMIT


def detached_launcher() -> DetachedLauncher:
    if WINDOWS:
        from artifactize.adapters.windows.launch import WindowsDetachedLauncher

        return WindowsDetachedLauncher()
    from artifactize.adapters.posix.launch import PosixDetachedLauncher

    return PosixDetachedLauncher()


def program_finder() -> ProgramFinder:
    if WINDOWS:
        from artifactize.adapters.windows.programs import WindowsProgramFinder

        return WindowsProgramFinder(os.environ.get("PATHEXT"))
    from artifactize.adapters.posix.programs import PosixProgramFinder

    return PosixProgramFinder()


def base_environment() -> dict[str, str]:
    """A small complete environment a Python child starts with on this platform."""
    if WINDOWS:
        upper = {key.upper(): value for key, value in os.environ.items()}
        base = {key: upper[key] for key in _WINDOWS_BASE if key in upper}
        base["PATH"] = upper.get("PATH", "")
        return base
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def make_program(directory: Path, name: str) -> Path:
    """An executable program called ``name`` (a bare name) in ``directory``: a batch file on
    Windows, a shell script on POSIX. Returns its path."""
    if WINDOWS:
        path = directory / f"{name}.cmd"
        path.write_text("@echo off\r\necho %~n0\r\n")
        return path
    path = directory / name
    path.write_text('#!/bin/sh\necho "$0"\n')
    path.chmod(0o755)
    return path


def make_non_executable(directory: Path, name: str) -> Path:
    """A regular file called ``name`` that is not a program on this platform."""
    path = directory / (f"{name}.txt" if WINDOWS else name)
    path.write_text("not a program\n")
    if not WINDOWS:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    return path


def same_path(found: str | None, expected: Path) -> bool:
    return found is not None and os.path.normcase(found) == os.path.normcase(str(expected))


def wait_gone(
    processes: list[int] | list[psutil.Process],
    timeout: float = 5.0,
    command_contains: str = "",
) -> list[int]:
    """The processes still running after up to ``timeout`` seconds (zombies count as gone).

    Windows and Wine hand out freed pids again quickly, so a pid alone may name another
    process by now: give ``psutil.Process`` objects taken while the processes ran (a reused
    pid has another start time), or ``command_contains``, a part of their command line."""
    tracked = [p if isinstance(p, psutil.Process) else _process(p) for p in processes]
    deadline = time.monotonic() + timeout
    while True:
        alive = [
            process.pid
            for process in tracked
            if process is not None and _running(process, command_contains)
        ]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.02)


def track(pids: list[int]) -> list[psutil.Process]:
    """The processes behind ``pids`` now, to check later by identity (see ``wait_gone``)."""
    found = [_process(pid) for pid in pids]
    return [process for process in found if process is not None]


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def _running(process: psutil.Process, command_contains: str = "") -> bool:
    try:
        if not process.is_running() or process.status() == psutil.STATUS_ZOMBIE:
            return False
        return not command_contains or command_contains in " ".join(process.cmdline())
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # cannot tell: never call a process gone on a guess
