"""Small private files in the state directory: the remote store's configuration and token,
saved Agent conversations and their locks.

A file is named by a folder the user chose (the state directory: it may itself be a link,
which is followed) and the entry names below it (never followed: a symbolic link, junction
or other reparse point there is refused, as is anything that is not a regular file or
folder). Folders created below the base are private to the user (0700 on POSIX, an
owner-only DACL on Windows) and so are the files (0600). Each platform has its adapter
(``adapters/posix/private_files.py``, ``adapters/windows/private_files.py``); the composition
root chooses one.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol


class PrivateFileError(Exception):
    """A private file or folder could not be used; the message names the path and the rule."""


class PrivateFiles(Protocol):
    def read(
        self, base: str, names: Sequence[str], limit: int | None, *, private: bool
    ) -> bytes | None:
        """The regular file ``base/names…`` (at most ``limit`` bytes, or all of it when
        ``limit`` is None); None when it or a folder on the way is missing. ``private``: the
        folders below ``base`` and the file must be the user's alone (and the file have a
        single link). Raises ``PrivateFileError``."""
        ...

    def write(self, base: str, names: Sequence[str], data: bytes) -> None:
        """Replace the file with a private one holding ``data``: a fresh temporary file in
        the same folder, flushed to disk, renamed over the target (a reader sees the old or
        the new file, never half of one). Missing folders are created private."""
        ...

    def append(self, base: str, names: Sequence[str], data: bytes) -> None:
        """Append ``data`` in one write, flushed to disk; the file is created private."""
        ...

    def remove(self, base: str, names: Sequence[str]) -> bool:
        """Remove the file (a link itself, never its target); False when it was missing."""
        ...

    def locked(self, base: str, names: Sequence[str]) -> AbstractContextManager[None]:
        """Hold an exclusive lock on the (private, created on demand) file, across
        processes, until the context ends; waits while another process holds it."""
        ...
