"""POSIX program lookup: ``PATH`` search and executability checks, never running anything."""

from __future__ import annotations

import os
import stat

from artifactize.adapters.own_environment import program_identity
from artifactize.ports.programs import ProgramIdentity


class PosixProgramFinder:
    windows_paths = False  # an absolute program path starts with "/"

    def find_on_path(self, name: str, path_variable: str, cwd: str) -> str | None:
        if not name or "/" in name or "\0" in name:
            return None
        for entry in path_variable.split(os.pathsep):
            if not entry:
                continue  # an empty PATH entry would mean the cwd: never searched implicitly
            directory = entry if os.path.isabs(entry) else os.path.join(cwd, entry)
            candidate = os.path.join(directory, name)
            if self.is_executable_file(candidate):
                return candidate
        return None

    def is_executable_file(self, path: str) -> bool:
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            return False
        return stat.S_ISREG(info.st_mode) and os.access(path, os.X_OK)

    def identity(self, path: str) -> ProgramIdentity:
        return program_identity(path)
