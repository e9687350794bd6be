"""Artifactsum: the content fingerprint of an Artifact (reference/declarations.md §3.1).

Which files: each path of ``fingerprint.files`` (owner-relative; ``.`` is the whole owner
folder, the working folder of the Artifact). A named file is always included; a named folder
is walked. The walk skips child-Artifact folders and every ``*.artf``, and leaves out what the
ignore rules exclude: the built-in ignores and the declared ``ignore`` globs (relative to the
owner, always exclude), then every ``.gitignore`` from the workspace root down through the
walked folders (nearest wins, negation allowed; see ``domain.reviews.reuse.ignore_rules`` for why an
entry is matched on its own path). A symlink or special file that is not ignored is an error;
so is a file name that is not UTF-8 (the hash is defined over UTF-8 path bytes).

Hash: files sorted by owner-relative ``/`` path (UTF-8 byte order), SHA-256 over, per file,
``path UTF-8 bytes + 0x00 + raw 32-byte SHA-256(file bytes)``; lowercase hex, prefixed
``artifactsum:``. Only bytes count: modification times and permissions do not.

Manifest (saved with an execution to explain "what changed"): ``{"inputs": <the artifactsum
value>, "files": {path: first 16 hex of the file digest}}``; ``files`` is left out when the
manifest's canonical JSON would exceed 64 KiB.

With a file index (``ports.file_index``), a file whose identity the index knows is not read:
its digest comes from the index (the byte limits count its size all the same). A whole walk
is kept too, as git's untracked cache keeps a folder: keyed by the owner folder's identity and
the walk's context (``_WalkRecord``), it holds the identity of every folder listed and every
file included, and the result. While each of those identities is unchanged, no folder is
listed and no ignore rule matched again: each folder and file is stat-ed, nothing more (a
folder's mtime and ctime change whenever an entry is added, removed or renamed in it). Only a
walk that lists no ``.gitignore`` of its own is kept, and only when every identity is safely
old (the index's racy rule).

Everything is read through pinned directory handles, one component at a time, never
following a link, as ``domain.tools.pinning`` does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field, fields
from functools import cached_property, partial
from typing import Any

from artifactize.domain.declarations.fingerprint import WHOLE_FOLDER
from artifactize.domain.declarations.model import ArtifactsumFingerprint
from artifactize.domain.project.discovery import DECLARATION_SUFFIX, KeptIdentities
from artifactize.domain.project.workspace import Artifact, Workspace
from artifactize.domain.reviews.reuse.canonical_json import canonical_json
from artifactize.domain.reviews.reuse.errors import FingerprintError
from artifactize.domain.reviews.reuse.ignore_rules import BUILTIN_IGNORES, IgnoreRules
from artifactize.ports.file_index import FileIndex
from artifactize.ports.filesystem import (
    DirectoryHandle,
    EntryKind,
    EntryNotFound,
    FileIdentity,
    Filesystem,
    FilesystemError,
    FileTooLarge,
)

ARTIFACTSUM_PREFIX = "artifactsum:"
ARTIFACTSUM_ENTRIES_MAX = 10_000  # files in one fingerprint
ARTIFACTSUM_FILE_BYTES_MAX = 1024 * 1024 * 1024
ARTIFACTSUM_DEPTH_MAX = 256  # nested folders below a walked folder: one open handle each
GITIGNORE_BYTES_MAX = 1024 * 1024
MANIFEST_BYTES_MAX = 64 * 1024
MANIFEST_DIGEST_HEX_CHARS = 16
GITIGNORE_FILE = ".gitignore"
_READ_CHUNK = 1024 * 1024

_SYMLINK_TEXT = "a symbolic link"
_SPECIAL_TEXT = "a special file (a FIFO, socket or device)"


@dataclass(frozen=True)
class ArtifactsumLimits:
    """The limits of one computation; the defaults are the product's (tests lower them)."""

    entries: int = ARTIFACTSUM_ENTRIES_MAX
    file_bytes: int = ARTIFACTSUM_FILE_BYTES_MAX
    depth: int = ARTIFACTSUM_DEPTH_MAX
    gitignore_bytes: int = GITIGNORE_BYTES_MAX
    manifest_bytes: int = MANIFEST_BYTES_MAX


