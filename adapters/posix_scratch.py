"""Private scratch directories: ``mkdtemp`` (0700) and a no-follow recursive removal."""

from __future__ import annotations

import os
import shutil
import tempfile


class PosixScratchSpace:
    def create_private_directory(self, parent: str | None, prefix: str) -> str:
        if parent is not None:
            os.makedirs(parent, mode=0o700, exist_ok=True)
        return os.path.realpath(tempfile.mkdtemp(prefix=prefix, dir=parent))

    def remove_tree(self, path: str) -> None:
        """``shutil.rmtree`` uses descriptor-based, no-follow removal on Linux."""
        if os.path.lexists(path):
            shutil.rmtree(path)
