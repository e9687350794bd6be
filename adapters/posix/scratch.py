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
