"""Windows program lookup: ``PATH`` with ``PATHEXT``, never the current folder, never running.

A bare name is looked for in each ``PATH`` entry in order (``;``-separated; a relative entry
is taken from ``cwd``; an empty one, which would mean the current folder, is skipped). In each
folder, a name whose extension is not one of ``PATHEXT`` tries each ``PATHEXT`` extension in
order (so ``npx`` finds ``npx.cmd``); a name that already ends in one is tried as it is.
Without ``PATHEXT`` the order is ``DEFAULT_PATHEXT``. An executable file is a regular file
(not a folder) whose extension is one of ``PATHEXT``.
"""

from __future__ import annotations

import ntpath
import os
import stat

from artifactize.adapters.own_environment import program_identity
from artifactize.ports.programs import ProgramIdentity

__all__ = ["DEFAULT_PATHEXT", "WindowsProgramFinder", "path_extensions"]

DEFAULT_PATHEXT = ".COM;.EXE;.BAT;.CMD"


def path_extensions(pathext: str | None) -> tuple[str, ...]:
    """The ``PATHEXT`` extensions in order, lower-cased; the default when unset or empty."""
    extensions = tuple(
        extension.strip().lower()
        for extension in (pathext or DEFAULT_PATHEXT).split(";")
        if extension.strip().startswith(".")
    )
    return extensions or path_extensions(DEFAULT_PATHEXT)


class WindowsProgramFinder:
    """``ProgramFinder`` for Windows; ``pathext`` is the environment's ``PATHEXT``."""

    windows_paths = True  # C:\tools\x.exe, C:/tools/x.cmd and UNC paths are absolute

    def __init__(self, pathext: str | None = None) -> None:
        self._extensions = path_extensions(pathext)

    def candidates(self, name: str) -> list[str]:
        """The file names tried in each folder for ``name``, in order."""
        if ntpath.splitext(name)[1].lower() in self._extensions:
            return [name]
        return [name + extension for extension in self._extensions]

    def find_on_path(self, name: str, path_variable: str, cwd: str) -> str | None:
        if not name or any(char in name for char in '/\\:\0"*?<>|'):
            return None
        for entry in path_variable.split(";"):
            entry = entry.strip().strip('"')
            if not entry:
                continue  # an empty entry would mean the current folder: never searched
            directory = entry if ntpath.isabs(entry) else ntpath.join(cwd, entry)
            for candidate in self.candidates(name):
                path = ntpath.join(directory, candidate)
                if self.is_executable_file(path):
                    return path
        return None

    def is_executable_file(self, path: str) -> bool:
        if ntpath.splitext(path.rstrip(". "))[1].lower() not in self._extensions:
            return False
        try:
            info = os.stat(path)  # follows links, as CreateProcess will
        except (OSError, ValueError):
            return False
        return stat.S_ISREG(info.st_mode)

    def identity(self, path: str) -> ProgramIdentity:
        return program_identity(path)
