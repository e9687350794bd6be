"""Which program strings are absolute paths: the one rule every command (tools, runtime
evals, fingerprint scripts, sessions) follows before deciding how to find its program.

A command is an absolute path, a path relative to its Artifact (it contains ``/``; resolved
inside the review's scope), or a bare name looked up on ``PATH``. What "absolute" means is
the platform's: on POSIX a path starting with ``/``; on Windows also a drive-absolute path
(``C:\\tools\\x.exe``, ``C:/tools/x.cmd``) and a UNC path (``\\\\server\\share\\x.exe``,
``//server/share/x.exe``). ``C:x.exe`` (relative to drive C's current folder) is *not*
absolute: it depends on state a declaration cannot see, so it is never taken as a path.

A fourth form names a program of the project itself, anywhere in the repository and outside
the eval's scope: ``:/`` then a path from the workspace root (git's spelling of "from the
top of the work tree"), such as ``:/.venv/bin/python``, ``:/node_modules/.bin/jest`` or
``:/gradlew``. ``CommandResolver.program`` walks it without following any symbolic link in
its folders; only its last part may be a link (a venv's ``bin/python`` is one), which the
operating system follows when it starts the program (docs/runtime-evals.md).
"""

from __future__ import annotations

import re

_DRIVE_ABSOLUTE = re.compile(r"\A[A-Za-z]:[\\/]")
# Two separators, a server name, a separator, a share name: \\server\share\…
_UNC = re.compile(r"\A[\\/]{2}[^\\/]+[\\/][^\\/]+")


WORKSPACE_PROGRAM_PREFIX = ":/"


def workspace_program(command: str) -> str | None:
    """The path from the workspace root that ``command`` names (``:/bin/x`` -> ``bin/x``),
    or None when it is not of that form."""
    if command.startswith(WORKSPACE_PROGRAM_PREFIX):
        return command[len(WORKSPACE_PROGRAM_PREFIX) :]
    return None


def is_absolute_program(command: str, *, windows: bool) -> bool:
    """Whether ``command`` names its program by an absolute path on this kind of system."""
    if command.startswith("/") and not (windows and command.startswith("//")):
        return True
    if not windows:
        return False
    return bool(_DRIVE_ABSOLUTE.match(command) or _UNC.match(command))