DEFAULT_LIMITS = ArtifactsumLimits()


@dataclass(frozen=True)
class ArtifactsumResult:
    value: str  # "artifactsum:<64 hex>"
    manifest: Mapping[str, Any]  # {"inputs": value, "files"?: {path: 16 hex}}


def artifactsum_value(digests: Mapping[str, bytes]) -> str:
    """The documented layout over ``{owner-relative path: raw SHA-256 of the file}``."""
    combined = hashlib.sha256()
    for path in sorted(digests, key=_utf8):
        combined.update(_utf8(path) + b"\x00" + digests[path])
    return ARTIFACTSUM_PREFIX + combined.hexdigest()


def build_manifest(
    value: str, digests: Mapping[str, bytes], max_bytes: int = MANIFEST_BYTES_MAX
) -> dict[str, Any]:
    """``{"inputs", "files"}``, without ``files`` when the whole would exceed ``max_bytes``."""
    files = {
        path: digests[path].hex()[:MANIFEST_DIGEST_HEX_CHARS] for path in sorted(digests, key=_utf8)
    }
    manifest: dict[str, Any] = {"inputs": value, "files": files}
    # The exact size only when the bound leaves it in doubt (it cannot be over otherwise).
    bound = _manifest_bytes_at_most(value, files)
    if bound > max_bytes and len(canonical_json(manifest)) > max_bytes:
        return {"inputs": value}
    return manifest


def _manifest_bytes_at_most(value: str, files: Mapping[str, str]) -> int:
    """A bound on the canonical JSON's size, without encoding it: each character of a path
    or value is at most 6 bytes (``\\uXXXX``; a UTF-8 character is at most 4), and each
    entry adds its quotes, colon, comma and 16 hex digits. Most Artifacts are far below the
    cap, and the exact size is then never computed."""
    fixed = len('{"files":{},"inputs":""}')
    per_file = len('"":"",') + MANIFEST_DIGEST_HEX_CHARS
    return fixed + 6 * len(value) + sum(6 * len(path) + per_file for path in files)


# The ``.gitignore`` rules of workspace folders (None: none there), read by one computation
# of many Artifacts' keys: the root's and every shared ancestor's are read once, not once
# per Artifact. Only what was read is kept; a ``.gitignore`` that fails is read again.
GitignoreMemo = dict[str, IgnoreRules | None]

SHARED_FOLDERS_MAX = 64  # folders OpenFolders holds at once (descriptors stay few)


class OpenFolders:
    """Workspace folders held open across the walks of one computation of many Artifacts'
    keys: the root and the ancestors they share (at 1,000 Artifacts, ``open_root`` and the
    way down to each owner were a third of the walks' system calls). At most ``limit`` are
    held (first come); past that a walk opens its own as without this. Each is opened the
    way a walk opens it (pinned, one component at a time, never following a link); a
    descriptor of a folder may be used by several threads at once (``DirectoryHandle``
    lists a folder through a fresh descriptor). ``close`` (or the ``with`` block's end)
    closes them all; it follows every walk that used them."""

    def __init__(self, limit: int = SHARED_FOLDERS_MAX) -> None:
        self._handles: dict[str, DirectoryHandle] = {}
        self._limit = limit

    def __enter__(self) -> OpenFolders:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def handle(
        self, folder: str, open_folder: Callable[[], DirectoryHandle]
    ) -> DirectoryHandle | None:
        """The held handle of ``folder`` (opened now if needed), or None when ``limit``
        are held already (the caller opens and closes its own)."""
        found = self._handles.get(folder)
        if found is not None:
            return found
        if len(self._handles) >= self._limit:
            return None
        opened = open_folder()
        kept = self._handles.setdefault(folder, opened)  # two threads may open it at once
        if kept is not opened:
            opened.close()
        return kept

    def close(self) -> None:
        handles = list(self._handles.values())
        self._handles.clear()
        for handle in handles:
            handle.close()


