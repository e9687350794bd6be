"""Program lookup port: is there an executable for a command, without running it?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ProgramIdentity:
    """Where a resolved program leads, for people to read and for one warning.

    ``real_path`` is the file the system runs once every link is followed (a venv's
    ``bin/python`` -> ``/usr/bin/python3.12``); ``own_environment`` is True when running the
    program runs on artifactize's own interpreter with artifactize's own packages (a program
    in the scripts folder of the environment artifactize is installed in, or, outside a
    virtual environment, that interpreter itself)."""

    real_path: str
    own_environment: bool


class ProgramFinder(Protocol):
    windows_paths: bool
    """Whether programs are named by Windows paths here (``C:\\…``, UNC), for the domain's
    rule of which commands are absolute (``domain/project/program_paths.py``)."""

    def find_on_path(self, name: str, path_variable: str, cwd: str) -> str | None:
        """The first executable regular file ``name`` in ``path_variable`` (relative entries
        are taken from ``cwd``; the cwd itself is never searched implicitly)."""
        ...

    def is_executable_file(self, path: str) -> bool:
        """Whether an absolute ``path`` is a regular file the current user may execute."""
        ...

    def identity(self, path: str) -> ProgramIdentity:
        """What an absolute program ``path`` (already resolved) leads to; never runs it."""
        ...
