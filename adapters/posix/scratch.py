"""Private scratch directories: ``mkdtemp`` (0700) and a no-follow recursive removal."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Sequence

from artifactize.adapters.posix.canonical import canonical_directory_path

PRIVATE_MODE = 0o700


class PosixScratchSpace:
    def create_private_directory(self, parent: str | None, prefix: str) -> str:
        if parent is not None:
            _ensure_parent(parent)
        path = tempfile.mkdtemp(prefix=prefix, dir=parent)
        return canonical_directory_path(path) or os.path.realpath(path)

    def remove_tree(self, path: str) -> None:
        """``shutil.rmtree`` uses descriptor-based, no-follow removal on Linux.

        Most calls leave their directory empty: one ``rmdir`` (which never follows a final
        symlink) removes it; anything else (not empty, a symlink, not a directory) goes to
        ``rmtree``, which decides exactly as before.
        """
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            pass
        if os.path.lexists(path):
            shutil.rmtree(path)

    def emptied(self, path: str, children: Sequence[str]) -> bool:
        try:
            if not _private_directory(path):
                return False
            with os.scandir(path) as entries:
                if sorted(e.path for e in entries) != sorted(children):
                    return False
            for inside in children:
                if not _private_directory(inside):
                    return False
                with os.scandir(inside) as entries:
                    if next(entries, None) is not None:
                        return False
        except OSError:
            return False
        return True


def _ensure_parent(parent: str) -> None:
    """``os.makedirs(parent, 0o700, exist_ok=True)``, asked first with one ``stat`` (each
    call's case: the parent exists), which raises nothing where ``mkdir`` would."""
    if not os.path.isdir(parent):
        os.makedirs(parent, mode=PRIVATE_MODE, exist_ok=True)


def _private_directory(path: str) -> bool:
    """A directory (not a link) of this user's, mode 0700."""
    status = os.lstat(path)
    return (
        stat.S_ISDIR(status.st_mode)
        and stat.S_IMODE(status.st_mode) == PRIVATE_MODE
        and status.st_uid == os.getuid()
    )