def compute_artifactsum(
    workspace: Workspace,
    artifact_name: str,
    filesystem: Filesystem,
    *,
    limits: ArtifactsumLimits = DEFAULT_LIMITS,
    index: FileIndex | None = None,
    gitignores: GitignoreMemo | None = None,
    folders: OpenFolders | None = None,
) -> ArtifactsumResult:
    """The artifactsum of an Artifact that declares one (or omits ``fingerprint``).

    Raises ``FingerprintError`` for every rule above; ``UnknownName`` for an unknown Artifact.
    ``index``: digests it knows are not computed again (it is not saved here).
    ``gitignores``: the ``.gitignore`` files this computation already read (filled here).
    ``folders``: the root and owner's ancestors held open for this computation's walks.
    """
    artifact = workspace.artifact(artifact_name)
    fingerprint = artifact.declaration.fingerprint
    if not isinstance(fingerprint, ArtifactsumFingerprint):
        raise FingerprintError(
            f"Artifact `{artifact.name}`: it does not declare an artifactsum fingerprint"
        )
    memo: GitignoreMemo = {} if gitignores is None else gitignores
    walk = _Walk(
        workspace,
        artifact,
        fingerprint,
        filesystem,
        limits,
        index,
        _gitignores=memo,
        folders=folders,
    )
    return walk.result()


def _utf8(path: str) -> bytes:
    return path.encode("utf-8")


