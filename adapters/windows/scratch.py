"""Private scratch folders on Windows: ``mkdtemp`` with an owner-only DACL, and a removal
that never follows a reparse point out of the folder."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from artifactize.adapters.windows.private_acl import restrict_to_owner

__all__ = ["WindowsScratchSpace"]


def _clear_read_only_and_retry(
    function: Callable[..., Any], path: str, error: BaseException
) -> None:
    """Windows refuses to delete a read-only file; POSIX would not care. A vanished entry is
    fine (removed concurrently); anything else is raised."""
    if isinstance(error, FileNotFoundError):
        return
    if isinstance(error, PermissionError):
        os.chmod(path, stat.S_IWRITE)
        function(path)
        return
    raise error


class WindowsScratchSpace:
    """``ScratchSpace`` on Windows (the POSIX 0700 is an owner-only protected DACL here)."""

    def create_private_directory(self, parent: str | None, prefix: str) -> str:
        if parent is not None and not os.path.isdir(parent):
            os.makedirs(parent, exist_ok=True)
            restrict_to_owner(parent, folder=True)
        path = tempfile.mkdtemp(prefix=prefix, dir=parent)
        try:
            restrict_to_owner(path, folder=True)
        except BaseException:
            os.rmdir(path)
            raise
        return os.path.realpath(path)

    def remove_tree(self, path: str) -> None:
        """``shutil.rmtree`` treats symbolic links and junctions as entries to unlink, never
        as folders to enter."""
        if not os.path.lexists(path):
            return
        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=_clear_read_only_and_retry)
        else:

            def on_error(function: Callable[..., Any], failed: str, info: Any) -> None:
                _clear_read_only_and_retry(function, failed, info[1])

            shutil.rmtree(path, onerror=on_error)

    def emptied(self, path: str, children: Sequence[str]) -> bool:
        """Always False: the owner-only DACL is not rechecked here, so a folder is never
        handed to a second command (each gets a fresh one, as before)."""
        return False
