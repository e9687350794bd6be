"""Windows detached launcher: start a program for the reviewer and let it go.

How a launch goes (the Windows counterpart of ``adapters/posix/launch.py``):

1. The program is started without a shell (batch files through ``cmd.exe`` under the
   safe-argument rule, as for every command), with the explicit cwd and complete
   environment, ``DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP`` (no console of ours, no
   Ctrl+C from it) and stdin from ``NUL``. It is put in no Job of ours, and it asks to break
   away from a Job artifactize itself may run in (``CREATE_BREAKAWAY_FROM_JOB``, dropped
   when that Job does not allow it), so no kill-on-close ends it with artifactize.
2. Without an observer, stdout and stderr go to ``NUL`` too. With one, they are pipes, read
   to EOF by one daemon thread each and handed to the observer chunk by chunk, so the
   program never blocks on a full pipe.
3. ``launch`` returns right after the spawn; a daemon thread waits for the exit and, with an
   observer, reports it once both pipes are closed.

``open`` (the built-in Human tool) hands its target to the Windows shell: the root names
``explorer`` as the desktop opener (the domain checks it is on ``PATH``, as it checks
``xdg-open``), and a launch of ``explorer.exe`` with exactly one target calls
``ShellExecuteW(open)`` for it instead of going through explorer's own command-line parser.
"""

from __future__ import annotations

import contextlib
import ctypes
import ntpath
import subprocess
from collections.abc import Mapping
from ctypes import wintypes

from artifactize.adapters.launch_output import watch
from artifactize.adapters.windows.command_line import UnsafeArguments
from artifactize.adapters.windows.spawn import CREATE_NEW_PROCESS_GROUP, command_for
from artifactize.ports.launch import LaunchObserver

__all__ = [
    "DESKTOP_OPENER",
    "WindowsDetachedLauncher",
    "shell_open",
]

# The program the root names for ``open`` on Windows: the Windows shell.
DESKTOP_OPENER = "explorer"
DETACHED_PROCESS = 0x0000_0008
CREATE_BREAKAWAY_FROM_JOB = 0x0100_0000
_ERROR_ACCESS_DENIED = 5
_SW_SHOWNORMAL = 1
# ShellExecuteW reports success with a value above this.
_SHELL_EXECUTE_OK_ABOVE = 32


def _exit_status(returncode: int) -> tuple[int | None, int | None]:
    """Windows has no signals: the return code is the exit code."""
    return returncode, None


def shell_open(target: str, cwd: str) -> None:
    """Hand ``target`` (a file, folder or URL) to the Windows shell's ``open`` verb."""
    shell32 = ctypes.CDLL("shell32", use_last_error=True)
    shell_execute = shell32.ShellExecuteW
    shell_execute.restype = ctypes.c_void_p
    shell_execute.argtypes = [
        wintypes.HWND,
        wintypes.LPCWSTR,
        wintypes.LPCWSTR,
        wintypes.LPCWSTR,
        wintypes.LPCWSTR,
        ctypes.c_int,
    ]
    result = shell_execute(None, "open", target, None, cwd, _SW_SHOWNORMAL) or 0
    if result <= _SHELL_EXECUTE_OK_ABOVE:
        raise OSError(f"The Windows shell could not open {target} (code {result})")


def _is_shell_open(argv: tuple[str, ...]) -> bool:
    return len(argv) == 2 and ntpath.basename(argv[0]).lower() == DESKTOP_OPENER + ".exe"


class WindowsDetachedLauncher:
    """``DetachedLauncher`` for Windows; see the module docstring."""

    def launch(
        self,
        argv: tuple[str, ...],
        cwd: str,
        env: Mapping[str, str],
        observer: LaunchObserver | None = None,
    ) -> None:
        if not argv:
            raise OSError("argv must name a program")
        if _is_shell_open(argv):
            shell_open(argv[1], cwd)
            if observer is not None:
                with contextlib.suppress(Exception):
                    observer.exited(0, None)
            return
        try:
            executable, command_line = command_for(argv)
        except UnsafeArguments as error:
            raise OSError(str(error)) from None
        except ValueError as error:  # an argument with a NUL byte
            raise OSError(str(error)) from None
        output = subprocess.PIPE if observer is not None else subprocess.DEVNULL
        flags = DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP

        def spawn(extra_flags: int) -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                command_line,
                executable=executable,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                cwd=cwd,
                env=dict(env),
                creationflags=flags | extra_flags,
                close_fds=True,
            )

        try:
            try:
                popen = spawn(CREATE_BREAKAWAY_FROM_JOB)
            except PermissionError as error:
                if getattr(error, "winerror", None) != _ERROR_ACCESS_DENIED:
                    raise
                popen = spawn(0)  # our Job allows no breakaway: the program stays in it
        except ValueError as error:
            raise OSError(str(error)) from None
        watch(popen, observer, _exit_status)
