"""The file index (``ports.file_index``) as one SQLite file in the state home.

``<state home>/file-index.sqlite`` holds one row per (file identity, context): the identity
key (``device:inode:size:mtime_ns:ctime_ns``), the context ("" for a digest, the parse
context of a declaration, ``walk|`` and the walk's context for a folder's walk), the physical path the file was read at (only to drop the row
once that file is gone or changed) and the value. A ``meta`` row holds the stamp of the
code that wrote it (``INDEX_FORMAT`` and a hash of the parsing code's sources): an index
written by other code is read as empty and replaced at the next save.

Reading: every row is read once, at the first lookup, whose time is the reference of the
racy rule (git's); the digest rows (most of them: one per file) only at the first digest
lookup or at a save that writes, as a warm ``status`` whose kept walks all hold asks for
none: a file is kept only when both its mtime and its ctime are at least
``RACY_MARGIN_NS`` older than that moment, so a later write, however quick, changes its
identity. Every file this process learned about was read after that moment.

Writing: ``save`` writes the new rows and drops the rows of files that no longer exist (or
changed) in one ``BEGIN IMMEDIATE`` transaction; a busy, full or read-only disk leaves the
index as it was. A file that is not a readable SQLite database of this shape is removed and
rebuilt: the index is an optimisation only, and never the reason a command fails.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from artifactize.kernel.utf8 import is_utf8
from artifactize.ports.file_index import FileIndex
from artifactize.ports.filesystem import FileIdentity

INDEX_FORMAT = 1  # bump when the tables or a row's meaning change
RACY_MARGIN_NS = 2_000_000_000  # covers 2 s timestamp granularity (FAT) and clock ticks
BUSY_TIMEOUT_SECONDS = 0.5  # another process writing it: give up, the index waits
DIGEST_CONTEXT = ""
WALK_CONTEXT = "walk|"  # a folder's walk: its context follows (a declaration's never starts so)
# The page size of an index file this code creates (SQLite's default is 4 KiB). A stored
# declaration is ~3 KB (its JSON and source text): with 4 KiB pages most rows spill onto an
# overflow page, which the write and the read then chain. An index made with other pages is
# read and written as it is (SQLite fixes the size when a database is created).
PAGE_SIZE = 16_384

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS entries (identity TEXT NOT NULL, context TEXT NOT NULL, "
    "path TEXT NOT NULL, value BLOB NOT NULL, PRIMARY KEY (identity, context)) WITHOUT ROWID",
)

_Key = tuple[str, str]  # (identity key, context)
_INSERT_ENTRY = (
    "INSERT OR REPLACE INTO entries (identity, context, path, value) VALUES (?, ?, ?, ?)"
)


def code_stamp(sources: Iterable[str]) -> str:
    """``INDEX_FORMAT`` and a hash of the given source files (the code whose results are
    kept): another version of that code never trusts this index."""
    digest = hashlib.sha256()
    for source in sorted(sources):
        with contextlib.suppress(OSError):
            digest.update(Path(source).read_bytes())
    return f"{INDEX_FORMAT}:{digest.hexdigest()[:32]}"


def is_racy(identity: FileIdentity, reference_ns: int, margin_ns: int = RACY_MARGIN_NS) -> bool:
    """Whether a write after ``reference_ns`` could leave ``identity`` unchanged."""
    return max(identity.mtime_ns, identity.ctime_ns) >= reference_ns - margin_ns


def _identity_key(info: os.stat_result) -> str:
    return f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"


class SqliteFileIndex:
    """One process's view of the index: read whole at the first lookup, written by ``save``."""

    def __init__(
        self,
        path: str,
        stamp: str,
        *,
        margin_ns: int = RACY_MARGIN_NS,
        now_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.path = path
        self.stamp = stamp
        self.margin_ns = margin_ns
        self._now_ns = now_ns
        self._lock = threading.Lock()
        self._rows: dict[_Key, tuple[str, bytes]] | None = None  # key -> (path, value)
        self._digests_read = False  # the digest rows are read at the first digest lookup
        self._reference_ns = 0
        self._used: set[_Key] = set()
        self._new: dict[_Key, tuple[str, bytes]] = {}

    # --- the port -----------------------------------------------------------------------

    def digest(self, identity: FileIdentity) -> bytes | None:
        if not self._digests_read:
            self._read_digests()
        value = self._lookup((identity.key(), DIGEST_CONTEXT))
        return value if value is not None and len(value) == hashlib.sha256().digest_size else None

    def remember_digest(self, identity: FileIdentity, path: str, digest: bytes) -> None:
        self._remember(identity, DIGEST_CONTEXT, path, digest)

    def declaration(self, identity: FileIdentity, context: str) -> str | None:
        value = self._lookup((identity.key(), context))
        if value is None:
            return None
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def remember_declaration(
        self, identity: FileIdentity, context: str, path: str, stored: str
    ) -> None:
        self._remember(identity, context, path, stored.encode("utf-8"))

    def walk(self, identity: FileIdentity, context: str) -> str | None:
        return self.declaration(identity, WALK_CONTEXT + context)

    def remember_walk(
        self,
        identity: FileIdentity,
        context: str,
        path: str,
        stored: str,
        covered: Sequence[FileIdentity],
    ) -> None:
        self._loaded()  # the reference time precedes every read this index is told about
        if any(is_racy(each, self._reference_ns, self.margin_ns) for each in covered):
            return
        self._remember(identity, WALK_CONTEXT + context, path, stored.encode("utf-8"))

    def confirmed(self, identity_keys: Sequence[str]) -> None:
        """Counted as used: ``save`` checks whether the file of every row neither used nor
        new is gone (a stat by path each), and a kept walk's recall has just seen every
        file it covers. After a one-file edit at 10,000 Artifacts that check stat-ed
        100,000 files to drop one row."""
        with self._lock:
            self._used.update((key, DIGEST_CONTEXT) for key in identity_keys)

    def save(self) -> None:
        with self._lock:
            rows, new, used = self._rows, self._new, self._used
            if rows is None or not new:
                return  # nothing learned: the index on disk is still right
            if not self._digests_read:  # every row, to drop those of files now gone
                rows.update(self._read_rows(digests=True))
            self._rows, self._new, self._used = None, {}, set()  # the next lookup reloads
            self._digests_read = False
        try:
            self._write(rows, new, used)
        except (sqlite3.Error, OSError):
            self._discard_if_damaged()

    # --- reading ------------------------------------------------------------------------

    def _lookup(self, key: _Key) -> bytes | None:
        rows = self._loaded()
        found = rows.get(key)
        if found is None:
            return None
        self._used.add(key)
        return found[1]

    def _remember(self, identity: FileIdentity, context: str, path: str, value: bytes) -> None:
        self._loaded()  # the reference time precedes every read this index is told about
        if is_racy(identity, self._reference_ns, self.margin_ns):
            return
        with self._lock:
            self._new[(identity.key(), context)] = (path, value)

    def _loaded(self) -> dict[_Key, tuple[str, bytes]]:
        rows = self._rows
        if rows is not None:
            return rows
        with self._lock:
            if self._rows is None:
                self._reference_ns = self._now_ns()
                self._rows = self._read_rows(digests=False)
            return self._rows

    def _read_digests(self) -> None:
        rows = self._loaded()
        with self._lock:
            if not self._digests_read:
                rows.update(self._read_rows(digests=True))
                self._digests_read = True

    def _read_rows(self, *, digests: bool) -> dict[_Key, tuple[str, bytes]]:
        """The digest rows, or every other row (declarations, walks)."""
        if not Path(self.path).is_file():
            return {}
        try:
            connection = sqlite3.connect(
                _read_only_uri(self.path), uri=True, timeout=BUSY_TIMEOUT_SECONDS
            )
        except sqlite3.Error:
            return {}
        damaged = False
        try:
            stamp = connection.execute("SELECT value FROM meta WHERE key = 'stamp'").fetchone()
            if stamp is None or stamp[0] != self.stamp:
                return {}  # another version's index: replaced at the next save
            return {
                (identity, context): (path, bytes(value))
                for identity, context, path, value in connection.execute(
                    "SELECT identity, context, path, value FROM entries WHERE "
                    + ("context = ?" if digests else "context != ?"),
                    (DIGEST_CONTEXT,),
                )
            }
        except sqlite3.OperationalError:
            return {}  # busy, or tables missing: read as empty, written again at the save
        except (sqlite3.Error, TypeError, ValueError):
            damaged = True  # not this index's shape
        finally:
            connection.close()
        if damaged:
            self._discard_if_damaged()
        return {}

    # --- writing ------------------------------------------------------------------------

    def _write(
        self,
        rows: dict[_Key, tuple[str, bytes]],
        new: dict[_Key, tuple[str, bytes]],
        used: set[_Key],
    ) -> None:
        stale = [key for key in rows if key not in new and key not in used and _gone(key, rows)]
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
        try:
            connection.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # only a new file's
            connection.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA:
                connection.execute(statement)
            stamp = connection.execute("SELECT value FROM meta WHERE key = 'stamp'").fetchone()
            if stamp is None or stamp[0] != self.stamp:
                connection.execute("DELETE FROM entries")
                connection.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('stamp', ?)", (self.stamp,)
                )
            connection.executemany("DELETE FROM entries WHERE identity = ? AND context = ?", stale)
            entries = [(key[0], key[1], path, value) for key, (path, value) in new.items()]
            try:
                connection.executemany(_INSERT_ENTRY, entries)
            except UnicodeEncodeError:
                # a name that is not UTF-8 (the file system's bytes, decoded with lone
                # surrogates) cannot be SQLite text: its rows are not kept, and what it
                # names is read again each time (the index is an optimisation only)
                connection.executemany(_INSERT_ENTRY, [e for e in entries if _is_text(e)])
            connection.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            raise
        finally:
            connection.close()

    def _discard_if_damaged(self) -> None:
        """Remove the file when SQLite cannot read it as this index; keep it when it is
        merely busy (another process is writing it)."""
        try:
            connection = sqlite3.connect(
                _read_only_uri(self.path), uri=True, timeout=BUSY_TIMEOUT_SECONDS
            )
            try:
                connection.execute("SELECT count(*) FROM entries").fetchone()
                return
            finally:
                connection.close()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return
        except sqlite3.Error:
            pass
        for suffix in ("", "-journal", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                Path(self.path + suffix).unlink()


class ReadingOnly:
    """A file index that is read and never written: what a command that writes nothing
    (``config check``, ``config graph``) may take of what ``status`` and ``verify`` kept.
    What it learns is forgotten; ``save`` writes nothing (the index is read through a
    read-only connection, which leaves no journal behind)."""

    def __init__(self, index: FileIndex) -> None:
        self._index = index

    def digest(self, identity: FileIdentity) -> bytes | None:
        return self._index.digest(identity)

    def remember_digest(self, identity: FileIdentity, path: str, digest: bytes) -> None:
        return None

    def declaration(self, identity: FileIdentity, context: str) -> str | None:
        return self._index.declaration(identity, context)

    def remember_declaration(
        self, identity: FileIdentity, context: str, path: str, stored: str
    ) -> None:
        return None

    def walk(self, identity: FileIdentity, context: str) -> str | None:
        return self._index.walk(identity, context)

    def remember_walk(
        self,
        identity: FileIdentity,
        context: str,
        path: str,
        stored: str,
        covered: Sequence[FileIdentity],
    ) -> None:
        return None

    def confirmed(self, identity_keys: Sequence[str]) -> None:
        return None

    def save(self) -> None:
        return None


def _is_text(entry: tuple[str, str, str, bytes]) -> bool:
    """Whether an entry's texts are UTF-8, as SQLite's text must be."""
    return all(is_utf8(text) for text in entry[:3])


def _read_only_uri(path: str) -> str:
    return f"file:{urllib.parse.quote(path)}?mode=ro"


def _gone(key: _Key, rows: dict[_Key, tuple[str, bytes]]) -> bool:
    """Whether the file a row was read at no longer has the row's identity."""
    try:
        info = os.lstat(rows[key][0])
    except OSError:
        return True
    return _identity_key(info) != key[0]