def _join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def _size_text(count: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


def _printable(path: str) -> str:
    """A path for a message, with undecodable name bytes shown as ``\\xNN``."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


WALK_FORMAT = 1  # bump when a kept walk's stored form or its context changes


_LIMIT_NAMES = tuple(item.name for item in fields(ArtifactsumLimits))
# ``json.dumps(..., ensure_ascii=False)``, made once (``dumps`` with an option builds one per
# call): a kept walk's context is encoded for every Artifact of every computation of keys.
_CONTEXT_ENCODER = json.JSONEncoder(ensure_ascii=False)


def _limits_key(limits: ArtifactsumLimits) -> list[int]:
    """The limits a kept walk was computed under (``dataclasses.astuple`` copies deeply)."""
    return [getattr(limits, name) for name in _LIMIT_NAMES]


class _WalkRecord(KeptIdentities):
    """One Artifact's walk as the file index keeps it (git's untracked cache, per owner).

    Keyed by the owner folder's identity and a digest of the walk's context: the owner's
    path, ``fingerprint.files`` and ``ignore``, its child Artifacts, the limits and the
    rules of every ancestor's ``.gitignore`` (read fresh by each computation). The stored
    form: every folder listed below the owner, each with its identity taken *before* it was
    listed, every file included with the identity its digest belongs to, and the result.
    ``recall`` trusts it only while every one of those identities is unchanged; it stats
    each folder and file by its path from the owner's pinned parent (``identity_keys_below``,
    the last name never followed: a folder on the way replaced, by a link or anything,
    changes the identity of its parent, which is checked too), and opens and lists nothing
    (not even the owner). A walk is not kept when a folder's identity cannot be told, a file
    changed while it was read, or a walked folder holds a ``.gitignore``."""

    def __init__(self, index: FileIndex, identity: FileIdentity, context: str, path: str) -> None:
        super().__init__()
        self.index = index
        self.identity = identity
        self.context = context
        self.path = path
        self.files: list[tuple[str, FileIdentity]] = []

    def file(self, rel: str, identity: FileIdentity) -> None:
        self.files.append((rel, identity))

    def remember(self, result: ArtifactsumResult) -> None:
        if not self.keepable:
            return
        stored = json.dumps(
            {
                "folders": [[rel, identity.key()] for rel, identity in self.folders],
                "files": [[rel, identity.key()] for rel, identity in self.files],
                "value": result.value,
                "manifest": result.manifest,
            },
            ensure_ascii=False,
        )
        try:  # an empty folder's name that is not UTF-8 is walked, but cannot be stored
            stored.encode("utf-8")
            self.path.encode("utf-8")
        except UnicodeEncodeError:
            return
        covered = [identity for _, identity in (*self.folders, *self.files)]
        self.index.remember_walk(self.identity, self.context, self.path, stored, covered)

    def recall(self, parent: DirectoryHandle, owner: str) -> ArtifactsumResult | None:
        """The kept result, when every folder and file it covered is unchanged."""
        stored = self.index.walk(self.identity, self.context)
        if stored is None:
            return None
        try:
            kept = json.loads(stored)
            result = ArtifactsumResult(kept["value"], kept["manifest"])
            folders = [(rel, key) for rel, key in kept["folders"]]
            files = [(rel, key) for rel, key in kept["files"]]
            # TypeError unless every path and identity key is text (a found key is never None)
            "".join([rel + key for rel, key in (*folders, *files)])
        except (ValueError, KeyError, TypeError):
            return None  # another shape: walked as without it
        if not isinstance(result.value, str) or not isinstance(result.manifest, dict):
            return None
        # One no-follow stat each, by path from the owner's parent (``identity_keys_below``:
        # each identity as the text it is stored as, no object built per entry): the owner is
        # the key's identity, and every folder on the way to a file is in ``folders``, each
        # checked before it was listed.
        below = f"{owner}/"
        for rows, kind in ((folders, True), (files, False)):
            found = parent.identity_keys_below([below + rel for rel, _ in rows], folders=kind)
            if found != [key for _, key in rows]:
                return None
        self.index.confirmed([key for _, key in files])  # their digests are still right
        return result


@dataclass(frozen=True)
class _Dir:
    """An open folder on the way down, with its workspace-relative path."""

    path: str
    handle: DirectoryHandle


@dataclass(frozen=True)
class _Layer:
    """The rules of one ``.gitignore``, and the workspace folder they are relative to."""

    base: str
    rules: IgnoreRules

    def decide(self, workspace_path: str, is_dir: bool) -> bool | None:
        relative = workspace_path[len(self.base) + 1 :] if self.base else workspace_path
        return self.rules.decide(relative, is_dir)


@dataclass
class _Walk:
    workspace: Workspace
    artifact: Artifact
    fingerprint: ArtifactsumFingerprint
    filesystem: Filesystem
    limits: ArtifactsumLimits
    index: FileIndex | None = None
    digests: dict[str, bytes] = field(default_factory=dict)
    file_bytes: int = 0
    _gitignores: dict[str, IgnoreRules | None] = field(default_factory=dict)
    folders: OpenFolders | None = None
    record: _WalkRecord | None = None  # set by ``result`` when the walk may be kept

    def __post_init__(self) -> None:
        self.children = frozenset(self.artifact.children)
        self.owner = self.artifact.folder

    @cached_property
    def always(self) -> IgnoreRules:
        """The built-in and declared ignores, built by the first entry a walk lists: a kept
        walk recalled lists none (``from_lines`` refuses nothing: a bad line is skipped)."""
        return IgnoreRules.from_lines([*BUILTIN_IGNORES, *self.fingerprint.ignore])

    def fail(self, message: str) -> FingerprintError:
        return FingerprintError(f"Artifact `{self.artifact.name}`: {message}")

    def result(self) -> ArtifactsumResult:
        with ExitStack() as stack:
            chain = self._open_owner(stack, until_parent=True)
            self.record = self._record(chain)
            if self.record is not None:  # checked from the owner's parent: owner not opened
                recalled = self.record.recall(chain[-1].handle, self.owner.rsplit("/", 1)[-1])
                if recalled is not None:
                    return recalled
            chain = self._open_owner(stack, above=chain)
            for path in self.fingerprint.files:
                self._named(chain, path)
        value = artifactsum_value(self.digests)
        result = ArtifactsumResult(
            value, build_manifest(value, self.digests, self.limits.manifest_bytes)
        )
        if self.record is not None:
            self.record.remember(result)
        return result

    def _record(self, above: list[_Dir]) -> _WalkRecord | None:
        """What keeps this walk in the index: only a whole-folder walk below the root, with
        an index and a folder identity to key it by. ``above``: the root and every folder
        down to the owner's parent."""
        if self.index is None or self.fingerprint.files != (WHOLE_FOLDER,) or not self.owner:
            return None
        name = self.owner.rsplit("/", 1)[-1]
        identity = above[-1].handle.folder_identity(name)
        if identity is None:
            return None
        ancestors = [
            (layer.base, [pattern.text for pattern in layer.rules.patterns])
            for layer in self._layers(above)
        ]
        context = _CONTEXT_ENCODER.encode(
            [
                WALK_FORMAT,
                self.owner,
                list(self.fingerprint.files),
                list(self.fingerprint.ignore),
                sorted(self.children),
                _limits_key(self.limits),
                ancestors,
            ]
        )
        physical = f"{above[-1].handle.physical_path.rstrip('/')}/{name}"
        digest = hashlib.sha256(context.encode("utf-8", "surrogateescape")).hexdigest()
        return _WalkRecord(self.index, identity, digest, physical)

    # --- the way down -------------------------------------------------------------------

    def _open_owner(
        self, stack: ExitStack, *, until_parent: bool = False, above: list[_Dir] | None = None
    ) -> list[_Dir]:
        """The workspace root and every folder down to the owner (``until_parent``: to its
        parent; the root alone for the root), all kept open; ``above``: the start of the
        chain, already open."""
        parts = self.owner.split("/") if self.owner else []
        stop = max(len(parts) - 1, 0) if until_parent else len(parts)
        root = self.workspace.root_path
        try:
            chain = (
                list(above)
                if above is not None
                else [_Dir("", self._folder(stack, "", partial(self.filesystem.open_root, root)))]
            )
            for index in range(len(chain) - 1, stop):
                part = parts[index]
                parent = chain[-1].handle
                folder = "/".join(parts[: index + 1])
                handle = self._folder(stack, folder, partial(parent.open_directory, part))
                chain.append(_Dir(folder, handle))
        except FilesystemError as exc:
            raise self.fail(
                f"cannot open its folder `{_printable(self.owner or '.')}`: {exc.message}"
            ) from None
        return chain

    def _folder(
        self, stack: ExitStack, folder: str, open_folder: Callable[[], DirectoryHandle]
    ) -> DirectoryHandle:
        """A folder on the way down: held by ``folders`` when there is room, else this
        walk's own (closed with ``stack``)."""
        held = self.folders.handle(folder, open_folder) if self.folders is not None else None
        return held if held is not None else stack.enter_context(open_folder())

    def _named(self, chain: list[_Dir], path: str) -> None:
        """One path of ``fingerprint.files``: a file is included, a folder is walked."""
        if path == WHOLE_FOLDER:
            self._walk(chain[-1].handle, "", self._layers(chain[:-1]), 0)
            return
        parts = path.split("/")
        with ExitStack() as stack:
            dirs = list(chain)
            for index, name in enumerate(parts):
                rel = "/".join(parts[: index + 1])
                kind = self._named_kind(dirs[-1].handle, name, path)
                last = index == len(parts) - 1
                if kind is EntryKind.FILE and last:
                    self._hash(dirs[-1].handle, name, rel)
                    return
                if kind is EntryKind.DIRECTORY:
                    handle = stack.enter_context(self._open_directory(dirs[-1].handle, name, rel))
                    dirs.append(_Dir(_join(self.owner, rel), handle))
                    continue
                if kind is EntryKind.FILE:
                    raise self.fail(
                        f"fingerprint path `{path}` does not exist: `{rel}` is a file, not a folder"
                    )
                what = _SYMLINK_TEXT if kind is EntryKind.SYMLINK else _SPECIAL_TEXT
                raise self.fail(
                    f"fingerprint path `{rel}` is {what}; fingerprints include only regular "
                    "files and folders, and links are never followed"
                )
            self._walk(dirs[-1].handle, path, self._layers(dirs[:-1]), 0)

    def _named_kind(self, handle: DirectoryHandle, name: str, path: str) -> EntryKind:
        try:
            return handle.entry(name).kind
        except EntryNotFound:
            raise self.fail(
                f"fingerprint path `{path}` does not exist in "
                f"`{_printable(self.owner or '.')}`; each path of `fingerprint.files` must exist"
            ) from None
        except FilesystemError as exc:
            raise self.fail(f"fingerprint path `{path}` cannot be read: {exc.message}") from None

    def _open_directory(self, handle: DirectoryHandle, name: str, rel: str) -> DirectoryHandle:
        try:
            return handle.open_directory(name)
        except FilesystemError as exc:
            raise self.fail(
                f"fingerprint folder `{_printable(rel)}` cannot be opened: {exc.message}"
            ) from None

    # --- ignore rules -------------------------------------------------------------------

    def _layers(self, dirs: list[_Dir]) -> tuple[_Layer, ...]:
        """The ``.gitignore`` layers of ``dirs`` (root first), read once per folder."""
        layers = (self._layer(d.handle, d.path) for d in dirs)
        return tuple(layer for layer in layers if layer is not None)

    def _layer(self, handle: DirectoryHandle, folder: str, listed: bool = True) -> _Layer | None:
        """``listed`` False: the folder's listing (just read) has no ``.gitignore``, so
        there is nothing to read (the stat that would answer "not found" is skipped)."""
        if folder not in self._gitignores:
            found = self._read_gitignore(handle, folder) if listed else None
            self._gitignores[folder] = found
        rules = self._gitignores[folder]
        return _Layer(folder, rules) if rules is not None else None

    def _read_gitignore(self, handle: DirectoryHandle, folder: str) -> IgnoreRules | None:
        """A regular ``.gitignore`` of at most the limit; a linked one is not followed."""
        where = _printable(_join(folder, GITIGNORE_FILE))
        try:
            if handle.entry(GITIGNORE_FILE).kind is not EntryKind.FILE:
                return None  # never followed; the walk reports the entry unless it is ignored
            data = handle.read_file(GITIGNORE_FILE, self.limits.gitignore_bytes)
        except EntryNotFound:
            return None
        except FileTooLarge:
            limit = _size_text(self.limits.gitignore_bytes)
            raise self.fail(
                f"`{where}` (workspace path) is larger than {limit}; "
                f"a .gitignore read by a fingerprint is capped at {limit}"
            ) from None
        except FilesystemError as exc:
            raise self.fail(f"`{where}` (workspace path) cannot be read: {exc.message}") from None
        return IgnoreRules.parse(data.decode("utf-8", "surrogateescape"))

    def _ignored(self, rel: str, is_dir: bool, layers: tuple[_Layer, ...]) -> bool:
        """Built-in and declared ignores always exclude; then the nearest ``.gitignore`` wins."""
        if self.always.decide(rel, is_dir):
            return True
        workspace_path = _join(self.owner, rel)
        for layer in reversed(layers):
            decision = layer.decide(workspace_path, is_dir)
            if decision is not None:
                return decision
        return False

    # --- the walk -----------------------------------------------------------------------

    def _walk(
        self, handle: DirectoryHandle, rel: str, parent_layers: tuple[_Layer, ...], depth: int
    ) -> None:
        try:
            entries = handle.entries()
        except FilesystemError as exc:
            raise self.fail(
                f"fingerprint folder `{_printable(rel or '.')}` cannot be listed: {exc.message}"
            ) from None
        # The folder's own .gitignore: at the owner's folder itself (rel ""), its path is the
        # owner's, not "owner/" (whose rules then cut one character too many off each path).
        here = _join(self.owner, rel) if rel else self.owner
        listed = any(e.name == GITIGNORE_FILE for e in entries)
        if listed and self.record is not None:
            self.record.keepable = False  # its rules are not part of the walk's context
        own = self._layer(handle, here, listed)
        layers = (*parent_layers, own) if own is not None else parent_layers
        for entry in entries:
            child = _join(rel, entry.name)
            is_dir = entry.kind is EntryKind.DIRECTORY
            if is_dir and child in self.children:
                continue  # a child Artifact is fingerprinted on its own
            if not is_dir and entry.name.endswith(DECLARATION_SUFFIX):
                continue
            if self._ignored(child, is_dir, layers):
                continue
            if is_dir:
                if depth >= self.limits.depth:
                    raise self.fail(
                        f"fingerprint folder `{_printable(child)}` is nested more than "
                        f"{self.limits.depth} folders deep; ignore it or narrow `fingerprint.files`"
                    )
                if self.record is not None:  # before it is listed: a later change shows
                    self.record.folder(child, handle.folder_identity(entry.name))
                with self._open_directory(handle, entry.name, child) as folder:
                    self._walk(folder, child, layers, depth + 1)
            elif entry.kind is EntryKind.FILE:
                self._hash(handle, entry.name, child)
            else:
                what = _SYMLINK_TEXT if entry.kind is EntryKind.SYMLINK else _SPECIAL_TEXT
                raise self.fail(
                    f"fingerprint file `{_printable(child)}` is {what}; ignore it or remove it"
                )

    def _hash(self, handle: DirectoryHandle, name: str, rel: str) -> None:
        if rel in self.digests:
            return  # reached again through another named path
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            raise self.fail(
                f"fingerprint file `{_printable(rel)}` has a name that is not valid UTF-8; "
                "rename it or ignore it"
            ) from None
        if len(self.digests) >= self.limits.entries:
            raise self.fail(
                f"fingerprint covers more than {self.limits.entries:,} files (at `{rel}`); "
                "ignore some or narrow `fingerprint.files`"
            )
        if self.index is not None and self._known(handle, name, rel):
            return
        self.digests[rel] = self._read_digest(handle, name, rel)

    def _read_digest(self, handle: DirectoryHandle, name: str, rel: str) -> bytes:
        """Read and hash one file (the index is told, unless it changed while read)."""
        digest = hashlib.sha256()
        try:
            with handle.open_listed_file(name) as file:  # the walk classified it
                identity = file.identity if self.index is not None else None
                before = self.file_bytes
                self._check_bytes(before + file.size, rel)  # before reading anything
                read = 0
                while chunk := file.read(_READ_CHUNK):
                    read += len(chunk)
                    self._check_bytes(before + read, rel)  # a file may grow while it is read
                    digest.update(chunk)
                self.file_bytes = before + max(file.size, read)
        except FilesystemError as exc:
            raise self.fail(f"fingerprint file `{rel}` cannot be read: {exc.message}") from None
        if self.index is not None and identity is not None and read == identity.size:
            physical = f"{handle.physical_path.rstrip('/')}/{name}"
            self.index.remember_digest(identity, physical, digest.digest())
            if self.record is not None:
                self.record.file(rel, identity)
        elif self.record is not None:
            self.record.keepable = False
        return digest.digest()

    def _known(self, handle: DirectoryHandle, name: str, rel: str) -> bool:
        """Take the digest from the index when it knows this file (not a byte is read)."""
        assert self.index is not None
        identity = handle.identity(name)
        known = self.index.digest(identity) if identity is not None else None
        if identity is None or known is None:
            return False
        self._check_bytes(self.file_bytes + identity.size, rel)
        self.file_bytes += identity.size
        self.digests[rel] = known
        if self.record is not None:
            self.record.file(rel, identity)
        return True

    def _check_bytes(self, total: int, rel: str) -> None:
        if total > self.limits.file_bytes:
            raise self.fail(
                f"fingerprint covers more than {_size_text(self.limits.file_bytes)} of file "
                f"bytes (at `{rel}`); ignore some or narrow `fingerprint.files`"
            )
