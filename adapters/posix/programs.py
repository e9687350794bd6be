"""POSIX program lookup: ``PATH`` search and executability checks, never running anything."""

from __future__ import annotations

import functools
import os
import stat

from artifactize.adapters.own_environment import program_identity
from artifactize.ports.programs import ProgramIdentity


@functools.lru_cache(maxsize=64)
def _search_prefixes(path_variable: str, cwd: str) -> tuple[str, ...]:
    """The folders ``PATH`` names, in order, each ending in ``/``: a relative entry below
    ``cwd``; an empty entry (which would mean the cwd) is never searched implicitly. Only the
    strings are kept: every lookup still asks the disk about each candidate."""
    prefixes = []
    for entry in path_variable.split(os.pathsep):
        if not entry:
            continue
        directory = entry if os.path.isabs(entry) else os.path.join(cwd, entry)
        prefixes.append(os.path.join(directory, ""))
    return tuple(prefixes)


class PosixProgramFinder:
    windows_paths = False  # an absolute program path starts with "/"

    def find_on_path(self, name: str, path_variable: str, cwd: str) -> str | None:
        if not name or "/" in name or "\0" in name:
            return None
        for prefix in _search_prefixes(path_variable, cwd):
            candidate = prefix + name  # os.path.join(directory, name): name has no "/"
            # ``access`` answers a missing candidate (most of PATH) with False, where
            # ``stat`` raises: one system call and no exception per folder that lacks it.
            if os.access(candidate, os.X_OK) and self.is_executable_file(candidate):
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
