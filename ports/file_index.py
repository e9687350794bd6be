"""File index port: what is known about unchanged files, so they are not read again.

Like git's index, entries are keyed by a file's identity (``FileIdentity``: device, inode,
size, mtime and ctime in nanoseconds) and hold what reading the file produced: its SHA-256
digest, or for a declaration its text and validated form (encoded by the domain). A file
whose times are not safely older than the moment the index was opened is "racy": a second
write within the same timestamp tick could leave its identity unchanged, so the
implementation never keeps it (it is read again next time, until it is safely old).

A folder's walk (``walk``/``remember_walk``) is kept the way git's untracked cache keeps a
folder: keyed by the identity of the folder it starts at (a folder's mtime and ctime change
whenever an entry is added, removed or renamed in it), and kept only when that identity and
every identity the walk covered (its sub-folders and files) are safely old. A whole
discovery is kept the same way, keyed by the repository root's identity (its context says
so; ``domain.project.discovery``).

It is an optimisation only: a lookup that returns None costs a read, never a wrong result;
a damaged or missing index reads as empty. ``save`` writes what this process learned in one
transaction and drops the entries of files that no longer exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from artifactize.ports.filesystem import FileIdentity


class FileIndex(Protocol):
    def digest(self, identity: FileIdentity) -> bytes | None:
        """The raw SHA-256 of the file with this identity, when known."""
        ...

    def remember_digest(self, identity: FileIdentity, path: str, digest: bytes) -> None:
        """Keep the digest of the file read at ``path`` (physical, used only to drop the
        entry once the file is gone); a racy file is not kept."""
        ...

    def declaration(self, identity: FileIdentity, context: str) -> str | None:
        """The stored form of a declaration file read in ``context`` (how it was parsed),
        when known: opaque text the domain wrote with ``remember_declaration``."""
        ...

    def remember_declaration(
        self, identity: FileIdentity, context: str, path: str, stored: str
    ) -> None:
        """Keep a declaration's stored form; a racy file is not kept."""
        ...

    def walk(self, identity: FileIdentity, context: str) -> str | None:
        """The stored form of a walk that started at the folder with this identity, made in
        ``context`` (what else its result depends on), when known: opaque text the domain
        wrote with ``remember_walk``."""
        ...

    def remember_walk(
        self,
        identity: FileIdentity,
        context: str,
        path: str,
        stored: str,
        covered: Sequence[FileIdentity],
    ) -> None:
        """Keep a walk's stored form; not kept when the folder or any identity in
        ``covered`` is racy."""
        ...

    def confirmed(self, identity_keys: Sequence[str]) -> None:
        """These files were just found with these identities (``FileIdentity.key()``: a
        kept walk recalled), so their digests are still right: saving need not stat them
        again to tell whether their files are gone."""
        ...

    def save(self) -> None:
        """Write what was learned since the last save, in one transaction; never raises
        (a failed write leaves the index as it was, or absent)."""
        ...
