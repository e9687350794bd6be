"""Program lookup port: is there an executable for a command, without running it?"""

from __future__ import annotations

from typing import Protocol


class ProgramFinder(Protocol):
    windows_paths: bool
    """Whether programs are named by Windows paths here (``C:\\…``, UNC), for the domain's
    rule of which commands are absolute (``domain/program_paths.py``)."""

    def find_on_path(self, name: str, path_variable: str, cwd: str) -> str | None:
        """The first executable regular file ``name`` in ``path_variable`` (relative entries
        are taken from ``cwd``; the cwd itself is never searched implicitly)."""
        ...

    def is_executable_file(self, path: str) -> bool:
        """Whether an absolute ``path`` is a regular file the current user may execute."""
        ...
